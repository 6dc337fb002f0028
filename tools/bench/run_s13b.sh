#!/usr/bin/env bash
# tools/bench/run_s13b.sh — session 13, second GPU call, on 2 x H200: (1) the grouped GEMM's warpgroup skip with fixed
# tiles and with dynamic claims (MK_GEMM_CLAIM), one GPU, --seed 7, and the 1100-row shape under ncu with both;
# (2) the fused MoE's GEMM2 claiming its tiles (MK_MOE_GEMM2_CLAIM) or not, GEMM1 claiming in both, in turns,
# decode shapes at EP = 2:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R test_gemm_grouped|^test_moe_block$|test_model_gpu_fused_2$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=220 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s13b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
G="--groups 8 --shape 600x28672x4096 --shape 600x4096x14336 --shape 1100x28672x4096 --shape 1100x4096x14336"
for i in 1 2; do
  for v in "0 0" "1 0" "1 1" "0 1"; do
    set -- $v
    step gg_s$1c$2_$i 40 env MK_GEMM_WG_SKIP=$1 MK_GEMM_CLAIM=$2 mk-bench gemm --seed 7 $G --path fused \
      --json "$RES/gg_s$1c$2_$i.json"
  done
done
M="gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct"
for v in "1 1" "0 1"; do
  set -- $v
  STEP_GREP='gpu__time|dram__|lts__|rror' TAIL=8 step ncu_s$1c$2 60 env MK_GEMM_WG_SKIP=$1 MK_GEMM_CLAIM=$2 ncu \
    --clock-control none --metrics $M -k regex:mk_gemm_core --launch-skip 2 --launch-count 1 mk-bench gemm --seed 7 \
    --groups 8 --shape 1100x28672x4096 --path fused --warmup 2 --iters 3
done
D="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768"
D="$D --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
for i in 1 2; do
  for v in 1 0; do
    TAIL=20 step g2claim${v}_$i 60 env MK_MOE_GEMM2_CLAIM=$v mk-launch -n 2 -- mk-bench moe --breakdown --seed 7 $D \
      --path fused --json "$RES/moe_g2claim${v}_$i.json"
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
