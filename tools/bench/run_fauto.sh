#!/usr/bin/env bash
# tools/bench/run_fauto.sh — #6, branch fauto: the fused ops with the transfer mode chosen by shape
# (MK_FUSED_{AG,RS,AR}_COPY=-1, the new default) against the SM roles forced (=0), then the layer
# benchmark at prefill with the defaults (predictions: NOTES "Session 4"). 4 x H200, one call,
# each step skipped once LIMIT s (default 420) have passed:
#   CTEST_ARGS="-R test_fused|test_model_gpu" tools/gpu-check.sh -- 'bash ../../tools/bench/run_fauto.sh'
set -uo pipefail
RES=${RES:?set RES to the output folder}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export MK_BOOTSTRAP_TIMEOUT_MS=120000
T0=$(date +%s)
LIMIT=${LIMIT:-420}
step() { # name timeout command...: skipped past LIMIT; keeps the log; prints rc and the table
  local name=$1 t=$2 now
  shift 2
  now=$(( $(date +%s) - T0 ))
  if [ $(( now + 20 )) -gt "$LIMIT" ]; then echo "$name: skipped at $now s"; return; fi
  [ $(( now + t )) -gt "$LIMIT" ] && t=$(( LIMIT - now ))
  timeout "$t" "$@" > "$RES/$name.log" 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E '^\[0\] (ag_|gemm_|layer|\{)|fused on|layer:|keeps the SM path|FAIL|rror' "$RES/$name.log" | grep -v autotune |
    tail -"${TAIL:-14}"
}
SM="MK_FUSED_AG_COPY=0 MK_FUSED_RS_COPY=0 MK_FUSED_AR_COPY=0"
for op in ag_gemm gemm_rs gemm_ar; do
  step ${op}_auto 90 mk-launch -n 4 -- mk-bench $op --json "$RES/${op}_auto.json"
  step ${op}_sm 90 env $SM mk-launch -n 4 -- mk-bench $op --path fused --json "$RES/${op}_sm.json"
done
TAIL=30 step layer_auto 150 mk-launch -n 4 -- mk-bench layer --warmup 3 --iters 10 --json "$RES/layer_auto.json"
echo "end at $(( $(date +%s) - T0 )) s"
