#!/usr/bin/env bash
# tools/bench/run_s13a.sh — session 13, first GPU call, on 2 x H200 (the 4-GPU kind was not lent): GEMM1 of the
# fused MoE with dynamic tile claims on every SM (MK_MOE_GEMM1_CLAIM=1, the dispatch's SMs join once it is done)
# against its fixed tiles on SMs - C (0), in turns on a fixed routing draw (--seed 7), decode shapes at EP = 2;
# then the warpgroup skip's 1100-row grouped GEMM under ncu (DRAM and L2 bytes, skip 1 / 0):
#   MK_CALL_LIMIT=540 CTEST_ARGS="-R ^test_moe_block$|test_gemm_grouped|test_layers_moe_dec|test_model_gpu_fused_2$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s13a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
D="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768"
D256="--shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
for i in 1 2; do
  for v in 1 0; do
    TAIL=16 step claim${v}_$i 40 env MK_MOE_GEMM1_CLAIM=$v mk-launch -n 2 -- mk-bench moe --breakdown --seed 7 $D --path fused \
      --json "$RES/moe_claim${v}_$i.json"
  done
done
for v in 1 0; do
  TAIL=8 step claim256_${v} 60 env MK_MOE_GEMM1_CLAIM=$v mk-launch -n 2 -- mk-bench moe --breakdown --seed 7 $D256 --path fused \
    --json "$RES/moe256_claim${v}.json"
done
TAIL=20 step unfused 60 mk-launch -n 2 -- mk-bench moe --seed 7 $D $D256 --path unfused --json "$RES/moe_unfused.json"
M="gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct"
for v in 1 0; do
  STEP_GREP='gpu__time|dram__|lts__|rror' TAIL=8 step ncu_skip$v 60 env MK_GEMM_WG_SKIP=$v ncu --clock-control none --metrics $M \
    -k regex:mk_gemm_core --launch-skip 2 --launch-count 1 mk-bench gemm --seed 7 --groups 8 --shape 1100x28672x4096 \
    --path fused --warmup 2 --iters 3
done
echo "end at $(( $(date +%s) - T0 )) s"
