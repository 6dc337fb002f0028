#!/usr/bin/env bash
# tools/bench/run_s10d.sh — session 10, fourth GPU call (4 x H200): the GPU serving tests the third call's ctest wall
# left out, then GEMM+AR at M = 1024 / 2048 (N = 8192, K = 7168) on copy engines with one piece per owner against the
# default (SM two-shot at 1024), and the two-shot's role split searched, all with --interleave:
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R test_serve_gpu_(4x2_unfused|4x1_fused|4x2_fused)" CTEST_TIMEOUT=150 \
#     CTEST_WALL=330 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s10d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_|  autotune)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step ar_il 25 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 2048 --interleave
step ar_ce_il 25 env MK_FUSED_AR_TWO_SHOT=0 MK_FUSED_AR_COPY=1 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 2048 --interleave
step ar_auto 40 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --autotune --interleave
echo "end at $(( $(date +%s) - T0 )) s"
