#!/usr/bin/env bash
# next_s22.sh — the GPU runs session 21 owes (docs/perf/NOTES.md, moe "Session 21"), on 4 GPUs in one node group
# (nvidia-h200-x4; the kind was withdrawn mid-session 21). Run through tools/gpu-check.sh from the repository root:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_(moe_block|moe_block_ep4|moe_pick|plan_cache|model_gpu_(unfused|fused)_4|model_gpu_agree_tp4|model_gpu_sp_agree_tp4)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=300 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s22.sh a'
# part a: the defaults at e5dd77b and later (GEMM2 beside GEMM1 where I W / (W - 1) < 1280, cuBLASLt plans per
#   4 buckets of M a doubling), side by side fused / unfused:
#   1. mk-bench moe at its 9 shapes (issue 7's table). Predictions: fused as run 0bcc239 (E = 128 prefill 0.94 ms);
#      unfused as run 86af083 (exact plans; the bench's routing is fixed), so (128, 4096, 8) still ~6 % behind.
#   2. the layer, both presets, --warmup 20 (the unfused path makes plans over its first ~10 calls: run
#      e5dd77b-x2). Predictions: the unfused layer at its blocks' sum; Mixtral decode fused / unfused ~0.93
#      (0.90 at 2 GPUs), Qwen3 decode ~0.75-0.8; prefill blocks' bound ratios as 0bcc239 (attention 1.15 / 1.22,
#      MoE 1.10 / 1.5).
# part b (8 GPUs, nvidia-h200-x8, when lent): tools/bench/next_s20.sh's calls 1-4 (issue 11).
# part x (2 GPUs, nvidia-h200-x2: only 1- and 2-GPU kinds lent at session 22's start): the decode shapes at EP = 2,
#   --seed 7 --breakdown, by default, with both grouped GEMMs at 128- and at 256-wide tiles (MK_MOE_TILE_N), and the
#   fused path from CUDA-graph replays (--graph; unfused eager). (256, 4096, 8) at EP = 2 gives each expert ~128 rows,
#   the per-expert GEMMs of issue 7's (128, 4096, 8) at EP = 4. Predictions (docs/perf/NOTES.md moe, session 22):
#   E = 128 decode GEMM1 is wave-quantised at 256-wide tiles (1 MB of weights a tile, 2.9 waves at EP = 2), so
#   128-wide tiles cut its phase by 10-25 %; E = 8 unchanged (split-K already fills the SMs); the graph removes
#   the host's launch gap, 10-25 us a call.
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R ^test_(moe_pick|moe_block|moe_block_grouped|plan_cache)$" CTEST_TIMEOUT=150 \
#     CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s22.sh x'
# part s (2 GPUs): the gate/up GEMM swapped (MK_MOE_SKINNY=1) against the core, the same decode shapes, --breakdown,
#   then with the down GEMM at 128-wide tiles too (MK_MOE_TILE_N=128). Prediction: (256, 4096, 8) (~128 rows an
#   expert, half of them 129+) GEMM1's phase 0.36 -> 0.22-0.25 ms (one pass over the weights, 160 token columns
#   instead of two 128-row tile-rows), the block 0.645 -> ~0.52; E = 128 / 256 decode GEMM1 10-25 % shorter (the
#   weights of each unit's first stages load while its rows land, 128-row weight tiles fill the waves); E = 8 at
#   16-64 rows within 5 %. Measured at 1bdafea (one ring of both operands, 4 stages at 256-row chunks): slower where
#   the chunks are 256 rows ((256, 4096, 8) 0.657 -> 0.718 ms, GEMM1 0.39 -> 0.45), ~5 % faster at 16 rows; the
#   weights' ring was too shallow. Second version (two rings, two producer threads: 7-11 stages of weights), same
#   call; prediction: (256, 4096, 8) GEMM1 0.39 -> 0.25-0.30 ms (toward its 160-column compute, ~0.25 at the
#   capped clock), E = 128 T = 16 GEMM1 0.12 -> ~0.09.
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R ^test_(moe_pick|moe_block)$" CTEST_TIMEOUT=200 CTEST_WALL=220 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s22.sh s'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ]; then
  TAIL=20 step "moe_h200x${G}" 200 mk-launch -n "$G" -- mk-bench moe --iters 20 --json "$RES/moe_h200x${G}.json"
  TAIL=30 step "layer_h200x${G}" 240 env MK_DEBUG=INFO MK_DEBUG_SUBSYS=KERNEL mk-launch -n "$G" -- mk-bench layer \
    --interleave --warmup 20 --iters 20 --seed 7 --json "$RES/layer_h200x${G}.json" --samples "$RES/layer_h200x${G}.samples"
  grep -h "GEMMs," "$RES/layer_h200x${G}.log" | sort | uniq -c | sort -rn | head -8
fi
if [ "$PART" = x ]; then
  STEP_GREP="$STEP_GREP|phases"
  DEC="--shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336
    --shape 256,4096,8,2,14336 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
  for v in def tn128 tn256 graph; do
    envs=() flags=()
    case $v in tn128) envs=(MK_MOE_TILE_N=128) ;; tn256) envs=(MK_MOE_TILE_N=256) ;; graph) flags=(--graph) ;; esac
    # shellcheck disable=SC2086
    TAIL=16 step "moe_dec_$v" 75 env "${envs[@]}" mk-launch -n "$G" -- mk-bench moe $DEC --iters 20 --seed 7 \
      --breakdown "${flags[@]}" --json "$RES/moe_dec_$v.json"
  done
fi
if [ "$PART" = s ]; then
  STEP_GREP="$STEP_GREP|phases"
  DEC="--shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336
    --shape 256,4096,8,2,14336 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
  for v in sk0 sk1 sk1tn128; do
    envs=(MK_MOE_SKINNY=${v:2:1})
    case $v in *tn128) envs+=(MK_MOE_TILE_N=128) ;; esac
    # shellcheck disable=SC2086
    TAIL=16 step "moe_dec_$v" 75 env "${envs[@]}" mk-launch -n "$G" -- mk-bench moe $DEC --iters 20 --seed 7 \
      --breakdown --json "$RES/moe_dec_$v.json"
  done
fi
# part f (2 GPUs): the defaults after part s (MK_MOE_TILE_N=-1: 128-wide grouped GEMM tiles for decode-sized handles
#   whose experts expect <= 64 rows; the swapped gate/up GEMM off), mk-bench moe at its 9 shapes and (256, 4096, 8),
#   then the layer, both presets, --warmup 20. Predictions: fused E = 128 decode 0.232 / 0.260 -> ~0.218 / 0.252 ms,
#   E = 8 decode 0.444 / 0.466 -> ~0.424 / 0.452 (parts x, s), the rest as run 6c2b7fa-x2; the layer's decode MoE
#   blocks 3-5 % faster.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(moe_pick|moe_block|moe_block_grouped|layers_moe_dec|model_gpu_(fused|agree)_2)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=240 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s22.sh f'
if [ "$PART" = f ]; then
  TAIL=12 step "moe_h200x${G}" 150 mk-launch -n "$G" -- mk-bench moe --iters 20 --seed 7 --json "$RES/moe_h200x${G}.json"
  TAIL=4 step "moe256_h200x${G}" 40 mk-launch -n "$G" -- mk-bench moe --shape 256,4096,8,2,14336 --iters 20 --seed 7 \
    --json "$RES/moe256_h200x${G}.json"
  TAIL=30 step "layer_h200x${G}" 200 mk-launch -n "$G" -- mk-bench layer --interleave --warmup 20 --iters 20 --seed 7 \
    --json "$RES/layer_h200x${G}.json"
fi
echo "part $PART end at $(( $(date +%s) - T0 )) s"
