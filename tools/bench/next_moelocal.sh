#!/usr/bin/env bash
# tools/bench/next_moelocal.sh — the GPU run of the moelocal branch (issue #7: fused MoE prefill,
# own rows into A1 first and GEMM1's own tile-rows first; MK_MOE_OWN_FIRST, kernels/moe/dispatch_gemm.cu),
# 4 x H200, one call after the tests, time-guarded (bench_step.sh):
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_moe" CTEST_WALL=240 tools/gpu-check.sh -- \
#     'bash ../../tools/bench/next_moelocal.sh'
# A/B of MK_MOE_OWN_FIRST=1 (new default: own mode at T > 1024) against 0 (the order before), same
# --seed, at the two prefill shapes with --breakdown, fused path only (the unfused reference of the same
# draw is 4.90 / 1.74 ms at 4f9eb16). AUTO picks the serial schedule there (max_tokens >= 1024), where
# GEMM1 starts after the dispatch kernel by stream order whatever the mode: expected within the spread,
# only the dispatch's own-row copy saved. The early GEMM1 start shows under --schedule overlap (GEMM1
# beside the 16 dispatch CTAs): g1_first from ~landed to ~counts. Predictions: docs/perf/NOTES.md,
# "Session 7: GEMM1 on own rows first". Each step ~10-15 s; the second repetitions run last and are
# skipped when the time guard says so.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] moe|  T=|counts|g1_first|landed|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
B="mk-launch -n 4 -- mk-bench moe --breakdown --path fused --seed 7 --shape 4096,4096,8,2,14336 --shape 4096,2048,128,8,768"
for rep in 1 2; do
  for own in 1 0; do
    TAIL=24 step auto_own${own}_r$rep 40 env MK_MOE_OWN_FIRST=$own $B
  done
  for own in 1 0; do
    TAIL=24 step overlap_own${own}_r$rep 40 env MK_MOE_OWN_FIRST=$own $B --schedule overlap
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
