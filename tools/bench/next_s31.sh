#!/usr/bin/env bash
# next_s31.sh — session 31's GPU runs (docs/perf/NOTES.md, fused "Session 31"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs): GEMM+AR / GEMM+RS in beside mode (MK_FUSED_BESIDE=1, new, opt-in: the reduction, AR's both
#   shots, on a comm kernel of MK_FUSED_BESIDE_SMS CTAs beside the GEMM on the other SMs, tile-row parts of 256-column
#   slabs as the GEMM stores them, the rest by a launch on every SM after the GEMM) against the defaults (=0), in
#   turns, twice, at the issue's shapes; then variants (8 comm CTAs, 512-column slabs, no tail launch).
#   Prediction (2 ranks; 0.2465 / 0.863 / 0.379 / 1.532 ms at 42a67db): AR 1024 ~0.19, AR 4096 ~0.68, RS 2048 ~0.33,
#   RS 8192 ~1.40 (the GEMM on 128 SMs, the same waves at these shapes, plus a tail of the last wave's parts).
#   MK_CALL_LIMIT=540 CTEST_ARGS="-R ^test_fused_(ar|rs)(_beside|_ce|)_2$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s31.sh a'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
fop() { # NAME OP MS BESIDE [VAR=VALUE...]: fused_op with MK_FUSED_BESIDE=BESIDE
  fused_op "$1" "$2" "$3" MK_FUSED_BESIDE="$4" "${@:5}"
}
if [ "$PART" = a ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|keeps the SM path|FAIL|rror'
  for r in 1 0 1b 0b; do
    fop "ar_bs$r" gemm_ar "1024 4096" "${r%b}"
    fop "rs_bs$r" gemm_rs "2048 8192" "${r%b}"
  done
  fop ar_bs_sms8 gemm_ar "1024 4096" 1 MK_FUSED_BESIDE_SMS=8
  fop ar_bs_cols512 gemm_ar "1024 4096" 1 MK_FUSED_BESIDE_COLS=512
  fop ar_bs_notail gemm_ar "1024 4096" 1 MK_FUSED_BESIDE_TAIL=0
  fop rs_bs_sms8 gemm_rs "2048 8192" 1 MK_FUSED_BESIDE_SMS=8
fi
# part b (2 GPUs): after run 7620465-x2 (beside at 4 CTAs: AR 1024 0.242 against 0.245, AR 4096 0.906 against 0.872,
#   RS slower; without the tail launch AR 1024 took 0.719: the 4 CTAs move ~15 GB/s each): the progress counters out of
#   the flag area (local memory: they broke SM-path flags after beside calls), 8 loads in flight a thread in the
#   copies; the comm CTAs and the slab width swept, in turns with the defaults, twice.
#   Prediction: wider slabs (fewer fences and waits per byte) and 8-16 CTAs help AR 4096; AR 1024 loses its GEMM
#   waves above 4 CTAs (256 tiles on 128 SMs = 2 waves).
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_fused_(ar|rs)(_beside|)_2$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s31.sh b'
if [ "$PART" = b ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|keeps the SM path|FAIL|rror'
  for r in "" b; do
    fop "ar_def$r" gemm_ar "1024 4096" 0
    for c in 4:256 4:512 4:1024 8:512 16:512 16:1024; do
      fop "ar_bs${c/:/_}$r" gemm_ar "1024 4096" 1 MK_FUSED_BESIDE_SMS=${c%:*} MK_FUSED_BESIDE_COLS=${c#*:}
    done
    fop "rs_def$r" gemm_rs "2048 8192" 0
    for c in 4:512 8:512 16:1024; do
      fop "rs_bs${c/:/_}$r" gemm_rs "2048 8192" 1 MK_FUSED_BESIDE_SMS=${c%:*} MK_FUSED_BESIDE_COLS=${c#*:}
    done
  done
  fop ar_bs_notail16 gemm_ar "1024 4096" 1 MK_FUSED_BESIDE_SMS=16 MK_FUSED_BESIDE_COLS=512 MK_FUSED_BESIDE_TAIL=0
fi
# part c (2 GPUs): 4 loads in flight a thread again (run 7620465's copies), the local wait inlined, one claim ahead in
#   thread 0; beside at 4 CTAs and 256 / 512-column slabs in turns with the defaults, twice.
#   Prediction: AR 1024 back to run 7620465's 0.238-0.243 or lower (the claim's round trip off each task's chain).
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_fused_(ar|rs)_beside_2$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s31.sh c'
if [ "$PART" = c ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|keeps the SM path|FAIL|rror'
  for r in "" b; do
    fop "ar_def$r" gemm_ar "1024 4096" 0
    fop "ar_bs4_256$r" gemm_ar "1024 4096" 1 MK_FUSED_BESIDE_COLS=256
    fop "ar_bs4_512$r" gemm_ar "1024 4096" 1 MK_FUSED_BESIDE_COLS=512
    fop "rs_def$r" gemm_rs "2048 8192" 0
    fop "rs_bs4_512$r" gemm_rs "2048 8192" 1 MK_FUSED_BESIDE_COLS=512
  done
fi
# part d (2 GPUs): after the review (the own part's sum through mk_fused_reduce_block, the copy-engine mode's reduce,
#   instead of beside.cuh's own sum; the local waits through mk_wait_ge_ptr): the beside tests, and beside at 4 CTAs
#   and 512-column slabs in turns with the defaults, once.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_(fused_[a-z_0-9]*_2|moe_block)$" CTEST_TIMEOUT=120 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s31.sh d'
if [ "$PART" = d ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|keeps the SM path|FAIL|rror'
  fop ar_def gemm_ar "1024 4096" 0
  fop ar_bs4_512 gemm_ar "1024 4096" 1 MK_FUSED_BESIDE_COLS=512
  fop rs_def gemm_rs "2048 8192" 0
  fop rs_bs4_512 gemm_rs "2048 8192" 1 MK_FUSED_BESIDE_COLS=512
fi
