#!/usr/bin/env bash
# next_s41.sh — session 41's GPU runs (docs/perf/NOTES.md, attention/flash_fwd "Session 41"). Run through
# tools/gpu-check.sh from the repository root.
# part a (1 GPU, nvidia-h200): the warp-specialised flash attention kernel (MK_ATTN_IMPL_WGMMA_WS, flash_fwd_ws.cu,
#   now AUTO's choice on Hopper) against the wgmma kernel it replaces ("fused_wgmma"), mma.sync, and PyTorch SDPA's
#   flash (FlashAttention-2) and cuDNN backends, B = 1, hq 32, hkv 8, d 128, S 2048 / 8192 / 16384, causal and
#   not; d 64 at S 8192; the layer's decode-one shape (64 queries x 4160 keys, hq 8, hkv 1), which splits.
#   Prediction: 1.5-1.7x the wgmma kernel's 327-361 TFLOP/s at S >= 8192 (FA3 reaches ~600 on an H100); the decode
#   shape level.
#   MK_CALL_LIMIT=420 \
#     CTEST_ARGS="-R ^test_(flash_attn|attn_merge|gemm|model_gpu|model_gpu_prefill|model_gpu_fused_1)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=240 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s41.sh a'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
STEP_GREP="$STEP_GREP|^attn_prefill|^\{|torch_sdpa"
if [ "$PART" = a ]; then
  obj=$(find .. -name 'flash_fwd_ws.cu.o' | head -1)
  if command -v cuobjdump > /dev/null && [ -n "$obj" ]; then
    cuobjdump -sass "$obj" > "$RES/flash_fwd_ws.sass" 2>&1
    sass=$RES/flash_fwd_ws.sass
    echo "sass: $(grep -c HGMMA "$sass") HGMMA, $(grep -c 'WARPGROUP.DEPBAR' "$sass") DEPBAR"
    rm -f "$sass"
  fi
  TAIL=14 step attn_prefill 150 mk-bench attn --mode prefill --seq 2048,8192,16384 --json "$RES/attn_prefill.json"
  TAIL=8 step sdpa_flash 60 python3 ../../tools/bench/sdpa_ref.py --seq 2048,8192,16384 --merge "$RES/attn_prefill.json"
  TAIL=30 step sdpa_cudnn 60 python3 ../../tools/bench/sdpa_ref.py --seq 2048,8192,16384 --backend cudnn \
    --merge "$RES/attn_prefill.json"
  TAIL=8 step attn_d64 60 mk-bench attn --mode prefill --seq 8192 --d 64 --json "$RES/attn_d64.json"
  TAIL=8 step attn_q64 40 mk-bench attn --mode prefill --seq 4160 --q 64 --hq 8 --hkv 1 --causal 1 \
    --json "$RES/attn_q64.json"
fi
# part b (1 GPU, nvidia-h200): AUTO keeps the wgmma kernel where the call splits (the decode shape: 0.0272 ms with
#   the new kernel against 0.0243, part a); the attention shapes of the layer on one GPU (8192 tokens, causal, hq 32,
#   hkv 4 Qwen3 / 8 Mixtral) and S = 8192 non-causal with --interleave --iters 100 (part a's median 1.839 ms with
#   p10 1.657: two modes); then the layer on one GPU, this build against 073fc62's (old_build; the tree in
#   .carry/old-073fc62, carried) in turns, twice. Prediction: the prefill attention block -0.8 to -0.9 ms (the
#   kernel 1.74 -> 0.90 ms at hq 32), the decode blocks level.
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R ^test_(flash_attn|model_gpu|model_gpu_prefill|model_gpu_fused_1)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s41.sh b'
if [ "$PART" = b ]; then
  REPO=$(cd ../.. && pwd)
  TAIL=4 step attn_q64 40 mk-bench attn --mode prefill --seq 4160 --q 64 --hq 8 --hkv 1 --causal 1 \
    --json "$RES/attn_q64.json"
  TAIL=4 step attn_qwen3 60 mk-bench attn --mode prefill --seq 8192 --hq 32 --hkv 4 --causal 1 --interleave \
    --iters 100 --json "$RES/attn_qwen3.json"
  TAIL=4 step attn_mixtral 60 mk-bench attn --mode prefill --seq 8192 --hq 32 --hkv 8 --causal 1 --interleave \
    --iters 100 --json "$RES/attn_mixtral.json"
  TAIL=4 step attn_nc 60 mk-bench attn --mode prefill --seq 8192 --causal 0 --interleave --iters 100 \
    --json "$RES/attn_nc.json"
  old_build 073fc62
  lay() { layer "layer_$1$2" "$3"; }
  ab_turns lay
fi
# part c (1 GPU, nvidia-h200): the warp-specialised kernel persistent (MK_ATTN_WS_PERSISTENT=1: one CTA an SM, items
#   heaviest first in rounds, the next item's Q and K loaded during the last one's epilogue) against one CTA an item
#   (0, parts a and b), in turns, twice: hq 32, hkv 8, S 2048 / 8192, causal and not; the layer's TP = 2 shape
#   (hq 16, hkv 2, 8192 tokens, causal); a varlen batch of 8 x 1024. cuDNN (SDPA) beside the TP = 2 shape.
#   Prediction: a CTA item's start and end (~3-4 us: Q and K0 in flight, a first S without overlap, the epilogue)
#   mostly hidden: S = 2048 causal (8 tiles an item on average) -10 to -15 %, 2048 non-causal -5 to -8 %, S = 8192
#   -2 to -4 %.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(flash_attn|flash_attn_ws0|model_gpu|model_gpu_prefill|model_gpu_fused_1)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s41.sh c'
if [ "$PART" = c ]; then
  for r in 1 2; do
    for v in 1 0; do
      TAIL=4 step "attn_p${v}_$r" 60 env MK_ATTN_WS_PERSISTENT=$v mk-bench attn --mode prefill --seq 2048,8192 \
        --json "$RES/attn_p${v}_$r.json"
      TAIL=2 step "attn_tp2_p${v}_$r" 40 env MK_ATTN_WS_PERSISTENT=$v mk-bench attn --mode prefill --seq 8192 --hq 16 \
        --hkv 2 --causal 1 --json "$RES/attn_tp2_p${v}_$r.json"
      TAIL=4 step "attn_b8_p${v}_$r" 40 env MK_ATTN_WS_PERSISTENT=$v mk-bench attn --mode prefill --seq 1024 --batch 8 \
        --json "$RES/attn_b8_p${v}_$r.json"
    done
  done
  TAIL=6 step sdpa_tp2 60 python3 ../../tools/bench/sdpa_ref.py --seq 8192 --hq 16 --hkv 2 --causal 1 --backend cudnn \
    --merge "$RES/attn_tp2_p1_2.json"
  TAIL=6 step sdpa_b8 60 python3 ../../tools/bench/sdpa_ref.py --seq 1024 --batch 8 --backend cudnn \
    --merge "$RES/attn_b8_p1_2.json"
fi
# part d (1 GPU, nvidia-h200): the default MK_ATTN_WS_PERSISTENT=-1 (persistent for causal calls of at most 4096
#   keys, after part c) at S 1024 / 2048 / 8192, causal and not, hq 32, hkv 8, and the TP = 2 shape; tests with the
#   default and both forced modes. Prediction: each shape at the faster of part c's two modes.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_(flash_attn|flash_attn_ws0|flash_attn_ws1|model_gpu|model_gpu_prefill)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s41.sh d'
if [ "$PART" = d ]; then
  TAIL=12 step attn_auto 90 mk-bench attn --mode prefill --seq 1024,2048,8192 --json "$RES/attn_auto.json"
  TAIL=3 step attn_tp2_auto 40 mk-bench attn --mode prefill --seq 8192 --hq 16 --hkv 2 --causal 1 \
    --json "$RES/attn_tp2_auto.json"
fi
