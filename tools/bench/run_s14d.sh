#!/usr/bin/env bash
# tools/bench/run_s14d.sh — session 14, fourth GPU call, on 2 x H200: (1) AG+GEMM's widths through the proxy path
# (test_fused ag on 2 node groups of 1 GPU); (2) the MoE block at prefill sizes (EP = 2, where (4096, 4096, 8) is
# 3-6 % behind unfused, run af54b00) under the serial schedule (AUTO there) against overlap and hybrid, now that the
# overlapped GEMM1 claims its tiles and takes the dispatch's SMs back (session 13): in turns, twice, --seed 7:
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R test_fused_ag|^test_moe_block$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s14d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
STEP_GREP='ok|OK|FAIL|rror|passed' TAIL=6 step ag_2nodes 60 mk-launch -n 2 --nodes 2 -- ./test_fused ag
P="--shape 4096,4096,8,2,14336 --shape 4096,2048,128,8,768"
for i in 1 2; do
  for s in serial overlap hybrid; do
    TAIL=12 step pre_${s}_$i 60 mk-launch -n 2 -- mk-bench moe --seed 7 $P --schedule $s --breakdown \
      --json "$RES/moe_pre_${s}_$i.json"
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
