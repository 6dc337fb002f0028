#!/usr/bin/env bash
# tools/bench/run_s6e.sh — session 6, fifth GPU call (4 x H200): AG+GEMM with tile-row groups of at most one
# shard (kernels/fused/ag_gemm.cu, group_m = min(16, cps)) after the AG tests (gpu-check.sh's ctest), the
# default shapes with PyTorch async-TP merged (JSON for docs/perf), and a trace of one call at M = 2048:
#   MK_CALL_LIMIT=200 CTEST_ARGS="-R test_fused_ag|test_fused$" CTEST_WALL=60 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s6e.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|\{)|fused on|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step ag_gemm 40 mk-launch -n 4 -- mk-bench ag_gemm --json "$RES/ag_gemm_h200x4.json"
step torch_ag_gemm 40 mk-launch -n 4 -- python3 "$REPO/tools/bench/torch_async_tp.py" --op ag_gemm --merge "$RES/ag_gemm_h200x4.json"
mk-bench plot "$RES/ag_gemm_h200x4.json" -o "$RES/ag_gemm_h200x4.png" > /dev/null 2>&1 || echo "plot failed"
step trace_ag_gemm 40 env MK_TRACE="$RES/trace_ag_gemm_2048" mk-launch -n 4 -- mk-bench ag_gemm --m 2048 --warmup 20 --iters 5 --path fused
python3 "$REPO/tools/bench/trace_png.py" "$RES/trace_ag_gemm_2048.rank0.json" -o "$RES/trace_ag_gemm_2048_rank0.png" > /dev/null 2>&1 \
  || echo "render failed"
echo "end at $(( $(date +%s) - T0 )) s"
