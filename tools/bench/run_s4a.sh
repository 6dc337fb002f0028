#!/usr/bin/env bash
# tools/bench/run_s4a.sh — session 4, first GPU call (4 x H200): the measurements the compile-checked
# code of session 3 waits for, in order of value, each step skipped once the call's budget is spent
# (LIMIT s after the start, default 520) so that the results still come back in one device call:
#   CTEST_ARGS="-R ^none$" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s4a.sh'
# 1. #6: AG+GEMM, GEMM+RS, GEMM+AR side by side: SM roles (default split) vs copy-engine modes
#    (MK_FUSED_{AG,RS,AR}_COPY=1), one side stream and one per peer; async-TP merged (predictions:
#    NOTES "Session 3 (fused3)"). 2. #9: mk-bench layer --decode batch (prefill 8192 + decode of 64
#    sequences at 4096), both presets. 3. #7: MoE decode without and with split-K.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LIMIT=${LIMIT:-520}
STEP_GREP='^\[0\] (ag_|gemm_|moe|layer|\{)|layer:|FAIL|rror'
. "$(dirname "$0")/bench_step.sh" # env, T0, step
CE="MK_FUSED_AG_COPY=1 MK_FUSED_RS_COPY=1 MK_FUSED_AR_COPY=1"
SM="MK_FUSED_AG_COPY=0 MK_FUSED_RS_COPY=0 MK_FUSED_AR_COPY=0" # the SM roles (no longer the default from fauto on)
for op in ag_gemm gemm_rs gemm_ar; do
  step ${op}_sm 90 env $SM mk-launch -n 4 -- mk-bench $op --json "$RES/${op}_sm.json"
  step ${op}_ce 90 env $CE mk-launch -n 4 -- mk-bench $op --path fused --json "$RES/${op}_ce.json"
  step ${op}_ce3 90 env $CE MK_FUSED_CE_STREAMS=3 mk-launch -n 4 -- mk-bench $op --path fused --json "$RES/${op}_ce3.json"
done
for op in ag_gemm gemm_rs; do
  step torch_$op 90 mk-launch -n 4 -- python3 "$REPO/tools/bench/torch_async_tp.py" --op $op --merge "$RES/${op}_sm.json"
done
TAIL=30 step layer_batch 200 mk-launch -n 4 -- mk-bench layer --decode batch --warmup 3 --iters 10 --json "$RES/layer_batch.json"
B="mk-launch -n 4 -- mk-bench moe --breakdown --shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
TAIL=30 step moe_decode_base 100 $B --json "$RES/moe_decode_base.json"
TAIL=30 step moe_decode_split 100 $B --split-k 8 --json "$RES/moe_decode_split.json"
echo "end at $(( $(date +%s) - T0 )) s"
