#!/usr/bin/env bash
# tools/bench/run_s7a.sh — session 7, first GPU call (4 x H200): GEMM+AR two-shot on SM roles
# (MK_FUSED_AR_TWO_SHOT=1) against the default (copy-engine two-shot at these sizes) at the issue's
# M = 1024 / 4096 (N = 8192, K = 7168) with 16 / 24 / 32 / 48 comm CTAs, and at the Mixtral layer's
# O projection (M = 8192, N = 4096, K = 1024); then the small-M breakdown in its per-rank form:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R test_fused_ar_two|test_fused_ar_4|test_fused_rs_4" CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s7a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_)|fused on|fused two|FAIL|rror|^\[0\]   (phase|rank|M=)'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step ar_def 20 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 4096
for c in 16 24 32 48; do
  step ar_two$c 20 env MK_FUSED_AR_TWO_SHOT=1 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 4096 --ctas $c
done
step ar_o_def 20 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 4096 --k 1024
step ar_o_two 20 env MK_FUSED_AR_TWO_SHOT=1 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 4096 --k 1024
step ar_o_two32 20 env MK_FUSED_AR_TWO_SHOT=1 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 4096 --k 1024 --ctas 32
TAIL=40 step ar_small 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --breakdown
echo "end at $(( $(date +%s) - T0 )) s"
