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
# part b (1 GPU, nvidia-h200): the softmax with ex2.approx.ftz and short chains (kernels/attention/flash_fwd.cuh,
#   softmax_rows) against 76e0533's (exp2f: a range test and two multiplies around every MUFU.EX2; each row's max and
#   sum one serial chain). Part a's stamps: one CTA an item, the tile period is 3249 cycles where the two
#   warpgroups' S and P V need 2048 of tensor pipe, and 2953 of it pass between a warpgroup's turn and its softmax's
#   end. SASS of the D 128 consumers' loop: ~788 instructions a warp for an unmasked tile, now ~586 (-26 %). This
#   build and 76e0533's (old_build; the tree in .carry/old-76e0533, carried) in turns, twice: B 1, hq 32, hkv 8,
#   d 128, S 2048 / 8192 / 16384, causal and not; the TP = 2 shape (hq 16, hkv 2, 8192 causal); d 64 at 8192; then
#   cuDNN (sdpa_ref.py) on the same shapes, and the new build with MK_ATTN_WS_PERSISTENT=0 and 1.
#   Prediction: the period 3249 -> 2700-2900 cycles; S >= 8192 non-causal -8 to -15 %, causal -5 to -12 %,
#   S 2048 -5 to -10 %; d 64 a smaller gain (half the tensor work a tile, the same softmax: more of the period is
#   softmax, so rather more, -10 to -20 %).
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_(flash_attn(_ws0|_ws1)?|attn_merge|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1|\
#     model_gpu|model_gpu_prefill|model_gpu_fused_1)$" CTEST_TIMEOUT=200 CTEST_WALL=240 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s45.sh b'
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
if [ "$PART" = b ]; then
  REPO=$(cd ../.. && pwd)
  STEP_GREP='^attn_prefill fused|torch_sdpa|FAIL|rror'
  OLD_TARGETS=mk-bench old_build 76e0533
  attn_run() { # WHICH R BINDIR
    TAIL=8 step "attn_$1_$2" 150 "$3/mk-bench" attn --mode prefill --seq 2048,8192,16384 --path fused \
      --json "$RES/attn_$1_$2.json"
    TAIL=2 step "attn_tp2_$1_$2" 40 "$3/mk-bench" attn --mode prefill --seq 8192 --hq 16 --hkv 2 --causal 1 \
      --path fused --json "$RES/attn_tp2_$1_$2.json"
    TAIL=2 step "attn_d64_$1_$2" 40 "$3/mk-bench" attn --mode prefill --seq 8192 --d 64 --path fused \
      --json "$RES/attn_d64_$1_$2.json"
  }
  ab_turns attn_run
  TAIL=8 step sdpa_cudnn 90 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 2048,8192,16384 --backend cudnn \
    --merge "$RES/attn_new_2.json"
  TAIL=2 step sdpa_cudnn_tp2 40 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 8192 --hq 16 --hkv 2 --causal 1 \
    --backend cudnn --merge "$RES/attn_tp2_new_2.json"
  for p in 0 1; do
    TAIL=8 step "attn_p$p" 120 env MK_ATTN_WS_PERSISTENT=$p mk-bench attn --mode prefill --seq 2048,8192,16384 \
      --path fused --json "$RES/attn_p$p.json"
  done
fi
