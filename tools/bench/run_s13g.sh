#!/usr/bin/env bash
# tools/bench/run_s13g.sh — session 13, seventh GPU call, on 2 x H200: the layer benchmark (Mixtral- and Qwen3-sized layers,
# TP = EP = 2, prefill 8192 and decode batch 64) with this session's MoE defaults, then with GEMM1 / GEMM2 claims off
# (MK_MOE_GEMM1_CLAIM=0: fixed tiles on SMs - 16, as before session 13):
#   MK_CALL_LIMIT=360 CTEST_ARGS="-R test_layers_moe_dec|test_model_gpu_agree_mixtral_flash_2" CTEST_TIMEOUT=120 \
#     CTEST_WALL=150 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s13g.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
# ORDER (default "1 0"): run e79ed61 ran 1 then 0; run <next> ran ORDER="0 1 0 1" to see the order's effect
for v in ${ORDER:-1 0}; do
  i=$(( ${i:-0} + 1 ))
  TAIL=40 step layer_claim${v}_$i 90 env MK_MOE_GEMM1_CLAIM=$v mk-launch -n 2 -- mk-bench layer --decode batch --warmup 3 \
    --iters 10 --json "$RES/layer_h200x2_claim${v}_$i.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
