#!/usr/bin/env bash
# tools/bench/run_s14c.sh — session 14, third GPU call, on 2 x H200: AG+GEMM with every tile width (MK_FUSED_AG_WIDTHS=1:
# 224 at M = 2048, N = 7168, K = 8192, the issue's shape, whose GEMM per rank is the same at 2 and 4 ranks) against 128 / 256
# only (0), in turns, twice; and the plain GEMM 2048 x 7168 x 8192 at 224 and 256 against cuBLASLt:
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_fused_(ag|rs|ar)" CTEST_TIMEOUT=120 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s14c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
for i in 1 2; do
  for v in 1 0; do
    TAIL=8 step ag_w${v}_$i 60 env MK_FUSED_AG_WIDTHS=$v mk-launch -n 2 -- mk-bench ag_gemm --m 2048 --m 8192 --interleave \
      --json "$RES/ag_w${v}_$i.json"
  done
done
for i in 1 2; do
  for w in 224 256; do
    step gemm_w${w}_$i 30 env MK_GEMM_TILE_N=$w mk-bench gemm --shape 2048x7168x8192 --interleave --json "$RES/gemm_w${w}_$i.json"
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
