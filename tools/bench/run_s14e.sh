#!/usr/bin/env bash
# tools/bench/run_s14e.sh — session 14, last GPU call, on 2 x H200, final code: the tests a 2-GPU machine runs for the
# GEMM core, the fused ops, the MoE block, the layers and the model (under CTEST_ARGS), then the three fused ops'
# default shapes at 2 ranks, fused / unfused / bound in turns (JSON in raw/run-<commit>/):
#   MK_CALL_LIMIT=520 CTEST_ARGS="-R test_gemm|test_fused|test_moe|test_layers|test_model_gpu_(fused|unfused)_2$" \
#     CTEST_TIMEOUT=150 CTEST_WALL=380 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s14e.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
for op in ag_gemm gemm_rs gemm_ar; do
  TAIL=12 step ${op}_il 60 mk-launch -n 2 -- mk-bench $op --interleave --json "$RES/${op}_h200x2_interleave.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
