#!/usr/bin/env bash
# tools/bench/run_s6c.sh — session 6, third GPU call (4 x H200), at the session's final code: the model and
# serving tests not run since session 4 / 5 (gpu-check.sh's ctest), then the default-shape benches whose
# JSON goes under docs/perf/ for issues #6, #7, #9 (the fused ops with PyTorch async-TP merged, the MoE
# block, the layer):
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R test_model_gpu|test_serve_gpu_4x2|test_serve_gpu_4x1_unfused" \
#     CTEST_TIMEOUT=150 CTEST_WALL=400 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s6c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_|moe|layer|\{|  T=|    phases)|fused on|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
. "$REPO/tools/bench/bench_defaults.sh"
echo "end at $(( $(date +%s) - T0 )) s"
