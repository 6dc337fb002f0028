#!/usr/bin/env bash
# tools/bench/next_parity9.sh — issue #9 acceptance 1 (GPU parity with transformers), branch parity9,
# one GPU call (4 x H200), time-guarded (LIMIT s, default 420); gpu-check.sh's ctest runs the new tests first:
#   CTEST_ARGS="-R test_model_gpu_prefill|test_ref_bf16" CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_parity9.sh'
# 1. parity_transformers.py on 1 and 4 GPUs, all families (teacher-forced for every family now, with
#    transformers' router margins); 2. the same with the CPU reference's bf16-faithful mode (--bf16):
#    what bf16 alone gives on the exact parity models, to set beside the GPU's numbers.
set -uo pipefail
RES=${RES:?set RES to the output folder}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$PWD
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export MK_BOOTSTRAP_TIMEOUT_MS=120000
T0=$(date +%s)
LIMIT=${LIMIT:-420}
P="python3 $REPO/tests/parity/parity_transformers.py --mk-run $BIN/mk-run --mk-launch $BIN/mk-launch"
step() {
  local name=$1 t=$2 now
  shift 2
  now=$(( $(date +%s) - T0 ))
  if [ $(( now + 20 )) -gt "$LIMIT" ]; then echo "$name: skipped at $now s"; return; fi
  [ $(( now + t )) -gt "$LIMIT" ] && t=$(( LIMIT - now ))
  timeout "$t" "$@" > "$RES/$name.log" 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E '^(mixtral|qwen2_moe|qwen3_moe|olmoe) |^ +(first|teacher)|PARITY|all families' "$RES/$name.log" | tail -30
}
grep -hE 'tokens: GPU vs|GPU experts differ|FAIL' "$BIN/../Testing/Temporary/LastTest.log" 2>/dev/null | head -30
step parity_gpu1 120 $P --launch 1 --out "$RES/parity_gpu1.json"
step parity_gpu4 120 $P --launch 4 --out "$RES/parity_gpu4.json"
step parity_cpu_bf16 90 $P --bf16 --out "$RES/parity_cpu_bf16.json"
echo "end at $(( $(date +%s) - T0 )) s"
