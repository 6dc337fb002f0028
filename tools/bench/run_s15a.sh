#!/usr/bin/env bash
# tools/bench/run_s15a.sh — session 15, 4 x H200: the push combine (MK_MOE_PUSH: GEMM2's epilogue stores rows home)
# against the combine kernel, in turns, twice, on one routing draw (--seed 7); the E = 128 / 256 shapes with the push
# forced (MK_MOE_PUSH=1, top_k 8 > 4 ranks) against off; then the MoE default bench (--breakdown) for docs/perf:
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R test_moe_block|test_model_gpu_(fused_4|agree_tp4_moedec)$" CTEST_TIMEOUT=150 \
#     CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s15a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\]   T=|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
E8="--shape 4096,4096,8,2,14336 --shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336"
for r in 1 2; do
  for v in -1 0; do
    TAIL=6 step e8_push${v}_$r 45 env MK_MOE_PUSH=$v mk-launch -n 4 -- mk-bench moe --seed 7 --breakdown $E8 \
      --json "$RES/moe_e8_push${v}_$r.json"
  done
done
BIG="--shape 4096,2048,128,8,768 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
for v in 1 0; do
  TAIL=10 step big_push$v 60 env MK_MOE_PUSH=$v mk-launch -n 4 -- mk-bench moe --seed 7 --breakdown $BIG \
    --json "$RES/moe_big_push$v.json"
done
STEP_GREP='^\[0\] (moe|\{|  T=)|FAIL|rror' TAIL=40 step moe 80 mk-launch -n 4 -- mk-bench moe --breakdown \
  --json "$RES/moe_h200x4.json"
mk-bench plot "$RES/moe_h200x4.json" -o "$RES/moe_h200x4.png" > /dev/null 2>&1 || echo "plot moe failed"
echo "end at $(( $(date +%s) - T0 )) s"
