#!/usr/bin/env bash
# tools/bench/run_s6d.sh — session 6, fourth GPU call (4 x H200), diagnosis for the next session (no code change):
#   MK_CALL_LIMIT=240 CTEST_ARGS="-R ^none$" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s6d.sh'
# 1. #6 at M = 2048 (fused 1.17-1.19x unfused): a Chrome trace of one AG+GEMM and one GEMM+RS (rank 0, PNG),
#    and our GEMM core alone at the per-rank shapes with the width the fused ops use (256) and the plain
#    GEMM's model pick (224 / 160), against cuBLASLt;
# 2. #7 (128, 4096, 8, 2, 14336) decode, fused 0.34-0.43 ms between runs: four runs with split-K AUTO and
#    three with it off (--split-k 0), each a fresh routing draw.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_|moe|\{|  T=|    phases)|^gemm|fused on|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
for op in ag_gemm gemm_rs; do
  step trace_$op 40 env MK_TRACE="$RES/trace_${op}_2048" mk-launch -n 4 -- mk-bench $op --m 2048 --warmup 1 --iters 2 --path fused
  python3 "$REPO/tools/bench/trace_png.py" "$RES/trace_${op}_2048.rank0.json" -o "$RES/trace_${op}_2048_rank0.png" > /dev/null 2>&1 \
    || echo "render $op failed"
done
for w in 0 256 128; do
  step gemm_w$w 20 env MK_GEMM_TILE_N=$w mk-bench gemm --shape 2048x7168x8192 --shape 2048x8192x7168 --interleave \
    --warmup 50 --iters 100 --json "$RES/gemm_w$w.json"
done
for i in 1 2 3 4; do
  TAIL=6 step moe8_auto$i 20 mk-launch -n 4 -- mk-bench moe --breakdown --shape 128,4096,8,2,14336 --path fused
done
for i in 1 2 3; do
  TAIL=6 step moe8_k0_$i 20 mk-launch -n 4 -- mk-bench moe --breakdown --shape 128,4096,8,2,14336 --path fused --split-k 0
done
echo "end at $(( $(date +%s) - T0 )) s"
