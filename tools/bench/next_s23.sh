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
# part e (2 GPUs): the dispatch's rows sent beside the count exchange (MK_MOE_SEND_EARLY=1, the default) against after
#   it (=0), in turns (1, 0, 1, 0), the decode shapes, --seed 7 --breakdown; then the defaults: mk-bench moe at its 9
#   shapes and (256, 4096, 8), and the layer (both presets, --warmup 20). Prediction: `sent` moves from ~10 us after
#   `counts` to about `counts`, g1_first 5-10 us earlier, every decode block 5-10 us shorter ((16, 2048, 128)
#   0.214 -> ~0.205 ms), prefill unchanged (serial schedule: the old order).
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_(moe_pick|moe_block|model_gpu_fused_2|model_gpu_sp_agree_2|model_gpu_agree_mixtral_flash_2)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=260 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s23.sh e'
# part a (2 GPUs): A's valid rows only (16-row boxes) in decode tiles of <= 48 rows (MK_GEMM_A_ROWS16=1, default)
#   against the 64-row box (=0), in turns (1, 0, 1, 0), the decode shapes, --seed 7 --breakdown; then the defaults
#   (mk-bench moe, its 9 shapes, and the layer). Prediction: the decode GEMMs stream at 3.3-3.9 TB/s of weights
#   with 24 KB a k-step through L2 (16 KB of weights, 8 KB of A) at ~5-5.6 TB/s L2 -> SM; with 17-18 KB a k-step
#   they move toward the DRAM rate (~4.3 TB/s): E = 128 T = 16 GEMM1 0.104 -> 0.085-0.095 ms, E = 8 T = 16 GEMM1
#   0.25 -> 0.22-0.24, the blocks 5-10 % shorter; T = 128 at E = 8 (64 rows an expert: the 64-row box) unchanged.
#   Measured at 1902eea (run 1902eea-x2): 2-9 % slower at E = 128 and 256, level at E = 8; reverted, so the part needs
#   that commit (MK_GEMM_A_ROWS16 is not in later trees).
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_(gemm|gemm_grouped|moe_pick|moe_block|model_gpu_fused_2)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=300 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s23.sh a'
# part n (2 GPUs): the session's defaults across node groups, 2 nodes x 1 GPU through the loopback proxy (the swapped
#   gate/up GEMM is the default there too at ~128-160 rows an expert; the early send is not: one node group only):
#   test_moe_block on 2 x 1, and mk-bench moe at (256, 4096, 8) and (16, 4096, 8), swapped (default) and core.
#   MK_CALL_LIMIT=330 CTEST_ARGS="-R ^test_moe_block$" CTEST_TIMEOUT=200 CTEST_WALL=120 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s23.sh n'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-v}
# turns PREFIX VAR "SHAPES" A B: mk-bench moe --breakdown with VAR=A, VAR=B, then both again, logs PREFIX<value>[b]
turns() {
  local pre=$1 var=$2 shapes=$3 a=$4 b=$5 v
  STEP_GREP="$STEP_GREP|phases"
  for v in "$a" "$b" "${a}b" "${b}b"; do
    # shellcheck disable=SC2086
    TAIL=14 step "$pre$v" 60 env "$var=${v%b}" mk-launch -n "$G" -- mk-bench moe $shapes --iters 20 --seed 7 \
      --breakdown --json "$RES/$pre$v.json"
  done
}
# defaults: mk-bench moe at its 9 shapes, then the layer (both presets, --warmup 20)
defaults() {
  TAIL=12 step "moe_h200x${G}" 120 mk-launch -n "$G" -- mk-bench moe --iters 20 --seed 7 --json "$RES/moe_h200x${G}.json"
  [ "${1:-}" = 256 ] && TAIL=4 step "moe256_h200x${G}" 40 mk-launch -n "$G" -- mk-bench moe --shape 256,4096,8,2,14336 \
    --iters 20 --seed 7 --json "$RES/moe256_h200x${G}.json"
  TAIL=30 step "layer_h200x${G}" 200 mk-launch -n "$G" -- mk-bench layer --interleave --warmup 20 --iters 20 --seed 7 \
    --json "$RES/layer_h200x${G}.json"
}
DEC="--shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336"
if [ "$PART" = v ]; then
  turns moe_sk MK_MOE_SKINNY "--shape 256,4096,8,2,14336 --shape 320,4096,8,2,14336 --shape 128,4096,8,2,14336" 0 192
fi
if [ "$PART" = e ]; then
  turns moe_dec_se MK_MOE_SEND_EARLY "$DEC --shape 256,4096,8,2,14336 --shape 16,7168,256,8,2048" 1 0
  defaults 256
fi
if [ "$PART" = a ]; then
  turns moe_dec_a MK_GEMM_A_ROWS16 "$DEC --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048" 1 0
  defaults
fi
if [ "$PART" = n ]; then
  STEP_GREP="$STEP_GREP|phases|passed|FAIL|rank . .*differ"
  TAIL=12 step test_moe_block_2x1 200 mk-launch -n 2 --nodes 2 -- ./test_moe_block
  for v in sk_def sk0; do
    envs=()
    [ $v = sk0 ] && envs=(MK_MOE_SKINNY=0)
    TAIL=8 step "moe_2x1_$v" 60 env "${envs[@]}" mk-launch -n 2 --nodes 2 -- mk-bench moe --shape 256,4096,8,2,14336 \
      --shape 16,4096,8,2,14336 --iters 20 --seed 7 --breakdown --json "$RES/moe_2x1_$v.json"
  done
fi
echo "part $PART end at $(( $(date +%s) - T0 )) s"
