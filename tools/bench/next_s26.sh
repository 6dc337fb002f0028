#!/usr/bin/env bash
# next_s26.sh — session 26's GPU runs (docs/perf/NOTES.md, moe "Session 26"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs, nvidia-h200-x2): GEMM2 as the swapped gate/up GEMM's programmatic dependent (MK_MOE_G12_SKINNY,
#   new; default 1 at adb52ae, 0 since): (256, 4096, 8) at EP = 2 (128 rows an expert: the swapped GEMM1 in 192-row chunks, 448 units
#   on 128 CTAs, 3.5 rounds) in turns 1 / 0, twice, with (128, 4096, 8) beside it (64 rows an expert: the core's
#   GEMM1, unaffected but for done2 now counting rows). Prediction: GEMM2's first tiles start on the SMs the last
#   half-round leaves idle (64 of 128) and on the dispatch's: (256, 4096, 8) -0.02 to -0.04 ms (0.594, run
#   3447d2e-x2); (128, 4096, 8) level. Measured (run adb52ae-x2): 1 0.6143 / 0.6158 ms against 0 0.6212 / 0.6194;
#   GEMM2 started at 0.141 ms instead of 0.40 but ended as late (0.558-0.567 against 0.554-0.559): a GEMM2 tile
#   (128 x 128 x 14336) streams 3.7 MB, ~0.15 ms on one SM, the length of GEMM2's whole phase. Then (a2, a3) 2:
#   every GEMM2 tile in k-slices, tile-major, against 1 and 0 in turns, twice. Prediction for 2: (256, 4096, 8)
#   -0.03 to -0.06 ms against 1 (GEMM2's end 0.56 -> ~0.50-0.52). Measured (run
#   11b0072-x2): 2 0.6659 / 0.6669, 1 0.6149 / 0.6152, 0 0.6115 / 0.6134: 2 refuted (GEMM2 ends 0.07 ms later) and
#   reverted, 1 level with 0, so the default is 0.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(moe_block|moe_pick)$" CTEST_TIMEOUT=200 CTEST_WALL=230 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s26.sh a'
# part b (4 GPUs, nvidia-h200-x4): the same at (128, 4096, 8) on 4 ranks (224 units on 128 CTAs, 1.75 rounds;
#   issue 7's shape 2-4 % behind unfused), with (16, 4096, 8) beside it. Prediction: -0.02 to -0.035 ms (0.359,
#   run f686361-x4), below the unfused path's 0.346-0.352; after part a's level result, more likely level too.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(moe_block_ep4|moe_pick)$" CTEST_TIMEOUT=200 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s26.sh b'
# part c (2 GPUs): the model's flash attention call without cu_seqlens (mk_attn_fwd_args: both NULL for one
#   sequence), which removes a pageable host-to-device copy from the stream before every attention call of
#   mk_model_gpu: the layer at TP = EP = 2 (both presets, prefill and --decode one), this build against 4c6c4d3's (old_build, carried as
#   .carry/old-4c6c4d3) in turns, twice. Prediction: the decode attention block -2 to -5 us on both paths, the
#   rest level. Measured (run 8c30d48-x2): Qwen3 decode -2 to -5 us, Mixtral decode level, prefill -0.02 ms.
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R ^test_(flash_attn|model_gpu|model_gpu_unfused_2|model_gpu_fused_1|model_gpu_fused_2|model_gpu_sp_agree_2|model_gpu_agree_mixtral_flash_2|model_gpu_prefill)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s26.sh c'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
STEP_GREP="$STEP_GREP|phases"
[ "$PART" = a ] && moe_turns sk_g12 "--shape 256,4096,8,2,14336 --shape 128,4096,8,2,14336" MK_MOE_G12_SKINNY 1 0
[ "$PART" = b ] && moe_turns sk_g12 "--shape 128,4096,8,2,14336 --shape 16,4096,8,2,14336" MK_MOE_G12_SKINNY 1 0
if [ "$PART" = c ]; then
  REPO=$(cd ../.. && pwd)
  old_build 4c6c4d3
  for v in new old newb oldb; do
    b=$BIN
    case $v in old*) b=$OB ;; esac
    layer "layer_$v" "$b"
  done
fi
