#!/usr/bin/env bash
# tools/bench/run_s12c.sh — session 12, third GPU call (4 x H200): the idle-warpgroup skip of the GEMM core
# (branch wgskip, MK_GEMM_WG_SKIP) re-merged and measured on a fixed routing draw (--seed 7: a slow-mode draw of
# (128, 4096, 8), run 85f8146), on and off in turns, then every default bench (async-TP merged, plots):
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_gemm$|test_gemm_grouped|test_moe_block|test_fused_(ag|rs|ar)_4$|test_model_gpu_fused_4$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=230 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s12c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
D="--shape 128,4096,8,2,14336 --shape 16,4096,8,2,14336 --shape 128,2048,128,8,768 --shape 128,7168,256,8,2048"
for i in 1 2; do
  for v in 1 0; do
    TAIL=12 step wg${v}_$i 30 env MK_GEMM_WG_SKIP=$v mk-launch -n 4 -- mk-bench moe --breakdown --seed 7 $D --path fused
  done
done
step layer_dec_wg1 40 env MK_GEMM_WG_SKIP=1 mk-launch -n 4 -- mk-bench layer --preset mixtral --decode batch --path fused --seed 7 --warmup 3 --iters 20
step layer_dec_wg0 40 env MK_GEMM_WG_SKIP=0 mk-launch -n 4 -- mk-bench layer --preset mixtral --decode batch --path fused --seed 7 --warmup 3 --iters 20
. "$REPO/tools/bench/bench_defaults.sh"
echo "end at $(( $(date +%s) - T0 )) s"
