#!/usr/bin/env bash
# tools/bench/run_s6b.sh — session 6, second GPU call (4 x H200; ran at 2a5f721, where next_wgskip.sh exists: the
# wgskip merge was reverted after this run, so rerun it at that commit), after the tests of the wgskip / arfold
# merges and the MoE count-exchange change (gpu-check.sh's ctest):
#   MK_CALL_LIMIT=520 CTEST_ARGS="-R test_gemm$|test_gemm_grouped|test_gemm_skinny$|test_moe_block$|test_moe_block_ep4$|test_moe_block_2x2|test_fused" \
#     CTEST_TIMEOUT=180 CTEST_WALL=230 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s6b.sh'
# 1. next_wgskip.sh (MoE decode shapes at MK_GEMM_WG_SKIP 1 / 0 / 1 with --breakdown: also the count
#    exchange's phase against run 109be99; Mixtral layer decode; GEMM tails);
# 2. the MoE decode shapes with 32 dispatch / combine CTAs (--comm-ctas 32; default 16);
# 3. next_arfold.sh (small-M GEMM+AR phases, epoch advance in the kernel).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
if [ -f "$REPO/tools/bench/next_wgskip.sh" ]; then bash "$REPO/tools/bench/next_wgskip.sh"; else echo "next_wgskip.sh: only at 2a5f721 (branch wgskip)"; fi
STEP_GREP='^\[0\] (gemm_|moe|layer|\{|  T=|    phases)|^gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh" # env, T0, LIMIT, step
S="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
TAIL=30 step moe_dec_cc32 30 mk-launch -n 4 -- mk-bench moe --breakdown $S --path fused --comm-ctas 32 --json "$RES/moe_dec_cc32.json"
[ -f "$REPO/tools/bench/next_arfold.sh" ] && bash "$REPO/tools/bench/next_arfold.sh"
echo "end at $(( $(date +%s) - T0 )) s"
