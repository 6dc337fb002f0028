#!/usr/bin/env bash
# tools/bench/run_s14b.sh — session 14, second GPU call, on 2 x H200 (one GPU used): what binds the grouped GEMM at
# 2 x 136 rows (run_s14a: 0.18 ms against cuBLASLt's 0.154, with the weights read from DRAM once): ncu throughput
# percentages (SM, tensor pipe, L2, DRAM) of our core (fixed tiles; claims + warpgroup skip) and of cuBLASLt's kernels,
# at 2 x 136 and 2 x 120 rows, N = 28672, K = 4096:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R test_bench_gemm_cli" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s14b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum"
M="$M,l1tex__m_xbar2l1tex_read_bytes.sum,launch__cluster_dim_x,launch__cluster_dim_y,launch__grid_size"
G='gpu__time|sm__|lts__|dram__|l1tex__|launch__|nvjet|sm90|mk_gemm|rror'
for r in 136 120; do
  m=$(( 2 * r ))
  for v in "0 0" "1 1"; do
    set -- $v
    STEP_GREP=$G TAIL=20 step ncu_r${r}_s$1c$2 60 env MK_GEMM_WG_SKIP=$1 MK_GEMM_CLAIM=$2 ncu --clock-control none \
      --metrics $M -k regex:mk_gemm_core --launch-skip 2 --launch-count 1 mk-bench gemm --seed 7 \
      --group-rows $r,$r --shape ${m}x28672x4096 --path fused --warmup 2 --iters 3
  done
  STEP_GREP=$G TAIL=40 step ncu_r${r}_lt 60 ncu --clock-control none --metrics $M -k 'regex:nvjet|xmma|cutlass' --launch-skip 4 --launch-count 2 \
    mk-bench gemm --seed 7 --group-rows $r,$r --shape ${m}x28672x4096 --path unfused --warmup 2 --iters 3
done
echo "end at $(( $(date +%s) - T0 )) s"
