#!/usr/bin/env bash
# tools/bench/run_s16d.sh — session 16, 4 x H200: GEMM+AR at the layer's O projection (the only op that differs
# between the fused and unfused attention blocks: layers/model_gpu.c row_linear): prefill M = 8192, N = 4096
# (Mixtral) and 2048 (Qwen3), K = 1024; decode M = 64. Default modes, then SM roles (MK_FUSED_AR_COPY=0) and the
# overlapped copy-engine reduce (MK_FUSED_CE_OVERLAP=1), each --interleave (GEMM alone, NCCL alone, unfused, fused
# in turns):
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R nothing" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s16d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
for n in 4096 2048; do
  TAIL=4 step o${n}_default 30 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n $n --k 1024 --interleave \
    --json "$RES/o${n}_default.json"
  TAIL=4 step o${n}_sm 30 env MK_FUSED_AR_COPY=0 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n $n --k 1024 --interleave \
    --json "$RES/o${n}_sm.json"
  TAIL=4 step o${n}_ceov 30 env MK_FUSED_CE_OVERLAP=1 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n $n --k 1024 \
    --interleave --json "$RES/o${n}_ceov.json"
  TAIL=4 step o${n}_seq0 30 env MK_FUSED_CE_SEQ=0 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n $n --k 1024 \
    --interleave --json "$RES/o${n}_seq0.json"
done
TAIL=6 step odec 30 mk-launch -n 4 -- mk-bench gemm_ar --m 64 --n 4096 --k 1024 --interleave --breakdown \
  --json "$RES/odec.json"
TAIL=4 step odec_q 30 mk-launch -n 4 -- mk-bench gemm_ar --m 64 --n 2048 --k 1024 --interleave --json "$RES/odec_q.json"
echo "end at $(( $(date +%s) - T0 )) s"
