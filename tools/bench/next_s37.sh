#!/usr/bin/env bash
# next_s37.sh — session 37's GPU runs (docs/perf/NOTES.md, fused "Session 37"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs): GEMM+AR's copy-engine fold (the default at M = 1024, 4096 on 2 ranks) with the last wave's own
#   tiles in 2 k-slices, tile-major (MK_FUSED_CE_FOLD_SPLIT), and the own tiles' sums pushed to the peer by the
#   signaller's crew, three warps of the producer warpgroup (MK_FUSED_CE_FOLD_CREW), instead of by the consumer warps
#   in the epilogue: (split, crew) = (0, 0) the old protocol, (0, 1), (-1, 1) the new default, (-1, 0), in turns,
#   twice, fused path; the defaults against unfused and the bound; the kernel tracer's timeline and MK_TRACE of M =
#   1024 at the new default; every 2-rank fused test (ar_cesplit new).
#   Prediction: AR 1024 0.219 -> ~0.200 ms (the last wave's 124 own tiles' sums, 8 MiB at ~350 GB/s after the GEMM,
#   become 58 tiles' 3.6 MiB; the rest leave during the second half of the wave); AR 4096 -5 to -10 us.
#   MK_CALL_LIMIT=580 CTEST_ARGS="-R ^test_fused_[a-z_0-9]*_2$" CTEST_TIMEOUT=120 CTEST_WALL=240 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s37.sh a'
# (Part a ran 4139eb6's tree, reverted after it: check that commit out to repeat it.)
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
ar_env() { # NAME "MS" VAR=VALUE...: GEMM+AR's fused path at the M list MS with the environment, JSON into RES/NAME.json
  local name=$1 args=()
  for m in $2; do args+=(--m "$m"); done
  shift 2
  TAIL=4 step "$name" 50 env "$@" mk-launch -n "$G" -- mk-bench gemm_ar "${args[@]}" --path fused --seed 7 \
    --json "$RES/$name.json"
}
if [ "$PART" = a ]; then
  export STEP_GREP='gemm_ar +fused|rror|FAIL'
  for r in 1 2; do
    for v in "0 0" "0 1" "-1 1" "-1 0"; do
      set -- $v
      ar_env "ar_s$1_c$2_$r" "1024 4096" MK_FUSED_CE_FOLD_SPLIT="$1" MK_FUSED_CE_FOLD_CREW="$2"
    done
  done
  export STEP_GREP='^\[0\] gemm_ar|rror|FAIL'
  fused_op ar_def gemm_ar "1024 4096"
  kt_op kt_ar1024 gemm_ar 'mk_reduce_policy<2' --m 1024 --path fused --warmup 10 --iters 30
  trace_op tr_ar1024 gemm_ar 1024
fi
