#!/usr/bin/env bash
# (Record of the run named below: MK_GEMM_CLUSTER was measured no faster and reverted; the code stays on branch cluster.)
# tools/bench/run_s8d.sh — session 8, fourth GPU call (one GPU of the 4 x H200 machine): the clustered core
# again with the remote arrives at CTA-scope release (run dbbd52b: 1.8x slower with .release.cluster), against
# one CTA per tile and cuBLASLt, interleaved timing:
#   MK_CALL_LIMIT=200 CTEST_ARGS="-R ^test_gemm_cluster" CTEST_TIMEOUT=150 CTEST_WALL=120 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s8d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^gemm|rror|FAIL'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
S="--shape 1024x8192x7168 --shape 2048x8192x7168 --shape 8192x8192x7168 --shape 2048x7168x8192 --shape 8192x8192x8192"
B="mk-bench gemm --interleave --warmup 100 --rotate 3 --iters 100 $S"
TAIL=20 step gemm_c2 60 env MK_GEMM_CLUSTER=2 $B --json "$RES/gemm_c2.json"
TAIL=20 step gemm_c0 60 $B --json "$RES/gemm_c0.json"
NCU="/usr/local/cuda/bin/ncu --clock-control none"
TAIL=60 STEP_GREP='Duration|Throughput|SM Frequency|stalled' step ncu_c2 60 env MK_GEMM_CLUSTER=2 \
  $NCU -k regex:mk_gemm_core --launch-skip 10 --launch-count 1 --set full mk-bench gemm --shape 2048x8192x7168 \
  --path fused --warmup 5 --iters 10
echo "end at $(( $(date +%s) - T0 )) s"
