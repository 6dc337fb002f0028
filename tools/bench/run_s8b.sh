#!/usr/bin/env bash
# tools/bench/run_s8b.sh — session 8, second GPU call (4 x H200): the new defaults (GEMM CTAs join the
# reducers; AR two-shot by shape below 32 MiB; role CTAs by wave count) at the issue's RS / AR shapes; one
# traced call each of GEMM+AR M = 1024 and GEMM+RS M = 2048 (tools/bench/trace_stats.py); ncu of our core
# and of cuBLASLt at 2048 x 8192 x 7168 (256-wide tiles, the fused ops' width), clocks left alone:
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R test_fused_(rs|ar)|test_fused_select|test_layers" CTEST_TIMEOUT=120 \
#     CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s8b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step rs 25 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --m 16384
step ar 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --m 1024 --m 4096
step trace_ar 30 env MK_TRACE="$RES/trace_ar1024" mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --warmup 5 --iters 3 --path fused
step trace_rs 30 env MK_TRACE="$RES/trace_rs2048" mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --warmup 5 --iters 3 --path fused
for f in "$RES"/trace_*.rank0.json; do python3 "$REPO/tools/bench/trace_stats.py" "$f"; done
NCU="/usr/local/cuda/bin/ncu --clock-control none"
TAIL=80 STEP_GREP='.' step ncu_core 80 env MK_GEMM_TILE_N=256 $NCU -k regex:mk_gemm_core --launch-skip 10 --launch-count 1 \
  --set full mk-bench gemm --shape 2048x8192x7168 --path fused --warmup 5 --iters 10
TAIL=80 STEP_GREP='.' step ncu_cublas 80 $NCU -k regex:'nvjet|sm90|gemm|cutlass|xmma' --launch-skip 10 --launch-count 1 \
  --set full mk-bench gemm --shape 2048x8192x7168 --path unfused --warmup 5 --iters 10
echo "end at $(( $(date +%s) - T0 )) s"
