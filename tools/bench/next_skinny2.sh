#!/usr/bin/env bash
# tools/bench/next_skinny2.sh — branch skinny2 (issues #6, #9): the small-M GEMM with 64- and
# 128-row weight tiles (MK_GEMM_SKINNY_BN) A/B in one GPU call, GEMM+AR's small-M path at both,
# the layer's decode O projection (64 x 4096 x 1024) on the small-M path vs the reducer path,
# and one ncu of the 64-row kernel. Run (4 x H200) after gpu-check.sh's build and tests:
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R test_gemm|test_fused_ar|test_moe" CTEST_WALL=270 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_skinny2.sh'
# (test_gemm and test_moe: the split-K fix-up they share changed too.) Predictions: docs/perf/NOTES.md,
# gemm section, "Version 8".
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh" # env, T0, LIMIT, step
echo "LIMIT $LIMIT s"
SHAPES="--shape 16x8192x7168 --shape 64x8192x7168 --shape 64x4096x1024 --shape 16x4096x14336"
for bn in 64 128; do
  TAIL=20 step gemm_bn$bn 40 env MK_GEMM_SKINNY=1 MK_GEMM_SKINNY_BN=$bn mk-bench gemm $SHAPES --interleave \
    --warmup 50 --iters 200 --json "$RES/gemm_bn$bn.json"
done
for bn in 64 128; do
  step ar_bn$bn 35 env MK_GEMM_SKINNY_BN=$bn mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 64 --warmup 50 --iters 200 \
    --json "$RES/ar_bn$bn.json"
done
for sk in 1 0; do
  step ar_oproj_sk$sk 35 env MK_GEMM_SKINNY=$sk mk-launch -n 4 -- mk-bench gemm_ar --m 64 --n 4096 --k 1024 \
    --warmup 50 --iters 200 --json "$RES/ar_oproj_sk$sk.json"
done
NCU=/usr/local/cuda/bin/ncu
TAIL=80 STEP_GREP='.' step ncu_skinny_bn64 60 env MK_GEMM_SKINNY_BN=64 $NCU -k regex:skinny --launch-skip 10 \
  --launch-count 1 --section SpeedOfLight --section LaunchStats --section WarpStateStats \
  mk-bench gemm --shape 16x8192x7168 --path fused --warmup 5 --iters 10
echo "end at $(( $(date +%s) - T0 )) s"
