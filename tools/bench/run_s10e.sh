#!/usr/bin/env bash
# tools/bench/run_s10e.sh — session 10, fifth GPU call (4 x H200): the final commit's mk-bench fused timing (one helper
# for one part or four in turns) on one shape of each op, both ways:
#   MK_CALL_LIMIT=200 CTEST_ARGS="-R test_fused_ag_ce_4|test_fused_rs_ce_4" CTEST_TIMEOUT=120 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s10e.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step ag 25 mk-launch -n 4 -- mk-bench ag_gemm --m 2048 --json "$RES/ag.json"
step ag_il 25 mk-launch -n 4 -- mk-bench ag_gemm --m 2048 --interleave --json "$RES/ag_il.json"
step ar_il 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 4096 --interleave
echo "end at $(( $(date +%s) - T0 )) s"
