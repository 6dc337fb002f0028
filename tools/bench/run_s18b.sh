#!/usr/bin/env bash
# tools/bench/run_s18b.sh — session 18, 4 x H200: why the fused AG+GEMM loses to NCCL + cuBLASLt at the sequence-
# parallel layer's q projections (run 1138098: 8192 x 1024 x 4096 0.349 against 0.283 ms, 8192 x 1024 x 2048 0.259
# against 0.157). Copy-engine piece sizes and streams, the SM pushers by CTA count, one MK_TRACE of each mode; GEMM+RS
# at Qwen3's O projection on SM roles; then the layer A/B (MK_LAYER_SP -1 / 0) at one fixed seed. Ran as:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R nothing" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s18b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_gemm|gemm_rs|layer) +(un)?fused|T=|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
agv() { # NAME K ENV... : one AG+GEMM 8192 x 1024 x K in turns under ENV
  local name=$1 k=$2
  shift 2
  TAIL=2 step "$name" 25 env "$@" mk-launch -n 4 -- mk-bench ag_gemm --m 8192 --n 1024 --k "$k" --interleave \
    --json "$RES/$name.json"
}
for k in 4096 2048; do
  agv ag${k}_def $k MK_FUSED_AG_COPY=-1
  for r in 512 1024 2048; do agv ag${k}_rows$r $k MK_FUSED_CE_ROWS=$r; done
  agv ag${k}_str3 $k MK_FUSED_CE_STREAMS=3
  agv ag${k}_str3_rows1024 $k MK_FUSED_CE_STREAMS=3 MK_FUSED_CE_ROWS=1024
  for c in 0 8 16 32; do
    TAIL=2 step ag${k}_sm_c$c 25 env MK_FUSED_AG_COPY=0 mk-launch -n 4 -- mk-bench ag_gemm --m 8192 --n 1024 --k $k \
      --ctas $c --interleave --json "$RES/ag${k}_sm_c$c.json"
  done
done
agv ag4096_trace_ce 4096 MK_TRACE=$RES/ag4096_ce.trace.json
agv ag4096_trace_sm 4096 MK_FUSED_AG_COPY=0 MK_TRACE=$RES/ag4096_sm.trace.json
for c in 0 16 32; do
  TAIL=2 step rs2048_sm_c$c 25 env MK_FUSED_RS_COPY=0 mk-launch -n 4 -- mk-bench gemm_rs --m 8192 --n 2048 --k 1024 \
    --ctas $c --interleave --json "$RES/rs2048_sm_c$c.json"
done
L="layer --interleave --warmup 3 --iters 10 --seed 7"
TAIL=6 step layer_sp 60 mk-launch -n 4 -- mk-bench $L --json "$RES/layer_sp.json"
TAIL=6 step layer_tp 60 env MK_LAYER_SP=0 mk-launch -n 4 -- mk-bench $L --json "$RES/layer_tp.json"
echo "end at $(( $(date +%s) - T0 )) s"
