#!/usr/bin/env bash
# tools/bench/run_s13f.sh — session 13, sixth GPU call, on 2 x H200: dispatch CTAs (MK_MOE_DISPATCH_CTAS 16, the
# default, against 32 and 8) now that their SMs join GEMM1 once the dispatch is done, decode shapes at EP = 2, in turns
# on a fixed routing draw (--seed 7):
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_block$" CTEST_TIMEOUT=120 CTEST_WALL=120 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s13f.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
D="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768"
D="$D --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
for i in 1 2; do
  for v in 16 32 8; do
    STEP_GREP='phases|^\[0\] moe' TAIL=20 step dc${v}_$i 60 env MK_MOE_DISPATCH_CTAS=$v mk-launch -n 2 -- mk-bench moe \
      --breakdown --seed 7 $D --path fused --json "$RES/moe_dc${v}_$i.json"
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
