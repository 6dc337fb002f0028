#!/usr/bin/env bash
# tools/bench/run_s9d.sh — session 9, fourth GPU call (4 x H200): GEMM+AR on copy engines pulling the owners'
# sums straight into C (no Y -> C copy), GEMM+RS on copy engines from 32 MiB (M = 2048 at N = 8192); every
# default-shape bench (bench_defaults.sh: AG / RS / AR, MoE, layer, async-TP merged, plots) and AR on copy
# engines at M = 1024 / 2048 beside the default:
#   MK_CALL_LIMIT=540 CTEST_ARGS="-R test_fused_(rs|ar)|test_fused_select|test_layers" CTEST_TIMEOUT=120 \
#     CTEST_WALL=240 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s9d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_|moe|layer|\{|  T=)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
. "$REPO/tools/bench/bench_defaults.sh"
step ar_ce 25 env MK_FUSED_AR_TWO_SHOT=0 MK_FUSED_AR_COPY=1 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 2048
echo "end at $(( $(date +%s) - T0 )) s"
