#!/usr/bin/env bash
# tools/bench/run_s11a.sh — session 11, first GPU call (4 x H200): flags behind one system fence (relaxed
# stores) instead of a release store each; GEMM+AR's small-M path waits for its slabs at the CTA's end,
# launched as a programmatic dependent; its CTA count (MK_FUSED_AR_SKINNY_CTAS) and PDL A/B:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R test_fused_ar_(2|4|bn128_4|ctas_4|ce_4|two_4|auto_4)$|test_gemm_skinny$|test_fused_(ag|rs)_(4|ce_4)$|test_fused$" \
#     CTEST_TIMEOUT=120 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s11a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step ar_small 30 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --breakdown
step ar_nopdl 25 env MK_GEMM_SKINNY_PDL=0 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128
step ar_c64 25 env MK_FUSED_AR_SKINNY_CTAS=64 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --breakdown
step ar_c43 25 env MK_FUSED_AR_SKINNY_CTAS=43 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128
for op in gemm_ar gemm_rs ag_gemm; do step $op 40 mk-launch -n 4 -- mk-bench $op --json "$RES/${op}_h200x4.json"; done
echo "end at $(( $(date +%s) - T0 )) s"
