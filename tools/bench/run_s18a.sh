#!/usr/bin/env bash
# tools/bench/run_s18a.sh — session 18, 4 x H200: the sequence-parallel layer (MK_LAYER_SP, model_gpu.c) against
# the tensor-parallel one (MK_LAYER_SP=0), both presets, fused and unfused in turns; then the AG+GEMM and GEMM+RS
# ops alone at the layer's shapes (Mixtral q: 8192 x 1024 x 4096, O: 8192 x 4096 x 1024; Qwen3 q: 8192 x 1024 x
# 2048, O: 8192 x 2048 x 1024), and the O projection's GEMM+AR that they replace. Tests under CTEST_ARGS:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R test_model_gpu_(sp_|agree_tp4$|fused_4$)" CTEST_TIMEOUT=200 CTEST_WALL=330 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s18a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
L="layer --interleave --warmup 3 --iters 10"
TAIL=8 step layer_sp 60 mk-launch -n 4 -- mk-bench $L --json "$RES/layer_sp.json"
TAIL=8 step layer_tp 60 env MK_LAYER_SP=0 mk-launch -n 4 -- mk-bench $L --json "$RES/layer_tp.json"
for s in "ag_gemm --m 8192 --n 1024 --k 4096" "gemm_rs --m 8192 --n 4096 --k 1024" "gemm_ar --m 8192 --n 4096 --k 1024" \
         "ag_gemm --m 8192 --n 1024 --k 2048" "gemm_rs --m 8192 --n 2048 --k 1024"; do
  set -- $s
  TAIL=4 step "${1}_$5_$7" 30 mk-launch -n 4 -- mk-bench $s --interleave --json "$RES/${1}_$5_$7.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
