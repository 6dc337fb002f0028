#!/usr/bin/env bash
# tools/bench/run_s13i.sh — session 13, tenth GPU call, on 2 x H200: dynamic claims with the next tile claimed ahead
# (MK_GEMM_CLAIM_AHEAD=1) against claimed when needed (0): the grouped GEMM of run 25cca9f (fixed tiles, claims, claims
# ahead; warpgroup skip on and off) on one GPU, and the MoE decode shapes at EP = 2, in turns, --seed 7. Ran at 40b94da;
# the parameter was removed after it (slower at decode: docs/perf/NOTES.md, moe, session 13, item 8):
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_gemm_grouped|^test_moe_block$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s13i.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
G="--groups 8 --shape 600x28672x4096 --shape 1100x28672x4096 --shape 1100x4096x14336"
for i in 1 2; do
  for v in "0 0 1" "0 1 1" "0 1 0" "1 0 1" "1 1 1" "1 1 0"; do
    set -- $v
    step gg_s$1c$2a$3_$i 40 env MK_GEMM_WG_SKIP=$1 MK_GEMM_CLAIM=$2 MK_GEMM_CLAIM_AHEAD=$3 mk-bench gemm --seed 7 $G \
      --path fused --json "$RES/gg_s$1c$2a$3_$i.json"
  done
done
D="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768"
D="$D --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
for i in 1 2; do
  for v in 1 0; do
    STEP_GREP='^\[0\] moe' TAIL=12 step ahead${v}_$i 60 env MK_GEMM_CLAIM_AHEAD=$v mk-launch -n 2 -- mk-bench moe --seed 7 $D \
      --path fused --json "$RES/moe_ahead${v}_$i.json"
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
