#!/usr/bin/env bash
# tools/bench/run_s11d.sh — session 11, fourth GPU call (4 x H200): the final commit's defaults (two-shot small-M
# AR from M = 64 on): every default bench with async-TP merged, GEMM+AR in turns and with --batch 20:
#   MK_CALL_LIMIT=580 CTEST_ARGS="-R test_fused_ar_(2|4|ctas_4|sk2_4)$|test_gemm_skinny$|test_layers|test_model_gpu_fused_(1|4|tp4)$" \
#     CTEST_TIMEOUT=150 CTEST_WALL=240 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s11d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
. "$REPO/tools/bench/bench_defaults.sh"
step ar_b20 30 mk-launch -n 4 -- mk-bench gemm_ar --batch 20 --json "$RES/gemm_ar_h200x4_batch20.json"
step ar_il 30 mk-launch -n 4 -- mk-bench gemm_ar --interleave --json "$RES/gemm_ar_h200x4_interleave.json"
echo "end at $(( $(date +%s) - T0 )) s"
