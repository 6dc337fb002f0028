#!/usr/bin/env bash
# next_s34.sh — session 34's GPU runs (docs/perf/NOTES.md, fused "Session 34"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs): is the GEMM inside the RS/AR kernel slower than the plain GEMM core, in the same bench? GEMM+RS
#   8192 and GEMM+AR 1024 in fold mode with its parts left out (MK_FUSED_FOLD_DEBUG): =15 the op's kernel with no
#   communication (every row into its own P), =31 the plain GEMM (mk_gemm_bf16) into P instead, =47 the op's kernel
#   in the plain grouped order; in turns, twice; =31 without the plain GEMM's split last wave (MK_GEMM_SPLIT_K=1);
#   the GEMM core alone (mk-bench gemm, one GPU) beside.
#   Question: session 32 measured =15 at 1.436 / 0.177 ms against the core alone at 1.307 / 0.160 in another bench.
#   Prediction if the kernel's code costs it (its policy, ~500 bytes, copied to local memory by every thread and read
#   from there in every tile's order and epilogue): =31 ~8 % under =15 at both shapes, =47 at =15.
#   MK_CALL_LIMIT=330 CTEST_ARGS="-R ^test_fused_(rs|ar)_fold_2$" CTEST_TIMEOUT=120 CTEST_WALL=100 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s34.sh a'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused in|FAIL|rror'
  for r in 1 2; do
    for d in 15 31 47; do
      fused_op "rs_dbg${d}_$r" gemm_rs "8192" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=$d
      fused_op "ar_dbg${d}_$r" gemm_ar "1024" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=$d
    done
  done
  fused_op rs_dbg31_nosplit gemm_rs "8192" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=31 MK_GEMM_SPLIT_K=1
  TAIL=6 step core_gemm 60 mk-bench gemm --shape 8192x8192x7168 --shape 1024x8192x7168 --seed 7 \
    --json "$RES/core_gemm.json"
fi
