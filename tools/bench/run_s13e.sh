#!/usr/bin/env bash
# tools/bench/run_s13e.sh — session 13, fifth GPU call, on 2 x H200: after the core's unit loop changed (dynamic claims
# beside the fixed walk), the GEMM tests and 2-GPU fused tests, and the plain GEMM against cuBLASLt in turns (the
# shapes of run 85f8146's gemm_epi1, one GPU) to check the fixed walk did not slow down:
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_gemm$|test_gemm_skinny|test_gemm_grouped|test_fused_(ag|rs|ar)_2$|test_fused_ar_sk2_2|^test_moe_block$|test_model_gpu_(fused|unfused)_2$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=300 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s13e.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
G="--shape 2048x7168x8192 --shape 2048x2560x8192 --shape 1024x8192x7168 --shape 8192x8192x7168"
step gemm 40 mk-bench gemm --interleave $G --json "$RES/gemm_interleave.json"
echo "end at $(( $(date +%s) - T0 )) s"
