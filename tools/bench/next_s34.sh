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
# part b (2 GPUs): after run bb48c78-x2 (AR 1024: the op's kernel without communication, =15, 0.179 ms against the
#   plain GEMM's 0.161 in the same bench, =47 0.175; RS 8192 1.43-1.46 against 1.36-1.41): the policies read-only
#   (gemm_core.cuh: a __grid_constant__ parameter, the RS/AR and AG policies copied once into the CTA's shared
#   memory, per-thread State), so that no thread copies the policy into local memory. =15 against =31 again, in
#   turns, twice; the three ops at the issue's shapes at the defaults; fold against the defaults in turns, twice;
#   the MoE table at its defaults (its policies changed too: their hooks const, GEMM1's ll_seen in its State).
#   Prediction: =15 within 3 % of =31 at AR 1024 (0.179 -> ~0.166) and RS 8192; every default faster than at b68a875
#   (AG 8192 1.420, RS 8192 1.530, AR 1024 0.234); MoE level.
#   MK_CALL_LIMIT=560 CTEST_TIMEOUT=150 CTEST_WALL=300 \
#     CTEST_ARGS="-R ^test_((fused_[a-z_0-9]*|model_gpu_(fused|unfused|sp_agree))_2|(gemm|moe_block)(_grouped)?)$" \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s34.sh b'
if [ "$PART" = b ]; then
  export STEP_GREP='^\[0\] (gemm_|ag_|moe|\{)|^gemm|fused in|fused on|FAIL|rror'
  for r in 1 2; do
    for d in 15 31; do
      fused_op "rs_dbg${d}_$r" gemm_rs "8192" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=$d
      fused_op "ar_dbg${d}_$r" gemm_ar "1024" MK_FUSED_FOLD=1 MK_FUSED_FOLD_DEBUG=$d
    done
  done
  fused_op ag_def ag_gemm "2048 8192 16384"
  fused_op rs_def gemm_rs "2048 8192 16384"
  fused_op ar_def gemm_ar "16 128 1024 4096"
  fold_turns
  moe moe_def ""
fi
# part c (2 GPUs): after run 373ce9f-x2 (GEMM+RS on copy engines: 0.351 / 1.515 / 2.960 ms against its GEMM's
#   0.31 / 1.38 / 2.78; the owner's reduce kernel after the GEMM reads the own rows and the copied ones and writes C,
#   48 / 192 / 384 MB at M = 2048 / 8192 / 16384): MK_FUSED_CE_FOLD=1, the own tiles (computed last, after the peers'
#   copies of this rank's rows are in) sum in their epilogue, no reduce kernel; =1 against =0 in turns, twice; every
#   RS test on 2 ranks (rs_cefold compares the bits of the two); the layer at its defaults (both models, prefill and
#   decode: the fused ops' kernels changed in part b).
#   Prediction: RS 2048 ~0.33, 8192 ~1.43, 16384 ~2.86 (the reduce kernel's time gone, the epilogue sums hidden).
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_fused_rs[a-z_]*_2$" CTEST_TIMEOUT=120 CTEST_WALL=120 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s34.sh c'
if [ "$PART" = c ]; then
  export STEP_GREP='^\[0\] (gemm_|layer|\{)|^gemm|fused on|FAIL|rror'
  for r in 1 0 1b 0b; do fused_op "rs_cefold$r" gemm_rs "2048 8192 16384" MK_FUSED_CE_FOLD="${r%b}"; done
  layer layer_def "$BIN"
fi
# part d (2 GPUs): after run bcd6cd2-x2 (MK_FUSED_CE_FOLD=1 slower at RS 8192 / 16384, 1.55-1.56 / 3.19-3.22 against
#   1.44-1.48 / 2.99-3.05 ms: the own tiles waited for the peer's copy of all of this rank's rows, one 64 / 128 MB piece
#   copied only after the peer's last group of them): the copies in pieces of one group of the GEMM's order (2048
#   rows), each flagged to the owner, whose own tiles wait for their piece only. =1 against =0 in turns, twice; the
#   RS tests on 2 ranks.
#   Prediction: RS 8192 ~1.43, 16384 ~2.86 (=0 1.46 / 3.0).
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_fused_rs[a-z_]*_2$" CTEST_TIMEOUT=120 CTEST_WALL=120 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s34.sh d'
if [ "$PART" = d ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|FAIL|rror'
  for r in 1 0 1b 0b; do fused_op "rs_cefold$r" gemm_rs "2048 8192 16384" MK_FUSED_CE_FOLD="${r%b}"; done
fi
# part e (2 GPUs): after run 4e1e411-x2 (RS with MK_FUSED_CE_FOLD=1 level with its reduce kernel): the same for
#   GEMM+AR, against fold mode (the AR default on 2 ranks). Fold stores the peers' rows over NVLink from the epilogue
#   of the first half, 8 MB at M = 1024 from all SMs at once (~22 us at ~370 GB/s, in our reading stalling the
#   consumer warps); here they are stored locally and the copy engines push them, the own tiles sum in their epilogue
#   and push the sums as fold does. MK_FUSED_FOLD=0 MK_FUSED_AR_COPY=1 MK_FUSED_CE_FOLD=1 against MK_FUSED_FOLD=1,
#   in turns, twice; every AR test on 2 ranks (ar_cefold compares the bits with the copy engines' second shot).
#   Prediction: AR 1024 0.227 -> ~0.205, AR 4096 0.786 -> ~0.75.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_fused_(ar|rs_cefold)[a-z_]*_2$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s34.sh e'
if [ "$PART" = e ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|fused in|FAIL|rror'
  for r in 1 2; do
    fused_op "ar_cefold_$r" gemm_ar "1024 4096" MK_FUSED_FOLD=0 MK_FUSED_AR_COPY=1 MK_FUSED_CE_FOLD=1
    fused_op "ar_fold_$r" gemm_ar "1024 4096" MK_FUSED_FOLD=1
  done
fi
# part f (2 GPUs): after run 0ce5506-x2 (AR with MK_FUSED_CE_FOLD=1: 1024 0.2195 against fold's 0.228, -3.7 %;
#   4096 0.81-0.83 against 0.79-0.81, slower: the owner's own tiles waited for the copy of the peer's last group of
#   its rows, 2048 rows, 32 MB, ~86 us): groups (and pieces) of 8 tile-rows in that mode, so the last copy is 16 MB.
#   CE-fold against fold (AR) and against the reduce kernel (RS), in turns, twice.
#   Prediction: AR 4096 ~0.77 (under fold's 0.79-0.81), AR 1024 unchanged (one group of 4 tile-rows), RS level.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_fused_(ar|rs)_cefold_2$" CTEST_TIMEOUT=120 CTEST_WALL=100 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s34.sh f'
if [ "$PART" = f ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|fused in|FAIL|rror'
  for r in 1 2; do
    fused_op "ar_cefold_$r" gemm_ar "1024 4096" MK_FUSED_FOLD=0 MK_FUSED_AR_COPY=1 MK_FUSED_CE_FOLD=1
    fused_op "ar_fold_$r" gemm_ar "1024 4096" MK_FUSED_FOLD=1
    fused_op "rs_cefold1_$r" gemm_rs "2048 8192 16384" MK_FUSED_CE_FOLD=1
    fused_op "rs_cefold0_$r" gemm_rs "2048 8192 16384" MK_FUSED_CE_FOLD=0
  done
fi
# part g (2 GPUs): the final tree: every fused test on 2 ranks, the model's 2-rank tests, the GEMM and MoE block tests;
#   the three ops at the issue's shapes at the defaults (docs/perf/{ag_gemm,gemm_rs,gemm_ar}_h200x2_<commit>.json).
#   MK_CALL_LIMIT=420 CTEST_TIMEOUT=150 CTEST_WALL=300 \
#     CTEST_ARGS="-R ^test_(fused_[a-z_0-9]*_2|gemm(_grouped)?|moe_block|model_gpu_(fused|unfused|sp_agree)_2)$" \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s34.sh g'
if [ "$PART" = g ]; then
  export STEP_GREP='^\[0\] (gemm_|ag_|\{)|^gemm|fused on|fused in|fused two|FAIL|rror'
  fused_op ag_def ag_gemm "2048 8192 16384"
  fused_op rs_def gemm_rs "2048 8192 16384"
  fused_op ar_def gemm_ar "16 128 1024 4096"
fi
# part h (2 GPUs): MK_FUSED_CE_FOLD's default -1 (GEMM+AR over 2 ranks on copy engines by shape, ahead of fold mode
#   and the SM two-shot there; run a1217a2-x2). GEMM+AR at the issue's shapes at the defaults; -1 against 0 (fold
#   mode) in turns, twice, at AR 1024 / 4096; the layer (its O projection is a GEMM+AR: 8192 x 4096 x 2048 and
#   8192 x 2048 x 2048 at prefill on 2 ranks, now on copy engines) at -1 and 0 in turns, twice; tests: every GEMM+AR
#   test on 2 ranks (test_fused_ar_auto_2 new: the default at the round shape) and the model's 2-rank tests.
#   Prediction: AR 1024 ~0.222, 4096 ~0.785; the layers' attention blocks at prefill level or faster.
#   MK_CALL_LIMIT=400 CTEST_TIMEOUT=150 CTEST_WALL=200 \
#     CTEST_ARGS="-R ^test_(fused_ar[a-z_0-9]*|model_gpu_(fused|unfused|sp_agree))_2$" \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s34.sh h'
if [ "$PART" = h ]; then
  export STEP_GREP='^\[0\] (gemm_|layer +|\{)|^gemm|fused on|fused in|fused two|FAIL|rror'
  fused_op ar_def gemm_ar "16 128 1024 4096"
  for r in 1 2; do
    fused_op "ar_cedef_$r" gemm_ar "1024 4096"
    fused_op "ar_fold_$r" gemm_ar "1024 4096" MK_FUSED_CE_FOLD=0
  done
  for r in 1 2; do
    layer "layer_cedef_$r" "$BIN"
    MK_FUSED_CE_FOLD=0 layer "layer_fold_$r" "$BIN"
  done
fi
