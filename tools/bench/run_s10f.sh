#!/usr/bin/env bash
# tools/bench/run_s10f.sh — session 10, sixth GPU call (4 x H200): the review's bench changes (one timing entry for
# any number of callables in turns; the layer's parts in groups, one loop) on the GPU: gemm --interleave, layer
# both ways, gemm_ar --interleave:
#   MK_CALL_LIMIT=240 CTEST_ARGS="-R test_bench_layer_batch" CTEST_TIMEOUT=120 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s10f.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_|layer)|^gemm|fused on|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
TAIL=4 step gemm_il 30 mk-bench gemm --interleave --shape 8192x8192x7168
TAIL=12 step layer 60 mk-launch -n 4 -- mk-bench layer --preset qwen3 --decode batch --warmup 3 --iters 10
TAIL=12 step layer_il 60 mk-launch -n 4 -- mk-bench layer --preset qwen3 --decode batch --warmup 3 --iters 10 --interleave
step ar_il 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 4096 --interleave
echo "end at $(( $(date +%s) - T0 )) s"
