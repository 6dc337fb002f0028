#!/usr/bin/env bash
# tools/bench/run_s11c.sh — session 11, third GPU call (4 x H200): GEMM+AR's small-M path two-shot
# (MK_FUSED_AR_SKINNY_TWO_M) against one-shot at M = 16 / 64 / 128, per call and --batch 20:
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R test_fused_ar_(2|4|ctas_4|sk2_4|sk2c_4|sk2_2|bn128_4)$" CTEST_TIMEOUT=120 \
#     CTEST_WALL=150 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s11c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_|  +phases)|^gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
M="--m 16 --m 64 --m 128"
step one 30 mk-launch -n 4 -- mk-bench gemm_ar $M --breakdown
step two 30 env MK_FUSED_AR_SKINNY_TWO_M=1 mk-launch -n 4 -- mk-bench gemm_ar $M --breakdown
step one_b20 30 mk-launch -n 4 -- mk-bench gemm_ar $M --batch 20
step two_b20 30 env MK_FUSED_AR_SKINNY_TWO_M=1 mk-launch -n 4 -- mk-bench gemm_ar $M --batch 20
step two_k64 30 env MK_FUSED_AR_SKINNY_TWO_M=1 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --k 64 --breakdown
step two_dec 30 env MK_FUSED_AR_SKINNY_TWO_M=1 mk-launch -n 4 -- mk-bench gemm_ar --m 64 --n 4096 --k 1024
step one_dec 30 mk-launch -n 4 -- mk-bench gemm_ar --m 64 --n 4096 --k 1024
echo "end at $(( $(date +%s) - T0 )) s"
