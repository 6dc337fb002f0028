#!/usr/bin/env bash
# next_s23.sh — session 23's GPU runs (docs/perf/NOTES.md, moe "Session 23"). Run through tools/gpu-check.sh from the
# repository root.
# part v (2 GPUs, nvidia-h200-x2): the swapped gate/up GEMM with 256 weight rows a unit for 192-row chunks
#   (MK_MOE_SKINNY=192, kMB = 2) against the core (MK_MOE_SKINNY=0), in turns (0, 192, 0), --seed 7 --breakdown, at
#   the per-expert rows of issue 7's (128, 4096, 8) at EP = 4: (256, 4096, 8) at EP = 2 (~128 +- 11 rows an expert),
#   (320, 4096, 8) (~160), and (128, 4096, 8) (~64, where the core wins). Prediction: (256, 4096, 8) GEMM1's phase
#   0.365-0.39 -> 0.30-0.34 ms (4 rounds of 64 k-steps at ~1.2-1.3 us, each carrying 256 x 160 x 64 MACs and 52 KB
#   from L2 against the core's 6 rounds at 0.95 us), the block 0.645 -> 0.58-0.62; (320, 4096, 8) similar gain.
#   MK_CALL_LIMIT=330 CTEST_ARGS="-R ^test_(moe_pick|moe_block)$" CTEST_TIMEOUT=200 CTEST_WALL=220 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s23.sh v'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-v}
BIN=$PWD
export PATH=$BIN:$PATH
G=$(nvidia-smi -L | grep -c '^GPU')
if [ "$PART" = v ]; then
  STEP_GREP="$STEP_GREP|phases"
  SH="--shape 256,4096,8,2,14336 --shape 320,4096,8,2,14336 --shape 128,4096,8,2,14336"
  for v in sk0 sk192 sk0b sk192b; do
    n=${v#sk}
    n=${n%b}
    # shellcheck disable=SC2086
    TAIL=12 step "moe_$v" 60 env MK_MOE_SKINNY="$n" mk-launch -n "$G" -- mk-bench moe $SH --iters 20 --seed 7 \
      --breakdown --json "$RES/moe_$v.json"
  done
fi
echo "part $PART end at $(( $(date +%s) - T0 )) s"
