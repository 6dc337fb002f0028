#!/usr/bin/env bash
# tools/bench/run_s12a.sh — session 12, first GPU call (4 x H200): the staged epilogue for the SwiGLU
# gate/up GEMM (MoE) and for tile widths 224 / 160 (half slab, one ring stage less), each against the
# direct epilogue (MK_GEMM_EPI=0) in the same call; then the decode O projection's GEMM+AR
# (64 x 4096 x 1024) with and without the skinny kernel's split-K:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_gemm$|test_gemm_grouped|test_moe_block$|test_moe_block_ep4|test_layers_moe_dec|test_fused_ag_4$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=260 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s12a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_|moe|\{|  T=|  +phases)|^gemm|  +(g1|g2|phases)|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
G="--shape 2048x7168x8192 --shape 2048x2560x8192 --shape 1024x8192x7168 --shape 8192x8192x7168"
step gemm_epi1 40 mk-bench gemm --interleave $G --json "$RES/gemm_epi1.json"
step gemm_epi0 40 env MK_GEMM_EPI=0 mk-bench gemm --interleave $G --json "$RES/gemm_epi0.json"
S="--shape 4096,4096,8,2,14336 --shape 4096,2048,128,8,768 --shape 8192,7168,256,8,2048 --shape 128,4096,8,2,14336"
TAIL=40 step moe_epi1 70 mk-launch -n 4 -- mk-bench moe --breakdown --seed 7 $S --json "$RES/moe_epi1.json"
TAIL=40 step moe_epi0 70 env MK_GEMM_EPI=0 mk-launch -n 4 -- mk-bench moe --breakdown --seed 7 $S --path fused
step ag2048_epi1 30 mk-launch -n 4 -- mk-bench ag_gemm --m 2048
step ag2048_epi0 30 env MK_GEMM_EPI=0 mk-launch -n 4 -- mk-bench ag_gemm --m 2048 --path fused
D="--m 64 --n 4096 --k 1024"
step oproj 25 mk-launch -n 4 -- mk-bench gemm_ar $D --breakdown
step oproj_c64 25 env MK_FUSED_AR_SKINNY_CTAS=64 mk-launch -n 4 -- mk-bench gemm_ar $D --breakdown --path fused
step oproj_c64_one 25 env MK_FUSED_AR_SKINNY_CTAS=64 MK_FUSED_AR_SKINNY_TWO_M=0 mk-launch -n 4 -- mk-bench gemm_ar $D --breakdown --path fused
step oproj_bn128 25 env MK_GEMM_SKINNY_BN=128 mk-launch -n 4 -- mk-bench gemm_ar $D --breakdown --path fused
step oproj_b20 25 mk-launch -n 4 -- mk-bench gemm_ar $D --batch 20
step oproj_c64_b20 25 env MK_FUSED_AR_SKINNY_CTAS=64 mk-launch -n 4 -- mk-bench gemm_ar $D --batch 20 --path fused
echo "end at $(( $(date +%s) - T0 )) s"
