#!/usr/bin/env bash
# next_x4.sh — the 4-GPU acceptance runs owed since session 26 (only the 1- and 2-GPU kinds were lent in sessions
# 26-33), one device call a part on nvidia-h200-x4, each within one 600 s call with the build. Run through
# tools/gpu-check.sh from the repository root. Results: $RES/<name>.json (copy the tables to docs/perf/ as
# <op>_h200x4_<commit>.json), logs beside them.
# part a — issue 6 (fused AG+GEMM, GEMM+RS, GEMM+AR): the three ops at the issue's shapes at their defaults
#   (--interleave --seed 7), PyTorch async-TP merged into the AG / RS tables, then fold mode (MK_FUSED_FOLD=1, opt-in
#   at 4 ranks: never measured there) against the defaults in turns, twice, at AR 1024 / 4096 and RS 2048 / 8192 /
#   16384; copy engines with the own rows summed in the epilogue (MK_FUSED_CE_FOLD=1; the GEMM+AR default on 2
#   ranks, 1.6-3.5 % ahead of fold there, RS level with the reduce kernel: session 34) in turns with the defaults,
#   twice; the 2 x 2 loopback tables (acceptance 3). Tests: the fused ops' 4-rank and 2 x 2 variants, fold's and
#   CE-fold's among them.
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_fused_(ag|rs|ar)(_fold|_cefold|_ce|_two|)_(4|2nodes)$" CTEST_TIMEOUT=90 \
#     CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_x4.sh a'
# part b — issue 7 (fused MoE): mk-bench moe at the issue's shapes (defaults, --breakdown) on EP = 4, and on 2 x 2
#   through the loopback proxy; tests test_moe_block_ep4 and _2x2; MK_MOE_CE_SEND -1 / 0 in turns at the E = 128
#   and 256 prefill shapes (session 38).
#   MK_CALL_LIMIT=540 CTEST_ARGS="-R ^test_moe_block_(ep4|2x2)$" CTEST_TIMEOUT=200 CTEST_WALL=250 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_x4.sh b'
# part c — issue 9 (layers and model): the layer at TP = EP = 4, both presets, prefill and decode (one sequence),
#   eager and --graph in turns, twice (session 27's part d), and once with --decode batch (64 sequences); tests: the
#   model's 4-GPU and 2 x 2 agreement tests.
#   MK_CALL_LIMIT=560 \
#     CTEST_ARGS="-R ^test_model_gpu_(fused_4|unfused_4|fused_tp4|agree_tp4|fused_2nodes|agree_2nodes|sp_agree_tp4)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=260 tools/gpu-check.sh -- 'bash ../../tools/bench/next_x4.sh c'
# part d — issue 6, where the time goes at 4 ranks (session 36 did it on 2): the kernel tracer's timelines (kernels,
#   memsets, peer copies around the op's GEMM, both ranks' medians) of AG+GEMM 2048, GEMM+RS 2048, GEMM+AR 1024 and
#   4096 at their defaults, fused path only, and MK_TRACE of one call of each (tiles' ends per 10 us, waits).
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R ^test_fused_(ag|rs|ar)_ce_4$" CTEST_TIMEOUT=90 CTEST_WALL=120 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_x4.sh d'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
[ "$G" -ge 4 ] || { echo "next_x4.sh: needs 4 GPUs, found $G"; exit 1; }
G=4
if [ "$PART" = a ]; then
  export STEP_GREP='^\[0\] (gemm_|ag_|\{)|^gemm|fused on|fused in|fused two|keeps the SM path|async-TP|FAIL|rror'
  fused_op ag_def ag_gemm "2048 8192 16384"
  fused_op rs_def gemm_rs "2048 8192 16384"
  fused_op ar_def gemm_ar "16 128 1024 4096"
  async_tp torch_ag ag_gemm "$RES/ag_def.json"
  async_tp torch_rs gemm_rs "$RES/rs_def.json"
  fold_turns
  for r in 1 2; do
    fused_op "ar_cefold_$r" gemm_ar "1024 4096" MK_FUSED_FOLD=0 MK_FUSED_AR_COPY=1 MK_FUSED_CE_FOLD=1
    fused_op "ar_cedef_$r" gemm_ar "1024 4096"
    fused_op "rs_cefold_$r" gemm_rs "2048 8192 16384" MK_FUSED_CE_FOLD=1
    fused_op "rs_cedef_$r" gemm_rs "2048 8192 16384"
  done
  for op in ag_gemm gemm_rs gemm_ar; do
    TAIL=8 step "${op}_2x2" 90 mk-launch -n 4 --nodes 2 -- mk-bench $op --interleave --seed 7 \
      --json "$RES/${op}_2x2.json"
  done
  for f in ag_def rs_def ar_def; do
    mk-bench plot "$RES/$f.json" -o "$RES/$f.png" > /dev/null 2>&1 || echo "plot $f failed"
  done
fi
if [ "$PART" = b ]; then
  STEP_GREP="$STEP_GREP|phases"
  TAIL=40 step moe_ep4 150 mk-launch -n 4 -- mk-bench moe --breakdown --seed 7 --json "$RES/moe_def.json"
  TAIL=20 step moe_2x2 150 mk-launch -n 4 --nodes 2 -- mk-bench moe --seed 7 --json "$RES/moe_2x2.json"
  mk-bench plot "$RES/moe_def.json" -o "$RES/moe_def.png" > /dev/null 2>&1 || echo "plot moe failed"
  # session 38's rows by copy engine (MK_MOE_CE_SEND, on by default at E = 128 and 256 on 4 ranks: copies to 3 peers
  # one after the other on one stream) against the SM dispatch, in turns, twice
  for v in -1 0 -1b 0b; do
    TAIL=4 step "ce_${v}" 40 env MK_MOE_CE_SEND="${v%b}" mk-launch -n 4 -- mk-bench moe --shape 4096,2048,128,8,768 \
      --shape 8192,7168,256,8,2048 --path fused --breakdown --iters 20 --seed 7 --json "$RES/ce_${v}.json"
  done
fi
if [ "$PART" = c ]; then
  STEP_GREP="$STEP_GREP|phases"
  for v in eager graph batch eagerb graphb; do
    g=()
    case $v in graph*) g=(--graph) ;; batch) g=(--decode batch) ;; esac
    layer "layer_$v" "$BIN" "${g[@]}"
  done
  mk-bench plot "$RES/layer_eager.json" -o "$RES/layer_eager.png" > /dev/null 2>&1 || echo "plot layer failed"
fi
if [ "$PART" = d ]; then
  export STEP_GREP='(gemm_ar|gemm_rs|ag_gemm) +fused|rror|FAIL'
  kt_ops
  trace_op tr_ag2048 ag_gemm 2048
  trace_op tr_rs2048 gemm_rs 2048
  trace_op tr_ar1024 gemm_ar 1024
fi
