#!/usr/bin/env bash
# tools/bench/run_s5d.sh — session 5, last GPU call (4 x H200): test_model_gpu's prefill check with the
# routing-near-tie allowance replayed on run 5f41751's failing seed (olmoe at tp 4: reference margin
# 5.5e-4 at prompt position 5), then the transformers parity script (issue #9 acceptance 1) on 4 and 1
# GPUs and the CPU bf16-faithful reference (next_parity9.sh's steps):
#   MK_CALL_LIMIT=520 CTEST_ARGS="-R test_model_gpu_agree_tp4$|test_model_gpu_agree_2nodes$" CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s5d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] rank 0: (olmoe|mixtral|qwen|unfused path|fused path|prefill|  position|.*fused vs unfused)|FAIL|rror'
TAIL=40
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step seed_replay 45 env MK_TEST_SEED=1819841652413809 mk-launch -n 4 -- test_model_gpu all both 4
bash "$REPO/tools/bench/next_parity9.sh"
echo "end at $(( $(date +%s) - T0 )) s"
