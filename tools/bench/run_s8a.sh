#!/usr/bin/env bash
# tools/bench/run_s8a.sh — session 8, first GPU call (4 x H200): the GEMM CTAs joining the reducers after
# their last tile (MK_FUSED_TAIL=1, new default) against the role CTAs alone (=0) and the copy-engine
# defaults, GEMM+RS M = 2048 / 8192 / 16384 (N = 8192, K = 7168) and GEMM+AR M = 1024 / 4096 (two-shot on SM
# roles), comm CTAs swept; tests: test_fused (b327733's review), test_gemm, the RS/AR SM-role tests:
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_gemm$|test_fused$|test_fused_(rs|ar)(_tail|_two|_tma)?_[24]$|test_fused_(rs|ar)_2nodes" \
#     CTEST_WALL=170 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s8a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
RS="mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --m 16384"
AR="mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 4096"
step rs_def 25 $RS
step rs_sm_notail 25 env MK_FUSED_RS_COPY=0 MK_FUSED_TAIL=0 $RS
for c in 4 8 16; do step rs_sm_tail$c 25 env MK_FUSED_RS_COPY=0 $RS --ctas $c; done
step ar_def 20 $AR
step ar_two_notail 20 env MK_FUSED_AR_TWO_SHOT=1 MK_FUSED_TAIL=0 $AR --ctas 32
for c in 4 8 16 32; do step ar_two_tail$c 20 env MK_FUSED_AR_TWO_SHOT=1 $AR --ctas $c; done
step ar_one_tail16 20 env MK_FUSED_AR_COPY=0 $AR --ctas 16
echo "end at $(( $(date +%s) - T0 )) s"
