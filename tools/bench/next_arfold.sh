#!/usr/bin/env bash
# tools/bench/next_arfold.sh — session 6, branch arfold (issue #6): GEMM+AR's small-M path with the
# epoch advance folded into its kernel and its phase stamps (mk-bench gemm_ar --breakdown). Run:
#   MK_CALL_LIMIT=200 CTEST_ARGS="-R test_fused_ar|test_gemm_skinny$" CTEST_WALL=60 tools/gpu-check.sh -- 'bash ../../tools/bench/next_arfold.sh'
# 1. M = 16 / 64 / 100 / 128 with --breakdown (timings, then 3 profiled calls a shape: phases line);
# 2. the same without --breakdown (the handle never allocates the stamps: timings of the plain code);
# 3. if time is left: M = 16 / 128 replayed from CUDA graphs (--graph: no host issue cost per call).
# Predictions: docs/perf/NOTES.md, fused section, "Session 6: small-M AR phases".
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_|    phases|    entry)|fused on|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh" # env, T0, LIMIT, step
TAIL=24 step ar_breakdown 30 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 64 --m 100 --m 128 --warmup 50 \
  --iters 200 --breakdown --json "$RES/ar_breakdown.json"
step ar_plain 30 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 64 --m 100 --m 128 --warmup 50 --iters 200 \
  --json "$RES/ar_plain.json"
step ar_graph 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --warmup 50 --iters 200 --graph \
  --json "$RES/ar_graph.json"
echo "end at $(( $(date +%s) - T0 )) s"
