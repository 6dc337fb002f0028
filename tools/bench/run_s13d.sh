#!/usr/bin/env bash
# tools/bench/run_s13d.sh — session 13, fourth GPU call, on 2 x H200: the new AUTO (GEMM2 in k-slices where its 256-wide
# tiles are fewer than the SMs) against split-K off (--split-k 1, the old AUTO at these shapes) and both GEMMs' model
# (--split-k 8), in turns on a fixed routing draw (--seed 7), EP = 2; fused and unfused of the AUTO call:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_block$|test_moe_pick|test_model_gpu_fused_2$" CTEST_TIMEOUT=120 \
#     CTEST_WALL=120 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s13d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
D="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768"
for i in 1 2; do
  for v in auto 1 8; do
    sk=""; [ "$v" = auto ] || sk="--split-k $v"; p="--path fused"; [ "$v$i" = auto1 ] && p=""
    STEP_GREP='phases|^\[0\] moe' TAIL=20 step sk${v}_$i 60 mk-launch -n 2 -- mk-bench moe --breakdown --seed 7 $D $sk \
      $p --json "$RES/moe_sk${v}_$i.json"
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
