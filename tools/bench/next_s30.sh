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
# part b (2 GPUs): the decode MoE handle gives every rank every token's output (mk_moe_forward_all: GEMM2 stores each
#   expert row into every rank, every rank reduces every token and adds it to the residual; MK_LAYER_MOE_ALL=1, new
#   default) instead of each rank's tokens and the all-gather kernel after (=0); the push reduce's last CTA advances
#   the call (no advance kernel, both). The layer with it on and off in turns, twice; then --graph; then traced.
#   Prediction (part a's trace: gather_rows 8.8-9.5 us + ~1.1 us gap, advance 0.8 + ~1.5 us): the decode layer
#   -9 to -11 us at both models (Mixtral 0.489 -> ~0.479, Qwen3 0.300 -> ~0.290), prefill level.
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R ^test_(moe_block|model_gpu|model_gpu_fused_[12]|model_gpu_agree_2_moedec|model_gpu_agree_mixtral_flash_2|gather_rows|bench_layer_batch|layers_moe_dec)$" \
#     CTEST_TIMEOUT=240 CTEST_WALL=330 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s30.sh b'
if [ "$PART" = b ]; then
  for v in all noall allb noallb; do
    case $v in
      all*) MK_LAYER_MOE_ALL=1 layer "layer_$v" "$BIN" ;;
      noall*) MK_LAYER_MOE_ALL=0 layer "layer_$v" "$BIN" ;;
    esac
  done
  layer layer_graph "$BIN" --graph
  KT_LIST='moe_|gather_rows|residual' kt_layer kt_all --tokens 256
fi
