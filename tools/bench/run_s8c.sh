#!/usr/bin/env bash
# (Record of the run named below: MK_GEMM_CLUSTER was measured no faster and reverted; the code stays on branch cluster.)
# tools/bench/run_s8c.sh — session 8, third GPU call (one GPU of the 4 x H200 machine): the core on 2-CTA
# clusters sharing A by TMA multicast (MK_GEMM_CLUSTER=2) against one CTA per tile and cuBLASLt, interleaved
# (power-fair) timing, at the fused ops' per-rank GEMM shapes and 8192^3; ncu of the clustered kernel:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_gemm" CTEST_TIMEOUT=200 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s8c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^gemm|rror|FAIL'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
S="--shape 1024x8192x7168 --shape 2048x8192x7168 --shape 8192x8192x7168 --shape 2048x7168x8192 --shape 8192x8192x8192"
B="mk-bench gemm --interleave --warmup 100 --rotate 3 --iters 100 $S"
TAIL=20 step gemm_c0 60 $B --json "$RES/gemm_c0.json"
TAIL=20 step gemm_c0_256 60 env MK_GEMM_TILE_N=256 $B --json "$RES/gemm_c0_256.json"
TAIL=20 step gemm_c2 60 env MK_GEMM_CLUSTER=2 $B --json "$RES/gemm_c2.json"
NCU="/usr/local/cuda/bin/ncu --clock-control none"
TAIL=60 STEP_GREP='Duration|Throughput|SM Frequency|Cluster Size|Registers|Hit Rate' step ncu_c2 60 env MK_GEMM_CLUSTER=2 \
  $NCU -k regex:mk_gemm_core --launch-skip 10 --launch-count 1 --set full mk-bench gemm --shape 2048x8192x7168 \
  --path fused --warmup 5 --iters 10
echo "end at $(( $(date +%s) - T0 )) s"
