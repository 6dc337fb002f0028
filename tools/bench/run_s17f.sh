#!/usr/bin/env bash
# tools/bench/run_s17f.sh — session 17, 4 x H200: the pipelined GEMM+AR two-shot at the final tree (the owner's sums
# into C, then copied from C to every peer, instead of one loop storing to all W destinations): the O projection and
# M = 1024, --interleave, beside the default mode:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R test_fused_(ar_pipe|ar_4|ar_two_4|rs_4|ag_4)" tools/gpu-check.sh -- \
#     'bash ../../tools/bench/run_s17f.sh'
# Ran at 80a8941. MK_FUSED_AR_PIPE was removed after run 5717005 (NOTES, fused, session 17): to rerun, check out 80a8941
# and run that commit's copy of this script.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm_ar +(un)?fused|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
P="MK_FUSED_AR_PIPE=1 MK_FUSED_AR_PIPE_LAG=64"
TAIL=2 ar_step o4096_default MK_X=0 -- --m 8192 --n 4096 --k 1024
TAIL=1 ar_step o4096_pipe $P -- --m 8192 --n 4096 --k 1024 --ctas 16
TAIL=1 ar_step ar1024_pipe $P -- --m 1024 --ctas 16
echo "end at $(( $(date +%s) - T0 )) s"
