#!/usr/bin/env bash
# tools/bench/run_s9b.sh — session 9, second GPU call (4 x H200): the signaller (after_store on a producer-
# warpgroup thread beside the next mainloop, no per-thread fence in the consumers) and the staged epilogue in
# the fused ops: every default-shape bench (bench_defaults.sh: AG / RS / AR, MoE, layer, async-TP merged,
# plots), then one traced GEMM+AR M = 1024 and GEMM+RS M = 2048:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_gemm$|test_fused_(rs|ar)|^test_fused$|^test_moe_block" CTEST_TIMEOUT=150 \
#     CTEST_WALL=220 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s9b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_|moe|layer|\{|  T=)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
. "$REPO/tools/bench/bench_defaults.sh"
step trace_ar 30 env MK_TRACE="$RES/trace_ar1024" mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --warmup 5 --iters 3 --path fused
step trace_rs 30 env MK_TRACE="$RES/trace_rs2048" mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --warmup 5 --iters 3 --path fused
for f in "$RES"/trace_*.rank0.json; do python3 "$REPO/tools/bench/trace_stats.py" "$f"; done
echo "end at $(( $(date +%s) - T0 )) s"
