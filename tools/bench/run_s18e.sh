#!/usr/bin/env bash
# tools/bench/run_s18e.sh — session 18, 4 x H200: where sequence parallel starts to pay (the layer at 1024 and
# 2048 tokens, MK_LAYER_SP=1 against 0, seed 7, in turns; MK_LAYER_SP_MIN is 1024), and GEMM+RS at the O
# projections on copy engines with larger owner pieces (MK_FUSED_CE_SEQ_ROWS). Regression tests under CTEST_ARGS:
#   MK_CALL_LIMIT=580 CTEST_ARGS="-R test_model_gpu|test_fused_ag|^test_fused$|test_fused_(rs|ar)_(2|4|auto_4)$|test_layers" \
#     CTEST_TIMEOUT=200 CTEST_WALL=400 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s18e.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_rs) +(un)?fused|T=|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
for t in 1024 2048; do
  for sp in 1 0; do
    TAIL=4 step layer_t${t}_sp$sp 40 env MK_LAYER_SP=$sp mk-launch -n 4 -- mk-bench layer --tokens $t --interleave --warmup 3 \
      --iters 20 --seed 7 --json "$RES/layer_t${t}_sp$sp.json"
  done
done
for s in "4096 1024" "2048 1024"; do
  set -- $s
  for r in 1024 2048; do
    TAIL=2 step rs_$1_rows$r 25 env MK_FUSED_CE_SEQ_ROWS=$r mk-launch -n 4 -- mk-bench gemm_rs --m 8192 --n $1 --k $2 \
      --interleave --json "$RES/rs_$1_rows$r.json"
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
