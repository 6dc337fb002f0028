#!/usr/bin/env bash
# next_s27.sh — session 27's GPU runs (docs/perf/NOTES.md, layer "Session 27"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs, nvidia-h200-x2): the layer (both presets, TP = EP = 2, prefill and --decode one) with the fused
#   blocks timed eagerly and from CUDA-graph replays (mk-bench layer --graph, new), in turns, twice; then the MoE
#   op alone at the layer's decode shapes (32 tokens a rank) and the E = 128 prefill, with phases. Prediction:
#   the decode layer -10 to -25 us from graphs if the GPU idles between its ~20 kernels for launches; level if,
#   as for the MoE op alone in session 22, the gaps are the kernels' own start-up and drain.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(model_gpu_fused_2|bench_layer_batch|mk_bench_cli)$" CTEST_TIMEOUT=200 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s27.sh a'
#   Measured (run 282029b-x2): Qwen3 decode 0.2343 / 0.2336 -> 0.2180 / 0.2182 ms, Mixtral 0.375 / 0.378 -> 0.365 /
#   0.364, prefill within 0.02. The layer's MoE blocks at decode ran below the time to stream their experts'
#   weights once (Mixtral 0.279 ms against >= 0.293 for 4 experts of 352 MB at 4.8 TB/s; Qwen3 0.147 against the
#   op's 0.236 at 32 tokens a rank): the residual stream, updated in place by every call, had drifted until every
#   token picked the same experts.
# part b (2 GPUs): part a's layer runs again with the residual stream reset before each timed call (mk-bench
#   layer, new). Prediction: the MoE blocks at decode rise to at least the op's times at 32 tokens a rank
#   (fused 0.418 / 0.236 ms for Mixtral / Qwen3, run 282029b-x2) on both paths; graphs still -10 to -16 us.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(model_gpu_fused_2|bench_layer_batch)$" CTEST_TIMEOUT=200 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s27.sh b'
#   Measured (run d29906b-x2): the MoE blocks at decode rose to 0.449 (Mixtral) and 0.275 ms (Qwen3) fused,
#   0.510 / 0.335 unfused: held. Graphs -6 to -19 us.
# part c (2 GPUs): part b's layer runs with mk_linear_f32out's vector kernel (the router). Prediction: the decode
#   MoE blocks -5 to -15 us on both paths (the scalar router's 4-byte loads, ~10-20 us), prefill's MoE blocks
#   -0.1 to -0.4 ms (the scalar router re-read each row of x once per expert).
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(elementwise_linear|model_gpu_fused_2|model_gpu_unfused_2)$" CTEST_TIMEOUT=200 \
#     CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s27.sh c'
#   Measured (run 3931000-x2): decode level (refuted), Qwen3 prefill MoE block 1.366 -> 1.306 ms.
# part d (4 GPUs, nvidia-h200-x4; not run yet): issue 9's table with the residual stream reset: the layer at
#   TP = EP = 4, eager and --graph in turns, twice, with --json for docs/perf/layer_h200x4_<commit>*.json.
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R ^test_(elementwise_linear|model_gpu_fused_tp4|bench_layer_batch)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s27.sh d'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
STEP_GREP="$STEP_GREP|phases"
if [ "$PART" = a ] || [ "$PART" = b ] || [ "$PART" = c ] || [ "$PART" = d ]; then
  for v in eager graph eagerb graphb; do
    g=()
    case $v in graph*) g=(--graph) ;; esac
    layer "layer_$v" "$BIN" "${g[@]}"
  done
  [ "$PART" = a ] && moe moe_dec "--shape 32,4096,8,2,14336 --shape 32,2048,128,8,768"
  [ "$PART" = a ] && moe moe_e128 "--shape 4096,2048,128,8,768"
fi
