#!/usr/bin/env bash
# tools/bench/run_s7d.sh — session 7, GPU call (4 x H200): (1) the reducers with 2-D TMA boxes
# (MK_FUSED_REDUCE_TMA=1: one copy of 64 columns x 128/W rows per source, against session 7's 256-byte row
# copies) against the register loads, SM roles: GEMM+RS M = 2048 / 8192, GEMM+AR M = 1024 (one-shot);
# (2) then run_s7c.sh (the moelocal A/B). Tests first:
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R test_moe|test_fused_(rs|ar)_(tma_)?(2|4)$" CTEST_TIMEOUT=100 CTEST_WALL=220 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s7d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_|moe)|fused on|  T=|phases|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step rs_reg16 15 env MK_FUSED_RS_COPY=0 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --ctas 16
for c in 4 8 16; do
  step rs_tma$c 15 env MK_FUSED_RS_COPY=0 MK_FUSED_REDUCE_TMA=1 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --ctas $c --path fused
done
for c in 8 16 32; do
  step ar_tma$c 15 env MK_FUSED_AR_COPY=0 MK_FUSED_REDUCE_TMA=1 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --ctas $c --path fused
done
. "$REPO/tools/bench/run_s7c.sh"
