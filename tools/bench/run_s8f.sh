#!/usr/bin/env bash
# tools/bench/run_s8f.sh — session 8, review call (4 x H200): the reducers' task hand-over as one helper
# (hand_over) and the 2-CTA cluster mode reverted; the RS / AR shapes the tail changed, at the defaults:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_gemm$|test_fused_(rs|ar)" CTEST_TIMEOUT=120 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s8f.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step rs 25 mk-launch -n 4 -- mk-bench gemm_rs --m 2048
step ar 25 mk-launch -n 4 -- mk-bench gemm_ar --m 1024
echo "end at $(( $(date +%s) - T0 )) s"
