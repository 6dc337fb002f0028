#!/usr/bin/env bash
# tools/bench/next_parity9.sh — issue #9 acceptance 1 (GPU parity with transformers), branch parity9,
# one GPU call (4 x H200), time-guarded (LIMIT s, default 420); gpu-check.sh's ctest runs the new tests first:
#   CTEST_ARGS="-R test_model_gpu_prefill|test_ref_bf16" CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_parity9.sh'
# 1. parity_transformers.py on 1 and 4 GPUs, all families (teacher-forced for every family now, with
#    transformers' router margins); 2. the same with the CPU reference's bf16-faithful mode (--bf16):
#    what bf16 alone gives on the exact parity models, to set beside the GPU's numbers.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$PWD
LIMIT=${LIMIT:-420}
STEP_GREP='^(mixtral|qwen2_moe|qwen3_moe|olmoe) |^ +(first|teacher)|PARITY|all families'
TAIL=30
. "$REPO/tools/bench/bench_step.sh" # env, T0, step
P="python3 $REPO/tests/parity/parity_transformers.py --mk-run $BIN/mk-run --mk-launch $BIN/mk-launch"
grep -hE 'tokens: GPU vs|GPU experts differ|FAIL' "$BIN/../Testing/Temporary/LastTest.log" 2>/dev/null | head -30
step parity_gpu1 120 $P --launch 1 --out "$RES/parity_gpu1.json"
step parity_gpu4 120 $P --launch 4 --out "$RES/parity_gpu4.json"
step parity_cpu_bf16 90 $P --bf16 --out "$RES/parity_cpu_bf16.json"
echo "end at $(( $(date +%s) - T0 )) s"
