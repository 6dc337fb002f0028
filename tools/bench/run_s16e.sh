#!/usr/bin/env bash
# tools/bench/run_s16e.sh — session 16, 4 x H200: GEMM+AR at the layer's O projection (M = 8192, K = 1024,
# N = 4096 / 2048), copy-engine settings: the overlapped reduce with 32 / 64 CTAs, one side stream per peer
# (MK_FUSED_CE_STREAMS=3), both, and 1024-row pieces; each --interleave:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R nothing" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s16e.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
run() { # NAME N ENV...
  local name=$1 n=$2
  shift 2
  TAIL=4 step $name 30 env "$@" mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n $n --k 1024 --interleave \
    --json "$RES/$name.json"
}
for n in 4096 2048; do
  run o${n}_default $n MK_X=0
  run o${n}_ceov32 $n MK_FUSED_CE_OVERLAP=1 MK_FUSED_CE_REDUCERS=32
  run o${n}_ceov64 $n MK_FUSED_CE_OVERLAP=1 MK_FUSED_CE_REDUCERS=64
  run o${n}_st3 $n MK_FUSED_CE_STREAMS=3
  run o${n}_st3_ceov32 $n MK_FUSED_CE_STREAMS=3 MK_FUSED_CE_OVERLAP=1 MK_FUSED_CE_REDUCERS=32
  run o${n}_rows1024 $n MK_FUSED_CE_SEQ_ROWS=1024
done
echo "end at $(( $(date +%s) - T0 )) s"
