#!/usr/bin/env bash
# tools/bench/run_s15c.sh — session 15, 4 x H200, with the push combine and the fused ops' push mode on by default:
# the default benches (bench_defaults.sh: AG / RS / AR, MoE --breakdown, layer, async-TP merged, plots), then GEMM+AR
# with its parts in turns (--interleave); the 4-rank and 2 x 2 tests under CTEST_ARGS:
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R test_moe_block_(ep4|2x2)|test_fused_.*_(4|2nodes)$|test_model_gpu_(fused_4|fused_2nodes|fused_2nodes_moedec|agree_tp4_moedec|fused_tp4)$|test_layers" \
#     CTEST_TIMEOUT=150 CTEST_WALL=300 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s15c.sh'
# Session 16 ran it again at 4152e44 with CTEST_ARGS="-R nothing" MK_CALL_LIMIT=420 (docs/perf/raw/run-4152e44/).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
. "$REPO/tools/bench/bench_defaults.sh"
TAIL=10 step gemm_ar_il 40 mk-launch -n 4 -- mk-bench gemm_ar --interleave --json "$RES/gemm_ar_h200x4_interleave.json"
echo "end at $(( $(date +%s) - T0 )) s"
