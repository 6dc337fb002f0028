#!/usr/bin/env bash
# next_s32.sh — session 32's GPU runs (docs/perf/NOTES.md, fused "Session 32"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs): GEMM+RS / GEMM+AR in fold mode (MK_FUSED_FOLD=1, new, opt-in: the GEMM computes the peers' rows
#   first and stores them into their owners' staging, its own rows last; each own tile's epilogue adds the peers'
#   partials and, for AR, pushes the sums to every peer; the GEMM CTAs past their last tile copy the peers' sums into
#   C) against the defaults (=0), in turns, twice, at the issue's shapes.
#   Prediction (2 ranks; 0.2465 / 0.863 / 0.379 / 1.532 ms at 42a67db): AR 1024 ~0.18, AR 4096 ~0.69, RS 2048 ~0.33,
#   RS 8192 ~1.43 (the GEMM on every SM, + ~2 us an own tile of epilogue, + the last tiles' flags and AR's copy).
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_fused_(ar|rs)(_fold|_ce|_push|)_2$" CTEST_TIMEOUT=120 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s32.sh a'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|fused in|keeps the SM path|FAIL|rror'
  fold_turns
fi
# part b (2 GPUs): after run 05091f8-x2 (fold slower than the defaults except AR 1024: RS 8192 1.72-1.76 against
#   1.55-1.59, RS 16384 3.48-3.55 against 3.13-3.14, AR 4096 0.90 against 0.87-0.88; ~13 us more a tile at RS): fold's
#   parts left out one by one (MK_FUSED_FOLD_DEBUG: 1 no sums, 2 the peers' rows kept local, 4 no flags; 7 = the GEMM
#   alone in fold's order, local stores), then one traced call (MK_TRACE: each tile's end on every CTA) of RS 8192 in
#   fold mode and on copy engines.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_fused_rs_fold_2$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s32.sh b'
if [ "$PART" = b ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|fused in|keeps the SM path|FAIL|rror'
  fused_op rs_def gemm_rs "2048 8192" MK_FUSED_FOLD=0
  for d in 0 1 2 3 4 7; do fused_op "rs_dbg$d" gemm_rs "2048 8192" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=$d; done
  for d in 0 1 3 7; do fused_op "ar_dbg$d" gemm_ar "1024 4096" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=$d; done
  for fd in 1 0; do
    TAIL=4 step "rs_trace$fd" 60 env MK_FUSED_FOLD=$fd MK_TRACE="$RES/rs_trace$fd.json" mk-launch -n "$G" -- \
      mk-bench gemm_rs --m 8192 --warmup 3 --iters 3 --seed 7
  done
fi
# part c (2 GPUs): after run af3dcfe-x2 (the GEMM alone in fold's layout, MK_FUSED_FOLD_DEBUG=7, took RS 8192 1.64 ms and
#   AR 1024 0.202, against 1.31-1.37 / 0.157 for the GEMM alone; traced tiles 92 us against 78 on copy engines): the
#   epoch read once per thread instead of a volatile load in out_row for every stored row (SM roles and push mode
#   paid it too: AR 1024's default two-shot); fold against the defaults in turns, twice, and the GEMM alone in fold's
#   layout. Prediction: dbg7 at the GEMM alone (1.35 / 0.158); fold RS 8192 ~1.42, AR 1024 ~0.18; the SM two-shot
#   default of AR 1024 faster than 0.2465.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_fused_(ar|rs)(_fold|_ce|_push|_two|_tail|)_2$" CTEST_TIMEOUT=120 \
#     CTEST_WALL=240 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s32.sh c'
if [ "$PART" = c ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|fused in|fused two|keeps the SM path|FAIL|rror'
  fold_turns
  fused_op rs_dbg7 gemm_rs "2048 8192" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=7
  fused_op ar_dbg7 gemm_ar "1024 4096" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=7
fi
# part d (2 GPUs): after run 7b94fc5-x2 (the epoch read once: fold's GEMM alone, MK_FUSED_FOLD_DEBUG=7, still RS 8192
#   1.62 ms / AR 1024 0.198 against the cuBLAS GEMM's 1.36 / 0.155; the traced tiles took 92 us in both halves against
#   79 us on copy engines): what makes the GEMM slower in fold's layout. The GEMM core alone (mk-bench gemm, one GPU) at
#   the two shapes; fold's GEMM with every row through out_row's plain path (=15); with the direct epilogue
#   (MK_GEMM_EPI=0); the copy-engine default and SM roles (MK_FUSED_RS_COPY=0) beside them.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_fused_rs_fold_2$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s32.sh d'
if [ "$PART" = d ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|fused in|fused two|keeps the SM path|FAIL|rror'
  TAIL=6 step core_gemm 60 mk-bench gemm --shape 8192x8192x3584 --shape 1024x8192x3584 --seed 7 \
    --json "$RES/core_gemm.json"
  fused_op rs_def gemm_rs "8192" MK_FUSED_FOLD=0
  fused_op rs_sm gemm_rs "8192" MK_FUSED_FOLD=0 MK_FUSED_RS_COPY=0
  for d in 7 15; do
    fused_op "rs_dbg$d" gemm_rs "8192" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=$d
    fused_op "ar_dbg$d" gemm_ar "1024" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=$d
  done
  fused_op rs_dbg7_direct gemm_rs "8192" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=7 MK_GEMM_EPI=0
  fused_op rs_def_direct gemm_rs "8192" MK_FUSED_FOLD=0 MK_GEMM_EPI=0
  fused_op rs_fold gemm_rs "8192" MK_FUSED_FOLD=1
fi
# part e (2 GPUs): after run 7df6626-x2 (fold's GEMM with every row through out_row's plain path, =15: RS 8192 1.426,
#   AR 1024 0.179, against 1.60 / 0.202 through the push path's row / ms, a 64-bit division for each stored row): the
#   owner by compares; fold against the defaults in turns, twice; the GEMM alone in fold's layout (=7) and SM roles.
#   Prediction: =7 at =15's times; fold RS 8192 ~1.45-1.50, AR 1024 ~0.19; SM roles' RS faster than 1.76 (push mode).
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_fused_(ar|rs)(_fold|_ce|_push|_two|_tail|)_2$" CTEST_TIMEOUT=120 \
#     CTEST_WALL=240 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s32.sh e'
if [ "$PART" = e ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|fused in|fused two|keeps the SM path|FAIL|rror'
  fold_turns
  fused_op rs_dbg7 gemm_rs "8192" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=7
  fused_op ar_dbg7 gemm_ar "1024" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=7
  fused_op rs_sm gemm_rs "2048 8192" MK_FUSED_FOLD=0 MK_FUSED_RS_COPY=0
fi
# part f (2 GPUs): after run f9ef394-x2 (the owner by compares: fold's GEMM alone, =7, RS 8192 1.536 / AR 1024 0.196
#   against 1.426 / 0.179 through out_row's plain path, =15; fold 1.67-1.68 / 0.241-0.243, the defaults 1.52-1.53 /
#   0.252): the staged epilogue forms its 4 row addresses once a tile, not once a slab (row_ptr read the policy from
#   local memory, which every store may alias), and fold's sum forms its addresses once, lane l on chunk l of each
#   row; fold against the defaults in turns, twice; =7 and =15 once.
#   Prediction: =7 at =15 (~1.43 / 0.18); fold RS 8192 ~1.55, AR 1024 ~0.22.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(fused_(ar|rs)(_fold|_ce|_push|_two|_tail|)_2|gemm|moe_block)$" \
#     CTEST_TIMEOUT=120 CTEST_WALL=240 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s32.sh f'
if [ "$PART" = f ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|fused in|fused two|keeps the SM path|FAIL|rror'
  fold_turns
  for d in 7 15; do
    fused_op "rs_dbg$d" gemm_rs "8192" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=$d
    fused_op "ar_dbg$d" gemm_ar "1024" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=$d
  done
  TAIL=6 step core_gemm 60 mk-bench gemm --shape 8192x8192x7168 --shape 1024x8192x7168 --seed 7 \
    --json "$RES/core_gemm.json"
fi
# part g (2 GPUs): the final tree, fold the default for GEMM+AR over 2 ranks (MK_FUSED_FOLD=-1): every 2-rank fused test
#   and the model's fused / unfused / sequence-parallel 2-rank tests; the three ops at the issue's shapes at their
#   defaults (docs/perf/{ag_gemm,gemm_rs,gemm_ar}_h200x2_<commit>.json).
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_(fused_[a-z_0-9]*_2|model_gpu_(fused|unfused|sp_agree)_2)$" \
#     CTEST_TIMEOUT=150 CTEST_WALL=330 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s32.sh g'
if [ "$PART" = g ]; then
  export STEP_GREP='^\[0\] (gemm_|ag_|\{)|^gemm|fused on|fused in|fused two|keeps the SM path|FAIL|rror'
  fused_op ag_def ag_gemm "2048 8192 16384"
  fused_op rs_def gemm_rs "2048 8192 16384"
  fused_op ar_def gemm_ar "16 128 1024 4096"
fi
