#!/usr/bin/env bash
# tools/bench/run_s14g.sh — session 14, on 4 x H200, after run_s14f.sh: the 4-rank and 2 x 2 (loopback) tests of the
# MoE block, the fused ops and the model (under CTEST_ARGS: session 13's dynamic claims had run on 2 GPUs only), then
# AG / RS / AR at the default shapes with the four parts in turns (--interleave):
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_moe_block_(ep4|2x2)|test_fused_.*_(4|2nodes)$|test_model_gpu_(fused_2nodes|fused_2nodes_moedec|agree_tp4_moedec|fused_tp4)$|test_layers" \
#     CTEST_TIMEOUT=150 CTEST_WALL=300 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s14g.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
for op in ag_gemm gemm_rs gemm_ar; do
  TAIL=10 step ${op}_il 40 mk-launch -n 4 -- mk-bench $op --interleave --json "$RES/${op}_h200x4_interleave.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
