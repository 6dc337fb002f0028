#!/usr/bin/env bash
# tools/bench/run_s6f.sh — session 6, last GPU call (4 x H200): the reduce-path knobs at the shapes where the
# fused op trails unfused most (GEMM+RS M = 2048: 1.17x; GEMM+AR M = 1024: 1.43x), each A/B in one call,
# (AR 1024 is on copy engines by default: against the SM one-shot), and AG+GEMM M = 2048 again (the group fix's 0.399 of 24b57e9):
#   MK_CALL_LIMIT=180 CTEST_ARGS="-R ^none$" CTEST_WALL=20 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s6f.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_)|fused on|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step ag2048 15 mk-launch -n 4 -- mk-bench ag_gemm --m 2048
step rs_def 15 mk-launch -n 4 -- mk-bench gemm_rs --m 2048
for c in 8 32; do step rs_ctas$c 15 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --ctas $c; done
step rs_nosplit 15 env MK_FUSED_SPLIT_K=0 mk-launch -n 4 -- mk-bench gemm_rs --m 2048
step rs_copy 15 env MK_FUSED_RS_COPY=1 mk-launch -n 4 -- mk-bench gemm_rs --m 2048
step ar_def 15 mk-launch -n 4 -- mk-bench gemm_ar --m 1024
step ar_sm 15 env MK_FUSED_AR_COPY=0 mk-launch -n 4 -- mk-bench gemm_ar --m 1024
step ar_sm_ctas32 15 env MK_FUSED_AR_COPY=0 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --ctas 32
echo "end at $(( $(date +%s) - T0 )) s"
