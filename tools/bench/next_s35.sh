#!/usr/bin/env bash
# next_s35.sh — session 35's GPU runs (docs/perf/NOTES.md, fused "Session 35"). Run through tools/gpu-check.sh from
# the repository root. Parts a and b measured e8e6ed7's tree (its MK_FUSED_AR_SKINNY_ROUNDS and batched LL loads were
# reverted after them); run them on `git checkout e8e6ed7` to repeat them.
# part a (2 GPUs): GEMM+AR's small-M path. (1) The LL one-shot's sums load the W ranks' words of 4 (vector, rank)
#   pairs before checking any (one L2 round trip for them, not one a load); this build against 7a358b1's (carried as
#   .carry/old-7a358b1) at the layer's decode O projections (64 x 4096 x 2048, 64 x 2048 x 2048) and M = 16, 64 of the
#   issue's N = 8192, K = 7168, in turns, twice. (2) The weight slabs in rounds (MK_FUSED_AR_SKINNY_ROUNDS, new: a
#   round's partials pushed while the later rounds stream) with the LL one-shot at M = 128 (its 2 MiB partial now held
#   by the LL slot), against the default (fenced two-shot at M = 128): variants def, LL=1 R=1, LL=1 R=2, LL=1 R=4,
#   LL=0 R=2 at M = 16, 64, 128, in turns, twice, --breakdown.
#   Prediction: (1) the LL shapes -1 to -3 us (pushed -> waited 5.2 us at M = 64 in run c479cfb: 2 serial loads of 4);
#   (2) M = 128 0.054 -> ~0.046 with LL R=2 or R=4 (the tail: the last round's LL words, 4 / R MB, one latency, the
#   sums), M = 16 level or slower with rounds (the fix-up, no bytes to hide).
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_fused_ar[a-z_0-9]*_2$" CTEST_TIMEOUT=120 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s35.sh a'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
REPO=$BIN/../..
ar_shapes() { # NAME BINDIR [VAR=VALUE...]: GEMM+AR at M = 16, 64, 128 (N 8192, K 7168) with --breakdown
  local name=$1 bd=$2
  shift 2
  TAIL=12 step "$name" 60 env "$@" "$bd/mk-launch" -n "$G" -- "$bd/mk-bench" gemm_ar --m 16 --m 64 --m 128 \
    --n 8192 --k 7168 --interleave --breakdown --seed 7 --json "$RES/$name.json"
}
ar_o() { # NAME BINDIR: the decode layers' O projections, Mixtral's and Qwen3's at TP = 2
  local name=$1 bd=$2
  TAIL=6 step "${name}_o" 40 "$bd/mk-launch" -n "$G" -- "$bd/mk-bench" gemm_ar --m 64 --n 4096 --k 2048 \
    --interleave --breakdown --seed 7 --json "$RES/${name}_o.json"
  TAIL=6 step "${name}_q" 40 "$bd/mk-launch" -n "$G" -- "$bd/mk-bench" gemm_ar --m 64 --n 2048 --k 2048 \
    --interleave --breakdown --seed 7 --json "$RES/${name}_q.json"
}
if [ "$PART" = a ]; then
  export STEP_GREP='gemm_ar|phases|small-M|rror|FAIL'
  old_build 7a358b1
  for r in 1 2; do
    ar_o "new$r" "$BIN"
    ar_o "old$r" "$OB"
    ar_shapes "old_def$r" "$OB"
    ar_shapes "def$r" "$BIN"
    ar_shapes "ll1_r1_$r" "$BIN" MK_FUSED_AR_LL=1
    ar_shapes "ll1_r2_$r" "$BIN" MK_FUSED_AR_LL=1 MK_FUSED_AR_SKINNY_ROUNDS=2
    ar_shapes "ll1_r4_$r" "$BIN" MK_FUSED_AR_LL=1 MK_FUSED_AR_SKINNY_ROUNDS=4
    ar_shapes "ll0_r2_$r" "$BIN" MK_FUSED_AR_LL=0 MK_FUSED_AR_SKINNY_ROUNDS=2
  done
fi
# part b (2 GPUs): after run e8e6ed7-x2 (this build 1.8-2.9 us slower per call than 7a358b1's at every small-M shape,
#   the fenced M = 128 path included, whose stamps match within 0.6 us): is it the kernel or outside it? The kernel
#   tracer (libmk_ktrace.so) on GEMM+AR M = 16 and 128 at the defaults, both builds, in turns, twice: each kernel's
#   duration and the gaps; the skinny GEMM alone (mk-bench gemm, MK_GEMM_SKINNY=1) on one GPU, both builds.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_gemm_skinny$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s35.sh b'
kt_ar() { # NAME BINDIR LIST ARGS...: mk-bench gemm_ar ARGS of BINDIR's build under the kernel tracer, then the
  local name=$1 bd=$2 list=$3 # kernels matching LIST (count, median, p10, p90 on each rank) into $RES/NAME.txt
  shift 3
  [ -f "$KT" ] || { echo "no $KT (CUPTI not found at configure)"; return; }
  mkdir -p "$RES/$name"
  TAIL=6 step "$name" 60 env CUDA_INJECTION64_PATH="$KT" KTRACE_DIR="$RES/$name" "$bd/mk-launch" -n "$G" -- \
    "$bd/mk-bench" gemm_ar "$@" --interleave --seed 7 --json "$RES/$name.json"
  python3 "$BIN/../../tools/bench/ktrace_report.py" "$RES/$name" --files "$G" --list "$list" > "$RES/$name.txt" 2>&1
  grep -E "$list" "$RES/$name.txt"
}
if [ "$PART" = b ]; then
  export STEP_GREP='gemm_ar|gemm  |rror|FAIL'
  old_build 7a358b1
  part_b_kt() { # B R BINDIR
    kt_ar "kt_$1$2" "$3" 'skinny|nccl|nvjet|gemm' --m 16 --m 128 --n 8192 --k 7168
  }
  part_b_sk() { # B R BINDIR
    TAIL=4 step "sk_$1$2" 40 env MK_GEMM_SKINNY=1 "$3/mk-bench" gemm --shape 128x8192x7168 --shape 16x8192x7168 \
      --seed 7 --json "$RES/sk_$1$2.json"
  }
  for r in 1 2; do
    ab_pair part_b_kt "$r"
    ab_pair part_b_sk "$r"
  done
fi
# part c (2 GPUs): after run 5dcaac2-x2 (the kernel tracer: e8e6ed7's small-M kernels 1.7 / 3.3 us longer than
#   7a358b1's at M = 16 / 128, the fenced M = 128 path included, whose code was the same but for the loops over a
#   CTA's slabs; the plain skinny GEMM level): the rounds and the batched LL loads reverted (both refuted in run
#   e8e6ed7-x2), and the small-M path's exchange a template parameter (one-shot, two-shot, LL: three kernels, each with
#   its own path's code only; 2608 / 3808 / 2368 SASS instructions at T = 128, BN = 64, against 3952 for the one
#   kernel of 7a358b1). This build against 7a358b1's, in turns, twice, with the kernel tracer: M = 16, 64, 128 (N 8192,
#   K 7168) and the decode O projections.
#   Question: does the code a kernel carries but does not run cost time? Prediction if it does: M = 16 and 64 (LL)
#   and the O projections ~1-2 us faster, M = 128 (two-shot) level; if not, all level.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_fused_ar[a-z_0-9]*_2$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s35.sh c'
if [ "$PART" = c ]; then
  export STEP_GREP='gemm_ar +fused|rror|FAIL'
  old_build 7a358b1
  part_c() { # B R BINDIR
    kt_ar "kt_$1$2" "$3" skinny --m 16 --m 64 --m 128 --n 8192 --k 7168
    kt_ar "kt_$1$2_o" "$3" skinny --m 64 --n 4096 --k 2048
  }
  ab_turns part_c
fi
# part d (2 GPUs): the final tree: the model's 2-rank tests (their decode O projections take the small-M path), the
#   GEMM+AR table at the issue's shapes (docs/perf/gemm_ar_h200x2_<commit>.json) and the layer at its defaults.
#   MK_CALL_LIMIT=420 CTEST_TIMEOUT=150 CTEST_WALL=200 \
#     CTEST_ARGS="-R ^test_(model_gpu_(fused|unfused|sp_agree)_2|model_gpu_agree_2_moedec|gemm_skinny)$" \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s35.sh d'
if [ "$PART" = d ]; then
  export STEP_GREP='^\[0\] (gemm_|layer|\{)|fused on|fused in|FAIL|rror'
  fused_op ar_def gemm_ar "16 128 1024 4096"
  unset STEP_GREP
  layer layer_def "$BIN"
fi
