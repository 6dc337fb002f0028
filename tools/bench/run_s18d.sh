#!/usr/bin/env bash
# tools/bench/run_s18d.sh — session 18, 4 x H200: the layer with every timed call started on all ranks together
# (mk-bench layer's NCCL barrier before each call), sequence parallel (default) against tensor parallel
# (MK_LAYER_SP=0) at one seed, both presets; the default layer run with --decode batch for docs/perf; the AG+GEMM
# of Mixtral's q projection by shape (16 SM pushers since MK_FUSED_AG_CE_MIN_N = 4096). Ran as:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R test_fused_(select|ag_auto_4)$|test_model_gpu_(sp_|agree_tp4$)" \
#     CTEST_TIMEOUT=200 CTEST_WALL=300 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s18d.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_gemm|gemm_rs) +(un)?fused|T=|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
TAIL=2 step ag_q 25 mk-launch -n 4 -- mk-bench ag_gemm --m 8192 --n 1024 --k 4096 --interleave --json "$RES/ag_q.json"
L="layer --interleave --warmup 3 --iters 20 --seed 7"
TAIL=4 step layer_sp 80 mk-launch -n 4 -- mk-bench $L --json "$RES/layer_sp.json" --samples "$RES/layer_sp.samples.csv"
TAIL=4 step layer_tp 80 env MK_LAYER_SP=0 mk-launch -n 4 -- mk-bench $L --json "$RES/layer_tp.json" \
  --samples "$RES/layer_tp.samples.csv"
TAIL=4 step layer_batch 100 mk-launch -n 4 -- mk-bench layer --decode batch --interleave --warmup 3 --iters 20 \
  --json "$RES/layer_h200x4.json"
echo "end at $(( $(date +%s) - T0 )) s"
