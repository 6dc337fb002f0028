#!/usr/bin/env bash
# tools/bench/next_skinny128.sh — branch skinny128 (issue #6: GEMM+AR at M = 128): the small-M GEMM
# with T = 128 (M up to 128) against the core and cuBLASLt at 128 and 100 x 8192 x 7168, and
# GEMM+AR at M = 16, 64, 128 (M = 128 now on the small-M path in auto); then M = 128 at
# MK_GEMM_SKINNY_BN = 128 for both (every CTA reads all the tokens: BN = 128 halves that traffic).
# Run (4 x H200) after gpu-check.sh's build and tests:
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R test_gemm_skinny|test_fused_ar" CTEST_WALL=270 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_skinny128.sh'
# Predictions: docs/perf/NOTES.md, gemm section, "Version 9: T = 128".
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh" # env, T0, LIMIT, step
echo "LIMIT $LIMIT s"
for sk in 1 0; do
  TAIL=20 step gemm128_sk$sk 40 env MK_GEMM_SKINNY=$sk mk-bench gemm --shape 128x8192x7168 --shape 100x8192x7168 \
    --interleave --warmup 50 --iters 200 --json "$RES/gemm128_sk$sk.json"
done
TAIL=20 step gemm128_bn128 40 env MK_GEMM_SKINNY=1 MK_GEMM_SKINNY_BN=128 mk-bench gemm --shape 128x8192x7168 \
  --shape 100x8192x7168 --interleave --warmup 50 --iters 200 --json "$RES/gemm128_bn128.json"
step ar128 45 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 64 --m 128 --warmup 50 --iters 200 \
  --json "$RES/ar128.json"
step ar128_bn128 45 env MK_GEMM_SKINNY_BN=128 mk-launch -n 4 -- mk-bench gemm_ar --m 128 --warmup 50 --iters 200 \
  --json "$RES/ar128_bn128.json"
echo "end at $(( $(date +%s) - T0 )) s"
