#!/usr/bin/env bash
# tools/bench/run_s7c.sh — session 7, fourth GPU call (4 x H200): the moelocal merge (MK_MOE_OWN_FIRST, own
# rows into A1 first and GEMM1's own tile-rows first at T > 1024) against the order before, same --seed,
# at the two prefill shapes under AUTO (serial there), --schedule overlap and --schedule hybrid (never
# measured since version 5), with --breakdown; the first step times unfused beside it:
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_moe" CTEST_TIMEOUT=120 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s7c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] moe|  T=|phases|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
S="--seed 7 --shape 4096,4096,8,2,14336 --shape 4096,2048,128,8,768"
B="mk-launch -n 4 -- mk-bench moe --breakdown $S"
TAIL=24 step auto_own1 45 env MK_MOE_OWN_FIRST=1 $B
TAIL=24 step auto_own0 35 env MK_MOE_OWN_FIRST=0 $B --path fused
for own in 1 0; do
  TAIL=24 step overlap_own$own 35 env MK_MOE_OWN_FIRST=$own $B --path fused --schedule overlap
done
for own in 1 0; do
  TAIL=24 step hybrid_own$own 35 env MK_MOE_OWN_FIRST=$own $B --path fused --schedule hybrid
done
TAIL=24 step auto_own1_r2 35 env MK_MOE_OWN_FIRST=1 $B --path fused
echo "end at $(( $(date +%s) - T0 )) s"
