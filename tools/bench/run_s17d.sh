#!/usr/bin/env bash
# tools/bench/run_s17d.sh — session 17, 4 x H200: the pipelined GEMM+AR two-shot (MK_FUSED_AR_PIPE=1) with a pause
# between flag polls (MK_FUSED_AR_PIPE_POLL_NS: run 67bddc6 had up to 32 lanes a crew spinning on acquire loads, and
# even local 256 KiB copies took 30-50 us), at the O projection (8192 x 4096 / 2048 x 1024) and M = 1024 (N = 8192,
# K = 7168), each --interleave; the two-shot's default beside; one MK_TRACE:
#   MK_CALL_LIMIT=360 CTEST_ARGS="-R test_fused_ar_pipe1" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s17d.sh'
# (Its ar() helper became ar_step in bench_step.sh after the run: the same commands.)
# Ran at 94592b7. MK_FUSED_AR_PIPE was removed after run 5717005 (NOTES, fused, session 17): to rerun, check out 94592b7
# and run that commit's copy of this script.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm_ar +fused|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
ar() { TAIL=1 ar_step "$@"; }
P="MK_FUSED_AR_PIPE=1 MK_FUSED_AR_PIPE_LAG=64"
for ns in 0 128 512 2048; do
  ar o4096_pipe_p$ns $P MK_FUSED_AR_PIPE_POLL_NS=$ns -- --m 8192 --n 4096 --k 1024 --ctas 16
  ar o2048_pipe_p$ns $P MK_FUSED_AR_PIPE_POLL_NS=$ns -- --m 8192 --n 2048 --k 1024 --ctas 16
  ar ar1024_pipe_p$ns $P MK_FUSED_AR_PIPE_POLL_NS=$ns -- --m 1024 --ctas 16
done
ar o4096_pipe_p512_w256 $P MK_FUSED_AR_PIPE_POLL_NS=512 MK_FUSED_AR_PIPE_COLS=256 -- --m 8192 --n 4096 --k 1024 --ctas 16
ar o4096_pipe_p512_c32 $P MK_FUSED_AR_PIPE_POLL_NS=512 -- --m 8192 --n 4096 --k 1024 --ctas 32
step trace_o4096 30 env $P MK_FUSED_AR_PIPE_POLL_NS=512 MK_TRACE="$RES/trace_o4096" mk-launch -n 4 -- mk-bench gemm_ar \
  --m 8192 --n 4096 --k 1024 --ctas 16 --warmup 5 --iters 3 --path fused
python3 "$REPO/tools/bench/trace_stats.py" "$RES"/trace_o4096.rank1.json 2>&1 | tail -12
echo "end at $(( $(date +%s) - T0 )) s"
