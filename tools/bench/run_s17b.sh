#!/usr/bin/env bash
# tools/bench/run_s17b.sh — session 17, 4 x H200: the pipelined GEMM+AR two-shot (MK_FUSED_AR_PIPE=1) at the layer's
# O projection (M = 8192, N = 4096 / 2048, K = 1024) and at the acceptance shapes M = 1024, 4096 (N = 8192,
# K = 7168): comm CTAs 8 .. 48, queue lag 32 .. 512, each --interleave (GEMM alone, NCCL alone, unfused, fused in
# turns), the default modes beside; one MK_TRACE of the O projection pipelined:
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R test_fused_(ar_pipe|ar_two_4|ar_push_4|ar_tail_4|ar_4|rs_4|rs_push_4)" \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s17b.sh'
# (Its ar() helper became ar_step in bench_step.sh after the run: the same commands.)
# Ran at 02415f8. MK_FUSED_AR_PIPE was removed after run 5717005 (NOTES, fused, session 17): to rerun, check out 02415f8
# and run that commit's copy of this script.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
ar() { TAIL=2 ar_step "$@"; }
for n in 4096 2048; do
  ar o${n}_default MK_X=0 -- --m 8192 --n $n --k 1024
  for c in 8 16 32 48; do ar o${n}_pipe_c$c MK_FUSED_AR_PIPE=1 -- --m 8192 --n $n --k 1024 --ctas $c; done
  for l in 32 512; do ar o${n}_pipe_l$l MK_FUSED_AR_PIPE=1 MK_FUSED_AR_PIPE_LAG=$l -- --m 8192 --n $n --k 1024 --ctas 16; done
done
for m in 1024 4096; do
  ar ar${m}_default MK_X=0 -- --m $m
  for c in 8 16 32; do ar ar${m}_pipe_c$c MK_FUSED_AR_PIPE=1 -- --m $m --ctas $c; done
done
step trace_o4096 30 env MK_FUSED_AR_PIPE=1 MK_TRACE="$RES/trace_o4096" mk-launch -n 4 -- mk-bench gemm_ar --m 8192 \
  --n 4096 --k 1024 --ctas 16 --warmup 5 --iters 3 --path fused
python3 "$REPO/tools/bench/trace_stats.py" "$RES"/trace_o4096.rank*.json 2>&1 | tail -40
echo "end at $(( $(date +%s) - T0 )) s"
