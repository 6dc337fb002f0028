#!/usr/bin/env bash
# tools/bench/run_s17h.sh — session 17, 4 x H200: the default GEMM+AR and GEMM+RS paths here against 1880ca5 (the
# last commit of session 16, built from a copy of its tree in .carry/old-1880ca5), in turns, twice: AR 1024 took
# 0.2726-0.2729 ms in this session's calls against 0.2598 at 4152e44 (another call) — is the pipe's branch in the
# shared policy (after_store, run_role, tail_run) a regression? Made with
#   mkdir -p .carry/old-1880ca5 && git archive 1880ca5 | tar x -C .carry/old-1880ca5 --exclude=docs
# and .carry/old-1880ca5 in the device call's carry. Tests under CTEST_ARGS:
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_fused" CTEST_TIMEOUT=90 CTEST_WALL=200 tools/gpu-check.sh -- \
#     'bash ../../tools/bench/run_s17h.sh'
# (Its old-tree build became old_build in bench_step.sh after the run: the same commands.)
# Ran at f3a469f, whose tree still held MK_FUSED_AR_PIPE (removed after run 5717005; NOTES, fused, session 17).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm_(ar|rs) +(un)?fused|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
old_build 1880ca5
AR="gemm_ar --m 16 --m 128 --m 1024 --m 4096 --interleave"
RS="gemm_rs --m 2048 --m 8192 --interleave"
for r in 1 2; do
  TAIL=8 step ar_old_$r 40 $OB/mk-launch -n 4 -- $OB/mk-bench $AR --json "$RES/ar_old_$r.json"
  TAIL=8 step ar_new_$r 40 mk-launch -n 4 -- mk-bench $AR --json "$RES/ar_new_$r.json"
  TAIL=4 step rs_old_$r 40 $OB/mk-launch -n 4 -- $OB/mk-bench $RS --json "$RES/rs_old_$r.json"
  TAIL=4 step rs_new_$r 40 mk-launch -n 4 -- mk-bench $RS --json "$RES/rs_new_$r.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
