#!/usr/bin/env bash
# tools/bench/run_s5c.sh — session 5, third GPU call (4 x H200): the small-M AR epilogue's single fence
# (1068679), skinny T = 128 (branch skinny128) where merged, a diagnosis of test_model_gpu_agree_tp4's
# olmoe unfused failure in run 5f41751 (prefill rel err 0.0352 with seed 1819841652413809; the CPU
# bf16-faithful reference gives 0.0026 on that model, no routing near tie), then the default-shape
# benches whose JSON goes under docs/perf/ for issues #6, #7, #9:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R test_fused_ar|test_fused$|test_gemm_skinny|test_model_gpu_prefill|test_model_gpu_agree_tp4$|test_model_gpu_fused_4|test_serve_gpu_4x1_fused" \
#     CTEST_TIMEOUT=150 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s5c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[.\] rank .: (olmoe|unfused path|fused path)|FAIL|rror|seed'
TAIL=24
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
# 1. olmoe: the failing seed again (the same model: rank 0's seed + 3 for olmoe in "all"), then fresh seeds,
#    unfused only, with the SM gather on (default) and off (it is created on both paths).
step olmoe_seed 40 env MK_TEST_SEED=1819841652413809 mk-launch -n 4 -- test_model_gpu all unfused 4
for i in 1 2 3; do step olmoe_fresh$i 20 mk-launch -n 4 -- test_model_gpu olmoe unfused 4; done
step olmoe_seed_nogather 40 env MK_TEST_SEED=1819841652413809 MK_TP_GATHER_SM=0 mk-launch -n 4 -- test_model_gpu all unfused 4
[ -x "$REPO/tools/bench/next_skinny128.sh" ] && bash "$REPO/tools/bench/next_skinny128.sh"
STEP_GREP='^\[0\] (ag_|gemm_|moe|layer|\{|  T=)|fused on|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
# 2. Default shapes, defaults (JSON for docs/perf): the fused ops with async-TP merged, the MoE block, the layer.
. "$REPO/tools/bench/bench_defaults.sh" # (layer: 90 s in the run of bc5bc01, 60 s since)
echo "end at $(( $(date +%s) - T0 )) s"
