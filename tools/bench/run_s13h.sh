#!/usr/bin/env bash
# tools/bench/run_s13h.sh — session 13, ninth GPU call, on 2 x H200: the layer's Mixtral prefill MoE block ran 6.1-9.3 ms
# with MK_MOE_GEMM1_CLAIM=1 and 5.9-6.9 with 0 in runs e79ed61 / fdb29a4, though prefill handles (the serial schedule)
# never claim; the MoE block alone at the prefill shapes, fused and unfused, 0 and 1 in turns (--seed 7):
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_pick$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s13h.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
P="--shape 4096,4096,8,2,14336 --shape 8192,4096,8,2,14336 --shape 4096,2048,128,8,768"
for i in 1 2; do
  for v in 0 1; do
    STEP_GREP='^\[0\] moe' TAIL=12 step pre_claim${v}_$i 60 env MK_MOE_GEMM1_CLAIM=$v mk-launch -n 2 -- mk-bench moe --seed 7 $P \
      --json "$RES/moe_pre_claim${v}_$i.json"
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
