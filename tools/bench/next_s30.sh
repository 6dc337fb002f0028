#!/usr/bin/env bash
# next_s30.sh — session 30's GPU runs (docs/perf/NOTES.md, layer "Session 30"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs): where the decode layer's time goes after session 29's stack-frame fix: the layer (prefill cut to
#   256 tokens) under the kernel tracer, the MoE block's small kernels and the TP all-gather listed.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_gather_rows$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s30.sh a'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ]; then
  KT_LIST='moe_|gather_rows|residual|rmsnorm|skinny|qkv|flash|merge' kt_layer kt_dec --tokens 256
fi
