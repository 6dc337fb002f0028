#!/usr/bin/env bash
# tools/bench/run_s6a.sh — session 6, first GPU call (4 x H200), after the tests of the moeskinny merge and
# of session 5's unrun changes (gpu-check.sh's ctest):
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R test_gemm_skinny|test_moe_block$|test_moe_block_ep4$|test_moe_block_skinny|test_moe_pick|test_fused_ar|test_model_gpu_prefill" \
#     CTEST_TIMEOUT=180 CTEST_WALL=260 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s6a.sh'
# 1. MoE decode shapes at MK_MOE_SKINNY 0 / 1 / 2 / 0 (next_moeskinny.sh);
# 2. the layer decode (Mixtral, Qwen3; batch 64) at MK_MOE_SKINNY 0 / 1 / 2;
# 3. GEMM+AR at M = 16 / 100 / 128 (the small-M path's baseline for the epoch fold and M = 100).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
bash "$REPO/tools/bench/next_moeskinny.sh"
STEP_GREP='^\[0\] (gemm_|moe|layer|\{|  T=|    phases)|^gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh" # env, T0, LIMIT, step
for v in 0 1 2; do
  for preset in mixtral qwen3; do
    TAIL=14 step layer_${preset}_sk$v 40 env MK_MOE_SKINNY=$v mk-launch -n 4 -- mk-bench layer \
      --preset $preset --decode batch --batch 64 --context 4096 --tokens 1024 --warmup 5 --iters 20 \
      --json "$RES/layer_${preset}_sk$v.json"
  done
done
step ar_small 30 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 100 --m 128 --warmup 50 --iters 200 --json "$RES/ar_small.json"
echo "end at $(( $(date +%s) - T0 )) s"
