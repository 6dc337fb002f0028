#!/usr/bin/env bash
# tools/bench/run_s8e.sh — session 8, last GPU call (4 x H200): the issue's GEMM+RS and GEMM+AR shapes at the
# session's defaults (GEMM CTAs join the reducers, AR two-shot by shape, role CTAs by wave count), JSON for
# docs/perf/, PyTorch async-TP merged into GEMM+RS, plots:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^none$" CTEST_WALL=20 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s8e.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
for op in gemm_rs gemm_ar; do step $op 40 mk-launch -n 4 -- mk-bench $op --json "$RES/${op}_h200x4.json"; done
step torch_gemm_rs 60 mk-launch -n 4 -- python3 "$REPO/tools/bench/torch_async_tp.py" --op gemm_rs --merge "$RES/gemm_rs_h200x4.json"
for f in gemm_rs gemm_ar; do mk-bench plot "$RES/${f}_h200x4.json" -o "$RES/${f}_h200x4.png" > /dev/null 2>&1 || echo "plot $f failed"; done
echo "end at $(( $(date +%s) - T0 )) s"
