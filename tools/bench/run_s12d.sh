#!/usr/bin/env bash
# tools/bench/run_s12d.sh — session 12, third and fourth GPU calls on 2 x H200 (the 4-GPU kind was not lent any more): the
# idle-warpgroup skip of the GEMM core (MK_GEMM_WG_SKIP) on and off in turns, MoE decode shapes at EP = 2 on a
# fixed routing draw (--seed 7), and decode-like grouped GEMMs on one GPU (run cac236a looped 1 and 0, run 4d8f7f6
# -1 (the default) and 0, each as committed there):
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_gemm$|test_gemm_grouped|test_moe_block$|test_fused_(ag|rs|ar)_2$|test_model_gpu_fused_2$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s12d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
D="--shape 128,4096,8,2,14336 --shape 16,4096,8,2,14336 --shape 64,4096,8,2,14336 --shape 128,2048,128,8,768"
for i in 1 2; do
  for v in -1 0; do
    TAIL=12 step wg${v}_$i 30 env MK_GEMM_WG_SKIP=$v mk-launch -n 2 -- mk-bench moe --breakdown --seed 7 $D --path fused
  done
done
G="--groups 8 --shape 600x28672x4096 --shape 600x4096x14336 --shape 1100x28672x4096"
for v in 1 0 -1; do step gg$v 30 env MK_GEMM_WG_SKIP=$v mk-bench gemm --seed 7 $G --path fused; done
echo "end at $(( $(date +%s) - T0 )) s"
