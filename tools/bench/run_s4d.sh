#!/usr/bin/env bash
# tools/bench/run_s4d.sh — session 4, last GPU call (4 x H200): the merged work of branches fauto
# (transfer mode by shape, #6), moedec (MoE decode start-up, split-K AUTO, #7) and smallm (skinny GEMM
# for M <= 64) after their tests (run by gpu-check.sh's ctest first), time-guarded (LIMIT, default 250 s):
#   CTEST_ARGS="-R test_fused|test_moe|test_gemm|test_serve_gpu_4x1_fused|test_model_gpu_fused_4|test_model_gpu_agree_tp4" \
#     CTEST_WALL=220 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s4d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh" # env, LIMIT (250 s), step
for op in ag_gemm gemm_rs gemm_ar; do step ${op}_auto 60 mk-launch -n 4 -- mk-bench $op --json "$RES/${op}_h200x4.json"; done
step gemm_small 40 mk-bench gemm --shape 16x8192x7168 --shape 64x8192x7168 --shape 64x4096x1024 --interleave --warmup 50 \
  --iters 200 --json "$RES/gemm_small.json"
step ar_small 40 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 64 --warmup 50 --iters 200 --json "$RES/ar_small.json"
TAIL=30 step layer 90 mk-launch -n 4 -- mk-bench layer --decode batch --warmup 3 --iters 10 --json "$RES/layer_h200x4.json"
S="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
TAIL=30 step moe_decode 60 mk-launch -n 4 -- mk-bench moe --breakdown $S --json "$RES/moe_decode.json"
TAIL=12 step moe_big 60 mk-launch -n 4 -- mk-bench moe --shape 4096,4096,8,2,14336 --shape 4096,2048,128,8,768 \
  --shape 8192,7168,256,8,2048 --json "$RES/moe_big.json"
for op in ag_gemm gemm_rs; do
  step torch_$op 40 mk-launch -n 4 -- python3 "$REPO/tools/bench/torch_async_tp.py" --op $op --merge "$RES/${op}_h200x4.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
