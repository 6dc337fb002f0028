#!/usr/bin/env bash
# (Record of run e26d770: MK_FUSED_REDUCE_BATCH was measured slower everywhere and reverted; on later commits the knob is gone.)
# tools/bench/run_s7f.sh — session 7, GPU call (4 x H200): the reducers summing several 128 x 128 blocks at once
# (MK_FUSED_REDUCE_BATCH, flags checked in parallel, loads in flight across block edges) against one block at a
# time, SM roles: GEMM+RS M = 2048 / 8192, GEMM+AR M = 1024 one-shot and two-shot:
#   MK_CALL_LIMIT=200 CTEST_ARGS="-R batch4" CTEST_WALL=60 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s7f.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step rs_b1 12 env MK_FUSED_RS_COPY=0 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --ctas 16
for c in 16 8 4; do
  step rs_b4_$c 12 env MK_FUSED_RS_COPY=0 MK_FUSED_REDUCE_BATCH=4 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --ctas $c --path fused
done
for c in 16 32; do
  step ar_b4_$c 12 env MK_FUSED_AR_COPY=0 MK_FUSED_REDUCE_BATCH=4 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --ctas $c --path fused
  step ar_two_b4_$c 12 env MK_FUSED_AR_TWO_SHOT=1 MK_FUSED_REDUCE_BATCH=4 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 4096 --ctas $c
done
echo "end at $(( $(date +%s) - T0 )) s"
