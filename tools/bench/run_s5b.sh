#!/usr/bin/env bash
# tools/bench/run_s5b.sh — session 5, second GPU call (4 x H200): branches skinny2 (64-row skinny GEMM,
# small-M GEMM+AR epilogue, split-K fix-up flags) and moedisp (MoE decode dispatch) merged, with the
# defaults of f8fec44 (decode-sized MoE handle, SM gather, split-K AUTO at 64..256 rows), after their tests:
#   MK_CALL_LIMIT=575 CTEST_ARGS="-R test_gemm|test_fused_ar|test_fused$|test_moe_block|test_model_gpu_fused|test_model_gpu_agree" \
#     CTEST_TIMEOUT=150 CTEST_WALL=300 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s5b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
bash "$REPO/tools/bench/next_moedisp.sh"
bash "$REPO/tools/bench/next_skinny2.sh"
STEP_GREP='^\[0\] (layer|\{)|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
# The layer at decode with today's defaults, and with the row-parallel GEMM+AR of M = 64 forced onto the
# small-M (skinny) path (MK_GEMM_SKINNY=1; auto keeps 4096 x 1024 on the reducer path).
for sk in -1 1; do
  TAIL=14 step layer_dec_sk$sk 45 env MK_GEMM_SKINNY=$sk mk-launch -n 4 -- mk-bench layer --decode batch --batch 64 \
    --context 4096 --tokens 1024 --warmup 5 --iters 20 --path fused,unfused --json "$RES/layer_dec_sk$sk.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
