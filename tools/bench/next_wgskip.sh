#!/usr/bin/env bash
# tools/bench/next_wgskip.sh — branch wgskip (issues #7, #9): the GEMM core's idle warpgroup skip
# (MK_GEMM_WG_SKIP) A/B on 4 x H200, after its tests (gpu-check.sh's ctest):
#   MK_CALL_LIMIT=240 CTEST_ARGS="-R test_gemm$|test_gemm_grouped|test_moe_block$" CTEST_WALL=90 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_wgskip.sh'
# 1. MoE decode, the six shapes, fused path with the phase breakdown, at MK_GEMM_WG_SKIP 1 / 0 / 1
#    (the repeat gives the spread);
# 2. the Mixtral layer decode (batch 64) at 1 / 0;
# 3. the plain GEMM at M = 2100 and 4100 (tails of 52 / 4 rows), N = 7168, K = 8192, at 1 / 0.
# Predictions: docs/perf/NOTES.md, gemm, "Session 6: warpgroup skip".
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_|moe|layer|\{|  T=|    phases)|^gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh" # env, T0, LIMIT, step
echo "LIMIT $LIMIT s"
S="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
i=0
for v in 1 0 1; do
  i=$((i + 1))
  TAIL=30 step moe_dec_wg${v}_$i 30 env MK_GEMM_WG_SKIP=$v mk-launch -n 4 -- mk-bench moe --breakdown $S --path fused \
    --json "$RES/moe_dec_wg${v}_$i.json"
done
for v in 1 0; do
  TAIL=14 step layer_mixtral_wg$v 30 env MK_GEMM_WG_SKIP=$v mk-launch -n 4 -- mk-bench layer --preset mixtral \
    --decode batch --batch 64 --context 4096 --tokens 1024 --warmup 5 --iters 20 --json "$RES/layer_mixtral_wg$v.json"
done
for v in 1 0; do
  step gemm_tail_wg$v 20 env MK_GEMM_WG_SKIP=$v mk-bench gemm --shape 2100x7168x8192 --shape 4100x7168x8192 \
    --path fused --json "$RES/gemm_tail_wg$v.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
