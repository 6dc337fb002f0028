#!/usr/bin/env bash
# tools/bench/next_tmared.sh — session 7, branch tmared (issue #6): the TMA bulk-load reducers of
# GEMM+RS / GEMM+AR (MK_FUSED_REDUCE_TMA=1) against the register reducers (the default), SM roles
# forced (MK_FUSED_{RS,AR}_COPY=0), 4 GPUs, N = 8192, K = 7168 (mk-bench's defaults). Run:
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_fused_(rs|ar)_(tma_)?(2|4|2nodes)$" CTEST_TIMEOUT=60 CTEST_WALL=120 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_tmared.sh'
# (the tests first: the register reducers' test_fused_{rs,ar}_{2,4,2nodes} and the TMA ones, which also
# compare the two reducers' bits; a TMA bug that hangs a kernel costs one 60 s test, not the call).
# 1. RS M = 2048 and 8192: TMA off with 16 reducers (the default count; fused and unfused timed),
#    TMA on with 4, 8 and 16 reducers (fused only);
# 2. AR M = 1024 (SM one-shot): TMA off with 32 reducers against TMA on with 8 and 16.
# About 10 s a step, 11 steps. Predictions: docs/perf/NOTES.md, "Session 7: TMA reducers".
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_)|fused on|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh" # env, T0, LIMIT, step
echo "LIMIT $LIMIT s"
for m in 2048 8192; do
  step rs${m}_reg16 15 env MK_FUSED_RS_COPY=0 MK_FUSED_REDUCE_TMA=0 mk-launch -n 4 -- mk-bench gemm_rs --m $m \
    --ctas 16 --json "$RES/rs${m}_reg16.json"
  for c in 4 8 16; do
    step rs${m}_tma$c 12 env MK_FUSED_RS_COPY=0 MK_FUSED_REDUCE_TMA=1 mk-launch -n 4 -- mk-bench gemm_rs --m $m \
      --ctas $c --path fused --json "$RES/rs${m}_tma$c.json"
  done
done
step ar1024_reg32 15 env MK_FUSED_AR_COPY=0 MK_FUSED_REDUCE_TMA=0 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 \
  --ctas 32 --json "$RES/ar1024_reg32.json"
for c in 8 16; do
  step ar1024_tma$c 12 env MK_FUSED_AR_COPY=0 MK_FUSED_REDUCE_TMA=1 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 \
    --ctas $c --path fused --json "$RES/ar1024_tma$c.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
