#!/usr/bin/env bash
# tools/bench/run_s14f.sh — session 14, on 4 x H200 (lent late in the session): every default bench (bench_defaults.sh:
# AG / RS / AR, MoE --breakdown, layer, async-TP merged, plots), AG+GEMM's widths (MK_FUSED_AG_WIDTHS 1 / 0) in turns at
# M = 2048, and the MoE decode shapes with the dynamic claims on / off (MK_MOE_GEMM1_CLAIM, session 13) at EP = 4:
#   MK_CALL_LIMIT=450 CTEST_ARGS="-R test_fused_ag_(4|ce_4|auto_4)|test_fused_(rs|ar)_4$|test_model_gpu_fused_4$" \
#     CTEST_TIMEOUT=120 CTEST_WALL=150 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s14f.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_|moe|layer|\{|  T=)|fused on|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
. "$REPO/tools/bench/bench_defaults.sh"
for v in 1 0; do
  TAIL=4 step ag_w$v 30 env MK_FUSED_AG_WIDTHS=$v mk-launch -n 4 -- mk-bench ag_gemm --m 2048 --interleave \
    --json "$RES/ag_w$v.json"
done
D="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
for v in 1 0; do
  STEP_GREP='^\[0\]   T=' TAIL=8 step dec_claim$v 60 env MK_MOE_GEMM1_CLAIM=$v mk-launch -n 4 -- mk-bench moe --seed 7 $D \
    --json "$RES/moe_dec_claim$v.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
