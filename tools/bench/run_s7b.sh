#!/usr/bin/env bash
# (Record of run 9f022b2: MK_FUSED_PULL was measured slower and reverted; on later commits the knob is gone.)
# tools/bench/run_s7b.sh — session 7, second GPU call (4 x H200): the reducers through the cp.async pipeline
# (MK_FUSED_PULL=1) against the register loads, on SM roles: GEMM+RS M = 2048 / 8192 (N = 8192, K = 7168),
# GEMM+AR two-shot (MK_FUSED_AR_TWO_SHOT=1) at M = 1024 / 4096 and the Mixtral O projection shape
# (M = 8192, N = 4096, K = 1024), each with the default (copy engines for AR at these sizes) in the same call:
#   MK_CALL_LIMIT=330 CTEST_ARGS="-R pull|test_fused_ar_two" CTEST_WALL=150 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s7b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
SM="MK_FUSED_RS_COPY=0"
step rs_reg 20 env $SM mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192
for c in 4 8 16; do step rs_pull$c 20 env $SM MK_FUSED_PULL=1 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --ctas $c; done
step ar_def 20 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 4096
for c in 8 16 24; do
  step ar_two_pull$c 20 env MK_FUSED_AR_TWO_SHOT=1 MK_FUSED_PULL=1 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 4096 --ctas $c
done
step ar_one_pull16 20 env MK_FUSED_AR_COPY=0 MK_FUSED_PULL=1 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --ctas 16
step ar_o_def 20 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 4096 --k 1024
for c in 8 16; do
  step ar_o_two_pull$c 20 env MK_FUSED_AR_TWO_SHOT=1 MK_FUSED_PULL=1 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 4096 --k 1024 --ctas $c
done
echo "end at $(( $(date +%s) - T0 )) s"
