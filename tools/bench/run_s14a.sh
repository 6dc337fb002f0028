#!/usr/bin/env bash
# tools/bench/run_s14a.sh — session 14, first GPU call, on 2 x H200: where the grouped GEMM loses at 129-256 rows per
# expert (the MoE's per-rank GEMMs at EP = 4, T = 128, E = 8: 2 local experts of ~128 +- 11 rows). (1) One GPU, the
# grouped GEMMs of that shape (--group-rows), fused vs cuBLASLt in turns, fixed tiles without the warpgroup skip (the
# plain GEMM's default) and claims with the skip (what the MoE decode GEMMs run), and under ncu (DRAM bytes);
# (2) the MoE block at EP = 2 with the same per-rank GEMMs: (128, 4096, 4, 2, 14336) and (256, 4096, 8, 2, 14336):
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_bench_gemm_cli" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s14a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
for i in 1 2; do
  for r in 64 120 136 180; do
    for v in "0 0" "1 1"; do
      set -- $v
      m=$(( 2 * r ))
      step gg_r${r}_s$1c$2_$i 40 env MK_GEMM_WG_SKIP=$1 MK_GEMM_CLAIM=$2 mk-bench gemm --seed 7 --interleave \
        --group-rows $r,$r --shape ${m}x28672x4096 --shape ${m}x4096x14336 --json "$RES/gg_r${r}_s$1c$2_$i.json"
    done
  done
done
M="gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct"
for r in 120 136; do
  for v in "0 0" "1 1"; do
    set -- $v
    m=$(( 2 * r ))
    STEP_GREP='gpu__time|dram__|lts__|rror' TAIL=8 step ncu_r${r}_s$1c$2 60 env MK_GEMM_WG_SKIP=$1 MK_GEMM_CLAIM=$2 ncu \
      --clock-control none --metrics $M -k regex:mk_gemm_core --launch-skip 2 --launch-count 1 mk-bench gemm --seed 7 \
      --group-rows $r,$r --shape ${m}x28672x4096 --path fused --warmup 2 --iters 3
  done
done
D="--shape 128,4096,4,2,14336 --shape 256,4096,8,2,14336 --shape 128,4096,8,2,14336"
for i in 1 2; do
  TAIL=20 step moe_$i 90 mk-launch -n 2 -- mk-bench moe --seed 7 $D --json "$RES/moe_$i.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
