#!/usr/bin/env bash
# next_s24.sh — session 24's GPU runs (docs/perf/NOTES.md, moe "Session 24"). Run through tools/gpu-check.sh from the
# repository root.
# part d (2 GPUs, nvidia-h200-x2): where the E = 128 prefill block's time goes at EP = 2 (issue 7's (4096, 2048, 128),
#   also the MoE block of Qwen3's layer at prefill): --seed 7 --breakdown, the default (serial, push combine, GEMM2
#   after GEMM1), the combine kernel (MK_MOE_PUSH=0: per-rank partial sums, 1/4 of the push's NVLink bytes at
#   top-k 8 on 2 ranks), GEMM2 beside GEMM1 on 49 SMs (MK_MOE_G12_SMS=49), in turns, twice; the hybrid schedule
#   once; (8192, 7168, 256) with and without push once.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_pick$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s24.sh d'
# part p (2 GPUs): where the ~0.03 ms of a call outside its exchange-start .. done stamps goes: the new phases `start`
#   (the call's first kernel) and `end` (its last), --breakdown at the decode shapes and the E = 128 prefill; the same
#   shapes with --batch 10 (calls back to back, the unfused path's host syncs out of the fused call's way); the E = 128
#   prefill with the warpgroup skip (MK_GEMM_WG_SKIP=1) and with the combine kernel (MK_MOE_PUSH=0, its reduce now on
#   up to 1024 CTAs in one node group), in turns, twice.
#   MK_CALL_LIMIT=330 CTEST_ARGS="-R ^test_moe_block$" CTEST_TIMEOUT=120 CTEST_WALL=130 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s24.sh p'
# part q (2 GPUs): the plan with one slot atomicAdd per warp and destination rank (was one per token), and the stamps
#   `start` (now the plan's) and `d_start` (the dispatch's first CTA): --breakdown at the decode shapes, and the E = 128
#   and E = 8 prefill twice. Prediction: at T = 4096 the plan's ~0.03 ms (start -0.030) -> <= 0.01, the block -0.02 ms.
#   MK_CALL_LIMIT=330 CTEST_ARGS="-R ^test_(moe_pick|moe_block|model_gpu_fused_2)$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s24.sh q'
# part g (2 GPUs): the down GEMM as the gate/up GEMM's programmatic dependent at decode (MK_MOE_G12_DECODE=1) against
#   one after the other (=0), in turns (1, 0, 1, 0), --seed 7 --breakdown, at the decode shapes it applies to (no
#   split-K: E = 128 and 256). Prediction: GEMM1's tail and the kernel boundary (`g1_last` -> `g2_first`, ~0.03 ms at
#   E = 128) overlap GEMM2's first tiles: E = 128 blocks -0.01 to -0.02 ms (0.214 -> ~0.20 at T = 16).
#   MK_CALL_LIMIT=360 CTEST_ARGS="-R ^test_(moe_pick|moe_block)$" CTEST_TIMEOUT=150 CTEST_WALL=160 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s24.sh g'
# part f (2 GPUs): with GEMM2 beside GEMM1's tail now the decode default (MK_MOE_G12_DECODE=1): the decode shapes
#   --breakdown with the new stamp `prev_end` (the previous call's last kernel: the gap between calls), and GEMM1's
#   L2 prefetch while rows are in flight at -1 (auto: now 8 k-blocks at 128-wide decode tiles, was 6), 16, 32 and 6
#   k-blocks, then -1 and 32 again. Prediction: 16-32 k-blocks (17-34 MB of the first tiles' weights fetched during
#   the ~10 us between GEMM1's claims and the rows) take 3-6 us off the E = 128 decode blocks.
#   MK_CALL_LIMIT=330 CTEST_ARGS="-R ^test_(moe_pick|moe_block)$" CTEST_TIMEOUT=150 CTEST_WALL=160 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s24.sh f'
# part s (2 GPUs): the plan's pair counts in shared memory and its W slot atomics issued together, then the
#   session's defaults: --breakdown at the E = 128 / E = 8 prefill and the decode shapes; mk-bench moe at its 9
#   shapes, and the layer (both presets, --warmup 20). Prediction: the prefill plan (`start` -0.023 at T = 4096) to
#   about -0.008, the E = 128 prefill block -0.015 ms.
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_(moe_pick|moe_block|model_gpu_fused_2|model_gpu_sp_agree_2)$" \
#     CTEST_TIMEOUT=150 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s24.sh s'
# part v (2 GPUs): test_moe_block on 2 nodes x 1 GPU through the loopback proxy (the new plan across node groups);
#   then GEMM2 beside GEMM1 at prefill with no SMs of its own (MK_MOE_G12_SMS=0: its CTAs start as GEMM1's exit,
#   the decode default's rule) against one after the other (-1, the EP = 2 default at these shapes), in turns, at
#   issue 7's three prefill shapes. Prediction: E = 128 -0.02 ms (GEMM1's last of ~11 waves overlaps GEMM2's first
#   tiles; 4 x H200 session 21: 1.044 -> 0.998), E = 8 +1-2 % (session 21: 4.93 -> 5.04), E = 256 level.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_moe_pick$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s24.sh v'
# part z (2 GPUs): the session's last defaults (MK_MOE_G12_SMS=-2 now 0 at the E = 128 prefill on 2 ranks): tests,
#   --breakdown at the prefill shapes, mk-bench moe at its 9 shapes and the layer (both presets, --warmup 20).
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_(moe_pick|moe_block|model_gpu_fused_2|model_gpu_sp_agree_2)$" \
#     CTEST_TIMEOUT=150 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s24.sh z'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-d}
STEP_GREP="$STEP_GREP|phases"
# turns PREFIX VAR "SHAPES" A B: moe with VAR=A, VAR=B, then both again, logs PREFIX<value>[b]
turns() {
  local pre=$1 var=$2 shapes=$3 a=$4 b=$5 v
  for v in "$a" "$b" "${a}b" "${b}b"; do moe "$pre$v" "$shapes" "$var=${v%b}"; done
}
P128="--shape 4096,2048,128,8,768"
if [ "$PART" = d ]; then
  for r in 1 2; do
    moe "e128_def$r" "$P128"
    moe "e128_push0_$r" "$P128" MK_MOE_PUSH=0
    moe "e128_g12_$r" "$P128" MK_MOE_G12_SMS=49
  done
  moe e128_hybrid "$P128" -- --schedule hybrid
  moe e256_def "--shape 8192,7168,256,8,2048"
  moe e256_push0 "--shape 8192,7168,256,8,2048" MK_MOE_PUSH=0
fi
DEC="--shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336"
if [ "$PART" = p ]; then
  moe dec_def "$DEC --shape 16,7168,256,8,2048"
  moe dec_batch10 "$DEC" -- --batch 10
  for r in 1 2; do
    moe "e128_def$r" "$P128"
    moe "e128_skip$r" "$P128" MK_GEMM_WG_SKIP=1
    moe "e128_push0_$r" "$P128" MK_MOE_PUSH=0
  done
  moe e128_batch5 "$P128" -- --batch 5
fi
if [ "$PART" = q ]; then
  moe dec_def "$DEC --shape 16,7168,256,8,2048"
  for r in 1 2; do
    moe "pre_def$r" "$P128 --shape 4096,4096,8,2,14336"
  done
fi
if [ "$PART" = g ]; then
  turns dec_g12_ MK_MOE_G12_DECODE "--shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,7168,256,8,2048" 1 0
fi
if [ "$PART" = f ]; then
  moe dec_def "$DEC --shape 16,7168,256,8,2048"
  for v in -1 16 32 6 -1b 32b; do
    moe "dec_pf$v" "--shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,4096,8,2,14336" \
      "MK_MOE_PF_KBLOCKS=${v%b}"
  done
fi
if [ "$PART" = s ] || [ "$PART" = z ]; then
  moe pre_def "$P128 --shape 4096,4096,8,2,14336"
  moe dec_def "$DEC --shape 16,7168,256,8,2048"
  TAIL=12 step "moe_h200x${G}" 120 mk-launch -n "$G" -- mk-bench moe --iters 20 --seed 7 --json "$RES/moe_h200x${G}.json"
  TAIL=30 step "layer_h200x${G}" 200 mk-launch -n "$G" -- mk-bench layer --interleave --warmup 20 --iters 20 --seed 7 \
    --json "$RES/layer_h200x${G}.json"
fi
if [ "$PART" = v ]; then
  STEP_GREP="$STEP_GREP|passed|FAIL|rank . .*differ"
  TAIL=12 step test_moe_block_2x1 200 mk-launch -n 2 --nodes 2 -- ./test_moe_block
  turns pre_g12_ MK_MOE_G12_SMS "$P128 --shape 4096,4096,8,2,14336 --shape 8192,7168,256,8,2048" 0 -1
fi
echo "part $PART end at $(( $(date +%s) - T0 )) s"
