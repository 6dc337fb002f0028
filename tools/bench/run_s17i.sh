#!/usr/bin/env bash
# tools/bench/run_s17i.sh — session 17, 4 x H200: GEMM+AR 1024 and 4096 (default paths) here, with the pipe's task loop
# no longer inlined into run_role / tail_run, against 1880ca5 in turns, three times (run f3a469f: 0.2627 against
# 0.2584 ms at M = 1024). Old tree as in run_s17h.sh (.carry/old-1880ca5 carried). Tests under CTEST_ARGS:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R test_fused_ar_(pipe|tail_4|push_4)" CTEST_TIMEOUT=90 CTEST_WALL=100 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s17i.sh'
# (Its old-tree build became old_build in bench_step.sh after the run: the same commands.)
# Ran at 5717005. MK_FUSED_AR_PIPE was removed after run 5717005 (NOTES, fused, session 17): to rerun, check out 5717005
# and run that commit's copy of this script.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm_ar +(un)?fused|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
old_build 1880ca5
AR="gemm_ar --m 1024 --m 4096 --interleave"
for r in 1 2 3; do
  TAIL=4 step ar_old_$r 30 $OB/mk-launch -n 4 -- $OB/mk-bench $AR --json "$RES/ar_old_$r.json"
  TAIL=4 step ar_new_$r 30 mk-launch -n 4 -- mk-bench $AR --json "$RES/ar_new_$r.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
