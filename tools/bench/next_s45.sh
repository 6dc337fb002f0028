#!/usr/bin/env bash
# next_s45.sh — prepared in session 44 for a session lent one GPU (docs/perf/NOTES.md, attention/flash_fwd
# "Session 44", Next). Run through tools/gpu-check.sh from the repository root, after applying the debug patch to the
# device's copy of the tree (never merged):
#   git apply tools/bench/dbg44.patch && MKERNEL_BUILD_COMMIT=<sha> MK_CALL_LIMIT=300 \
#     CTEST_ARGS="-R ^test_flash_attn(_ws0|_ws1)?$" CTEST_TIMEOUT=60 CTEST_WALL=90 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s45.sh a'
# part a (1 GPU, nvidia-h200): why the persistent flash kernel's tile loop runs ~7 % slower than one CTA an item
#   (session 44: same SASS, same instructions, L2 as local; more MIO-throttle, short-scoreboard and named-barrier
#   stalls). dbg44.patch stamps (clock64) each consumer warpgroup's key tiles in one CTA: K_t landed, its turn to
#   issue S_t, S_t's softmax done; tools/bench/ws_stamps.py reduces them. S 16384 non-causal (128 tiles an item),
#   one CTA an item (0) and persistent (1), twice each; then the same timed without stamps (the patch's cost).
#   Prediction, if the two warpgroups' softmax phases overlap more in the persistent kernel: there, warpgroup 1's
#   turn lags warpgroup 0's by further from half a period than in 0, and the turn waits are longer; the period ~7 %
#   longer. If the lag and the waits are the same in both, the loss is elsewhere (the producer, or the SM itself).
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ]; then
  REPO=$(cd ../.. && pwd)
  STEP_GREP='^attn_prefill fused +b=|FAIL|rror'
  for r in 1 2; do
    for p in 0 1; do
      TAIL=2 step "stamps_p${p}_$r" 60 env MK_ATTN_WS_PERSISTENT=$p MK_WS_STAMPS="$RES/stamps_p${p}_$r.txt" \
        mk-bench attn --mode prefill --seq 16384 --causal 0 --warmup 2 --iters 5
    done
  done
  python3 "$REPO/tools/bench/ws_stamps.py" "$RES"/stamps_p*.txt --item 128 | tee "$RES/ws_stamps.txt" | head -60
  for r in 1 2; do for p in 0 1; do
    TAIL=2 step "nostamp_p${p}_$r" 60 env MK_ATTN_WS_PERSISTENT=$p mk-bench attn --mode prefill --seq 16384 --causal 0
  done; done
fi
