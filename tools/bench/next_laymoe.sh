#!/usr/bin/env bash
# tools/bench/next_laymoe.sh — branch laymoe (issue #9 acceptance 3: the MoE block inside the layer
# at decode), 4 x H200, time-guarded (LIMIT, default 420 s). Two device calls (each under 600 s):
#   1. tests: CTEST_ARGS="-R test_layers_moe_dec|test_gather_rows|test_moe_block|test_model_gpu_fused_4|test_model_gpu_fused_tp4|test_model_gpu_agree_tp4|test_model_gpu_fused_2nodes|test_model_gpu_agree_2nodes|test_serve_gpu_4x1_fused|test_bench_layer" \
#        CTEST_WALL=480 tools/gpu-check.sh
#   2. this script: CTEST_ARGS="-R test_layers_moe_dec" tools/gpu-check.sh -- 'bash ../../tools/bench/next_laymoe.sh'
# (the ctest regex takes test_model_gpu_agree_tp4_moedec and test_model_gpu_fused_2nodes_moedec:
# MK_MOE_DECODE_TOKENS=1, every fused decode step on the decode-sized handle, against the unfused
# path and across 2 emulated nodes.)
# Then: `mk-bench layer --decode batch` (64 sequences x 4096 cached positions, one new token each),
# fused vs unfused, both presets, with both changes (the decode-sized MoE handle, the SM all-gather),
# the first off, and both off (the layer as at c3fccbc), and the MoE op alone at the layer's per-rank
# share (16 tokens) for reference. Predictions: docs/perf/NOTES.md, layer, "MoE block at
# decode: what surrounds the op".
set -uo pipefail
BIN=$PWD # gpu-check.sh runs this in build-gpu/bin
export PATH=$BIN:$PATH
LIMIT=${LIMIT:-420}
STEP_GREP='^\[0\] (moe|layer|\{|  T=)|FAIL|rror'
. "$(dirname "$0")/bench_step.sh" # env, T0, step
# A/B in one run: decode-sized handle on (64; the default is 0 until measured) and off (0); --tokens 1024 keeps the prefill
# phase (always run first) short; the decode rows are the ones to read.
# Variants: new = both changes (opt-in today); nodec = MK_MOE_DECODE_TOKENS=0 (the layer's handle for
# decode, as at c3fccbc); old = also MK_TP_GATHER_SM=0 (NCCL all-gather: c3fccbc's MoE block).
for v in new nodec old; do
  case $v in
    new) envs="MK_MOE_DECODE_TOKENS=64 MK_TP_GATHER_SM=1" ;;
    nodec) envs="MK_MOE_DECODE_TOKENS=0 MK_TP_GATHER_SM=1" ;;
    old) envs="MK_MOE_DECODE_TOKENS=0 MK_TP_GATHER_SM=0" ;;
  esac
  for preset in mixtral qwen3; do
    TAIL=12 step layer_${preset}_$v 70 env $envs mk-launch -n 4 -- mk-bench layer \
      --preset $preset --decode batch --batch 64 --context 4096 --tokens 1024 --warmup 5 --iters 20 \
      --json "$RES/layer_${preset}_$v.json"
  done
done
TAIL=8 step moe_op 60 mk-launch -n 4 -- mk-bench moe --shape 16,4096,8,2,14336 --shape 16,2048,128,8,768 \
  --json "$RES/moe_op.json"
echo "end at $(( $(date +%s) - T0 )) s"
