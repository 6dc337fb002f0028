#!/usr/bin/env bash
# next_s44.sh — session 44's GPU run (docs/perf/NOTES.md, attention/ring_attn "Session 43" and fused "Ranks sharing a
# GPU"). Run through tools/gpu-check.sh from the repository root, with CTEST_ARGS="-R _gpu1$": ctest first runs every
# test that puts several ranks on the one GPU (label gpu: the ring attention on 2 and 4 ranks, the fused ops on 2 ranks
# and on 2 emulated nodes x 2, GEMM+AR's defaults, the MoE block and the row gather on 2 x 2, comm's put/signal on
# 2 x 2). Then test_ring_attn on 2 ranks sharing the GPU N more times (the two kernels alternating by run), this build
# only: session 43's A/B had this build fail 0 of 34 runs and 1d39b07's 2 of 34 (session 42: 4 of 52).
# Predictions: every _gpu1 test passes; no ring run fails.
#   N=40 MK_CALL_LIMIT=570 CTEST_ARGS="-R _gpu1$" CTEST_TIMEOUT=200 CTEST_WALL=330 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s44.sh a'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ]; then
  STEP_GREP='FAIL|not finite|bits'
  for r in $(seq 1 "${N:-40}"); do
    v=$(( r % 2 ))
    TAIL=6 step "ring2_ws${v}_$r" 40 env MK_RING_ATTN_WS=$v mk-launch -n 2 --gpus 1 -- ./test_ring_attn | tee -a "$RES/ring2.txt"
  done
  echo "ring: $(grep -c ' rc=0 ' "$RES/ring2.txt") of $(grep -c ' rc=' "$RES/ring2.txt") runs exited 0;" \
    "$(grep -l FAIL "$RES"/ring2_*.log 2> /dev/null | wc -l) logs hold a FAIL"
fi
