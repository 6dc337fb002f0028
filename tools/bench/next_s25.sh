#!/usr/bin/env bash
# next_s25.sh — session 25's GPU runs (docs/perf/NOTES.md, attention/flash_fwd "Session 25"). Run through
# tools/gpu-check.sh from the repository root.
# part a (2 GPUs, nvidia-h200-x2): flash attention split along the keys (mk_attn_fwd_args.num_splits, workspace).
#   mk-bench attn --q: the last Q tokens of a sequence of S as queries (causal), the automatic split ("fused")
#   against none ("fused_nosplit") and mma.sync, at the layer's decode-one shapes per rank (TP = 4: 8 q heads,
#   1 KV head Qwen3 / 2 Mixtral, Q = 64, S = 4160) and Q = 1, 16, 256 and S = 32768; full prefill (S = 8192)
#   for no change where it does not split. Then the layer at TP = EP = 2, --decode one and batch.
#   Prediction: Q = 64 x S = 4160 unsplit runs 8 CTAs (one per head) over 33 key tiles, ~0.07-0.1 ms; split
#   16 ways (128 CTAs, 2-3 tiles each) + the merge ~0.012-0.02 ms. The decode-one attention block -0.05 to
#   -0.08 ms on both paths.
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R ^test_(flash_attn|attn_merge|ring_attn|model_gpu|model_gpu_agree_mixtral_flash_2|model_gpu_fused_2)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=260 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s25.sh a'
# part b (4 GPUs, nvidia-h200-x4): the layer at TP = EP = 4 with the split (issue 9's table): --decode one (the
#   default) and --decode batch (64 sequences, paged decode), both presets, --interleave --warmup 20 --seed 7.
#   Prediction: the decode-one attention blocks 0.178 / 0.193 ms (b10ea56-x4) -> ~0.09-0.11, so Qwen3 decode
#   fused / unfused 0.83 -> ~0.78, Mixtral 0.91 -> ~0.89; prefill unchanged.
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R ^test_(flash_attn|model_gpu_fused_4|model_gpu_agree_qwen3_moe_flash_tp4)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=220 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s25.sh b'
# part c (4 GPUs): GEMM2's k-slices as GEMM1's programmatic dependent at decode (MK_MOE_G12_DECODE=2; 1 needs GEMM2
#   unsplit, so E = 8 decode ran them one after the other): (16, 4096, 8) --breakdown --seed 7 in turns 1 / 2, twice,
#   with (128, 4096, 8) beside (split GEMM1 and the swapped GEMM1: unaffected); then the Mixtral layer with the
#   decode MoE handle sized for the 16 tokens a rank gets (MK_MOE_DECODE_TOKENS=16: GEMM1 whole, so G12 can take
#   it) without and with MK_MOE_G12_DECODE=2, and the default (64: GEMM1 split 8 ways). Prediction: GEMM2's
#   weights stream beside GEMM1's last tiles (~33 us at E = 8, half the SMs idle at the end) and its launch gap
#   goes: (16, 4096, 8) -0.01 to -0.02 ms (0.265 at b10ea56-x4).
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(moe_block|moe_block_ep4|moe_pick)$" CTEST_TIMEOUT=200 CTEST_WALL=230 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s25.sh c'
# part d (2 GPUs): test_moe_block's new E = 32 case (GEMM1 whole, GEMM2 split by the device's cost model) with
#   MK_MOE_G12_DECODE=2 (now the default), and (16, 4096, 8) / (32, 4096, 8) at EP = 2 in turns, 2 against 1, twice.
#   Prediction: -3 to -5 us, as at EP = 4 (run f686361-x4).
#   MK_CALL_LIMIT=360 CTEST_ARGS="-R ^test_(moe_block|moe_pick)$" CTEST_TIMEOUT=200 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s25.sh d'
# part e (4 GPUs): GEMM1 counts its stored tiles per (tile-row, eighth of its N) and each GEMM2 unit waits only for
#   the eighths its K-range reads, so the split GEMM2's slices start as GEMM1's last tiles run: MK_MOE_G12_DECODE
#   2 against 1 in turns, twice, at (16, 4096, 8) and the E = 128 decode shapes (unsplit: every eighth). Prediction:
#   (16, 4096, 8) 2 against 1: -0.01 to -0.015 ms (was -0.004, run f686361-x4); E = 128 level.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(moe_block|moe_block_ep4)$" CTEST_TIMEOUT=200 CTEST_WALL=230 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s25.sh e'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
STEP_GREP="$STEP_GREP|^attn_prefill|^\[0\] +(qwen3|mixtral) "
if [ "$PART" = a ]; then
  TAIL=12 step attn_q64_qwen3 60 mk-bench attn --mode prefill --seq 4160 --q 64 --hq 8 --hkv 1 --causal 1 \
    --json "$RES/attn_q64_qwen3.json"
  TAIL=12 step attn_q64_mixtral 60 mk-bench attn --mode prefill --seq 4160 --q 64 --hq 8 --hkv 2 --causal 1 \
    --json "$RES/attn_q64_mixtral.json"
  for q in 1 16 256; do
    TAIL=8 step "attn_q${q}" 40 mk-bench attn --mode prefill --seq 4160 --q "$q" --hq 8 --hkv 1 --causal 1 \
      --json "$RES/attn_q${q}.json"
  done
  TAIL=8 step attn_q64_s32k 40 mk-bench attn --mode prefill --seq 32768 --q 64 --hq 8 --hkv 1 --causal 1 \
    --json "$RES/attn_q64_s32k.json"
  TAIL=8 step attn_full 60 mk-bench attn --mode prefill --seq 8192 --hq 8 --hkv 1 --json "$RES/attn_full.json"
  TAIL=8 step layer_one 200 mk-launch -n "$G" -- mk-bench layer --interleave --warmup 10 --iters 20 --seed 7 \
    --json "$RES/layer_one.json"
fi
if [ "$PART" = b ]; then
  TAIL=10 step "layer_h200x${G}" 200 mk-launch -n "$G" -- mk-bench layer --interleave --warmup 20 --iters 20 --seed 7 \
    --json "$RES/layer_h200x${G}.json"
  TAIL=10 step "layer_batch_h200x${G}" 200 mk-launch -n "$G" -- mk-bench layer --decode batch \
    --interleave --warmup 20 --iters 20 --seed 7 --json "$RES/layer_batch_h200x${G}.json"
fi
if [ "$PART" = c ]; then
  STEP_GREP="$STEP_GREP|phases"
  for v in 1 2 1b 2b; do
    moe "e8dec_g12_$v" "--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336" "MK_MOE_G12_DECODE=${v%b}"
  done
  for v in def dt16 dt16g2; do
    envs=()
    case $v in dt16) envs=(MK_MOE_DECODE_TOKENS=16) ;; dt16g2) envs=(MK_MOE_DECODE_TOKENS=16 MK_MOE_G12_DECODE=2) ;; esac
    TAIL=4 step "layer_mixtral_$v" 90 env "${envs[@]}" mk-launch -n "$G" -- mk-bench layer --preset mixtral \
      --interleave --warmup 20 --iters 20 --seed 7 --json "$RES/layer_mixtral_$v.json"
  done
fi
if [ "$PART" = d ]; then
  STEP_GREP="$STEP_GREP|phases"
  for v in 2 1 2b 1b; do
    moe "e8dec_g12_$v" "--shape 16,4096,8,2,14336 --shape 32,4096,8,2,14336" "MK_MOE_G12_DECODE=${v%b}"
  done
fi
if [ "$PART" = e ]; then
  STEP_GREP="$STEP_GREP|phases"
  for v in 2 1 2b 1b; do
    moe "dec_g12_$v" "--shape 16,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768" \
      "MK_MOE_G12_DECODE=${v%b}"
  done
fi
