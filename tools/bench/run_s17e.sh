#!/usr/bin/env bash
# tools/bench/run_s17e.sh — session 17, 4 x H200: why the pipelined GEMM+AR two-shot's crews move ~5 GB/s each
# (run 94592b7): the comm CTAs' scaling (4 .. 64, with and without the GEMM CTAs joining after their last tile) at the
# O projection (8192 x 4096 x 1024), and the plain per-CTA NVLink push / pull rates (mk-bench comm --per-cta) on the
# same machine:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R nothing" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s17e.sh'
# Ran at 407436a. MK_FUSED_AR_PIPE was removed after run 5717005 (NOTES, fused, session 17): to rerun, check out 407436a
# and run that commit's copy of this script.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm_ar +fused|nvlink|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
P="MK_FUSED_AR_PIPE=1 MK_FUSED_AR_PIPE_LAG=64"
for t in 1 0; do
  for c in 4 64; do
    TAIL=1 step o4096_pipe_t${t}_c$c 40 env $P MK_FUSED_TAIL=$t mk-launch -n 4 -- mk-bench gemm_ar --interleave \
      --m 8192 --n 4096 --k 1024 --ctas $c --json "$RES/o4096_pipe_t${t}_c$c.json"
  done
done
TAIL=16 step comm_per_cta 90 mk-launch -n 4 -- mk-bench comm --per-cta --json "$RES/comm_per_cta.json"
echo "end at $(( $(date +%s) - T0 )) s"
