#!/usr/bin/env bash
# tools/bench/run_s17a.sh — session 17, 4 x H200: GEMM+AR two-shot on SM roles in push mode (MK_FUSED_AR_COPY=0
# MK_FUSED_AR_TWO_SHOT=1; never measured at >= 32 MiB with push) at the layer's O projection (M = 8192, N = 4096 /
# 2048, K = 1024) and at AR 4096 (N = 8192, K = 7168), role CTAs by shape (--ctas 0) and 8 .. 48, each --interleave
# (GEMM alone, NCCL alone, unfused, fused in turns); one MK_TRACE of the O projection with 16 role CTAs:
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R nothing" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s17a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
SM2="MK_FUSED_AR_COPY=0 MK_FUSED_AR_TWO_SHOT=1"
for n in 4096 2048; do
  TAIL=4 step o${n}_default 30 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n $n --k 1024 --interleave \
    --json "$RES/o${n}_default.json"
  for c in 0 8 16 32 48; do
    TAIL=1 step o${n}_sm2_c$c 30 env $SM2 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n $n --k 1024 --ctas $c \
      --interleave --json "$RES/o${n}_sm2_c$c.json"
  done
done
for c in 0 16 32; do
  TAIL=2 step ar4096_sm2_c$c 40 env $SM2 mk-launch -n 4 -- mk-bench gemm_ar --m 4096 --ctas $c --interleave \
    --json "$RES/ar4096_sm2_c$c.json"
done
step trace_o4096 30 env $SM2 MK_TRACE="$RES/trace_o4096" mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 4096 \
  --k 1024 --ctas 16 --warmup 5 --iters 3 --path fused
python3 "$REPO/tools/bench/trace_stats.py" "$RES"/trace_o4096.rank0.json 2>&1 | tail -12
echo "end at $(( $(date +%s) - T0 )) s"
