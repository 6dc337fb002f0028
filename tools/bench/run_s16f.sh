#!/usr/bin/env bash
# tools/bench/run_s16f.sh — session 16, 4 x H200: the default benches at the session's last code (bench_defaults.sh:
# AG / RS / AR, MoE --breakdown, layer, async-TP merged, plots), then GEMM+AR in turns (--interleave):
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R nothing" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s16f.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
. "$REPO/tools/bench/bench_defaults.sh"
TAIL=10 step gemm_ar_il 40 mk-launch -n 4 -- mk-bench gemm_ar --interleave --json "$RES/gemm_ar_h200x4_interleave.json"
echo "end at $(( $(date +%s) - T0 )) s"
