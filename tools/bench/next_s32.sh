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
  for r in 1 0 1b 0b; do
    fused_op "ar_fold$r" gemm_ar "1024 4096" MK_FUSED_FOLD="${r%b}"
    fused_op "rs_fold$r" gemm_rs "2048 8192 16384" MK_FUSED_FOLD="${r%b}"
  done
fi
