#!/usr/bin/env bash
# tools/bench/run_s18c.sh — session 18, 4 x H200: AG+GEMM by shape (MK_FUSED_AG_CE_MIN_N, 16 SM pushers below it)
# around the threshold (M = 8192, K = 4096, N = 2048 / 4096) and at the acceptance shape 2048 x 7168 x 8192, copy
# engines against 16 SM pushers; GEMM+RS at Mixtral's O projection on SM roles; the layer with per-call samples
# (Mixtral, seed 7, sequence parallel and not) to see where the fused MoE block's spread comes from; both presets
# at the defaults. Ran as:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R test_fused_(select|ag_4|ag_auto_4|ag_ce_4)$|^test_fused$|test_model_gpu_sp_agree_tp4" \
#     CTEST_TIMEOUT=200 CTEST_WALL=260 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s18c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_gemm|gemm_rs|layer) +(un)?fused|T=|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
for s in "8192 2048 4096" "8192 4096 4096" "2048 7168 8192"; do
  set -- $s
  TAIL=2 step ag_$1_$2_$3_def 25 mk-launch -n 4 -- mk-bench ag_gemm --m $1 --n $2 --k $3 --interleave --json "$RES/ag_$1_$2_$3_def.json"
  TAIL=2 step ag_$1_$2_$3_ce 25 env MK_FUSED_AG_COPY=1 mk-launch -n 4 -- mk-bench ag_gemm --m $1 --n $2 --k $3 --interleave \
    --json "$RES/ag_$1_$2_$3_ce.json"
  TAIL=2 step ag_$1_$2_$3_sm16 25 env MK_FUSED_AG_COPY=0 mk-launch -n 4 -- mk-bench ag_gemm --m $1 --n $2 --k $3 --ctas 16 \
    --interleave --json "$RES/ag_$1_$2_$3_sm16.json"
done
for c in 0 16; do
  TAIL=2 step rs4096_sm_c$c 25 env MK_FUSED_RS_COPY=0 mk-launch -n 4 -- mk-bench gemm_rs --m 8192 --n 4096 --k 1024 \
    --ctas $c --interleave --json "$RES/rs4096_sm_c$c.json"
done
L="layer --preset mixtral --interleave --warmup 3 --iters 20 --seed 7"
TAIL=6 step mix_sp 60 mk-launch -n 4 -- mk-bench $L --json "$RES/mix_sp.json" --samples "$RES/mix_sp.samples.csv"
TAIL=6 step mix_tp 60 env MK_LAYER_SP=0 mk-launch -n 4 -- mk-bench $L --json "$RES/mix_tp.json" --samples "$RES/mix_tp.samples.csv"
TAIL=6 step layer 60 mk-launch -n 4 -- mk-bench layer --interleave --warmup 3 --iters 10 --json "$RES/layer_h200x4.json"
echo "end at $(( $(date +%s) - T0 )) s"
