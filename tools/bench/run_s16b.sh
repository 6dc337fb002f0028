#!/usr/bin/env bash
# tools/bench/run_s16b.sh — session 16, 4 x H200: the MoE block's schedules at prefill since the push combine
# (serial, AUTO at T >= 1024, against overlap with 16 and 32 dispatch CTAs; --seed 7, in turns, E = 128 twice),
# then the default benches (bench_defaults.sh). Tests under CTEST_ARGS:
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R <regex>" CTEST_TIMEOUT=150 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s16b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\]   T=|^\[0\]     phases|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
E128="--shape 4096,2048,128,8,768"
for r in 1 2; do
  TAIL=4 step e128_serial_$r 30 mk-launch -n 4 -- mk-bench moe --seed 7 --breakdown --schedule serial $E128 \
    --json "$RES/e128_serial_$r.json"
  TAIL=4 step e128_overlap_$r 30 mk-launch -n 4 -- mk-bench moe --seed 7 --breakdown --schedule overlap $E128 \
    --json "$RES/e128_overlap_$r.json"
  TAIL=4 step e128_overlap32_$r 30 mk-launch -n 4 -- mk-bench moe --seed 7 --breakdown --schedule overlap \
    --comm-ctas 32 $E128 --json "$RES/e128_overlap32_$r.json"
done
E8="--shape 4096,4096,8,2,14336"
for s in serial overlap; do
  TAIL=4 step e8_$s 45 mk-launch -n 4 -- mk-bench moe --seed 7 --breakdown --schedule $s $E8 --json "$RES/e8_$s.json"
done
STEP_GREP='^\[0\] (ag_|gemm_|moe|layer|\{|  T=)|^gemm|fused on|keeps the SM path|FAIL|rror'
. "$REPO/tools/bench/bench_defaults.sh"
echo "end at $(( $(date +%s) - T0 )) s"
