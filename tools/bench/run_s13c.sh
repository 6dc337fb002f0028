#!/usr/bin/env bash
# tools/bench/run_s13c.sh — session 13, third GPU call, on 2 x H200: split-K of the MoE grouped GEMMs at the decode
# shapes where AUTO leaves it off (fewer than 64 rows per local expert), `--split-k 8` (the device's wave model decides
# per wave) against the default, in turns on a fixed routing draw (--seed 7), EP = 2, with the phases:
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R ^test_moe_block$" CTEST_TIMEOUT=120 CTEST_WALL=120 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s13c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
D="--shape 16,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,7168,256,8,2048"
D="$D --shape 128,7168,256,8,2048"
for i in 1 2; do
  for v in auto 8; do
    sk=""; [ "$v" = auto ] || sk="--split-k $v"
    STEP_GREP='phases|^\[0\] moe' TAIL=20 step sk${v}_$i 60 mk-launch -n 2 -- mk-bench moe --breakdown --seed 7 $D $sk \
      --path fused --json "$RES/moe_sk${v}_$i.json"
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
