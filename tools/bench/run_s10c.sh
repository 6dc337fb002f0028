#!/usr/bin/env bash
# tools/bench/run_s10c.sh — session 10, third GPU call (4 x H200): the model / serving / layer tests the capped run of
# 4ae9bc0 left out, then the layer with --interleave (each block's fused and unfused calls in turns, at the same
# clocks), again with GEMM+AR two-shot on SM roles, and GEMM+AR at the layer's O projection with --interleave:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R test_model_gpu|test_serve_gpu|test_bench_layer|test_layers" CTEST_TIMEOUT=120 \
#     CTEST_WALL=330 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s10c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_|moe|layer|\{|  T=)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
TAIL=40 step layer_il 60 mk-launch -n 4 -- mk-bench layer --decode batch --warmup 3 --iters 10 --interleave \
  --json "$RES/layer_h200x4_interleave.json"
mk-bench plot "$RES/layer_h200x4_interleave.json" -o "$RES/layer_h200x4_interleave.png" > /dev/null 2>&1 || echo "plot failed"
step ar_o_il 25 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 4096 --k 1024 --interleave
step ar_oq_il 25 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 2048 --k 1024 --interleave
TAIL=40 step layer_il_two 60 env MK_FUSED_AR_COPY=0 MK_FUSED_AR_TWO_SHOT=1 mk-launch -n 4 -- mk-bench layer --decode batch \
  --warmup 3 --iters 10 --interleave
echo "end at $(( $(date +%s) - T0 )) s"
