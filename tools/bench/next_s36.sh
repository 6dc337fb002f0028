#!/usr/bin/env bash
# next_s36.sh — session 36's GPU runs (docs/perf/NOTES.md, fused "Session 36"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs): where GEMM+AR's time goes at M = 1024 and 4096 (N 8192, K 7168; the copy engines with the own rows
#   summed in the epilogue, 1.40x / 1.21x the bound in run b2a0c38-x2), and GEMM+RS at 2048 (1.15x): the kernel
#   tracer's timeline around the op's GEMM kernel (kernels and copies, both ranks), and MK_TRACE's per-CTA tiles of one
#   call (when each tile was stored; the tail's gather).
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R ^test_fused_ar_cefold_2$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s36.sh a'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ]; then
  export STEP_GREP='gemm_(ar|rs) +fused|rror|FAIL'
  kt_op kt_ar1024 gemm_ar 'mk_reduce_policy<2' --m 1024 --path fused --warmup 10 --iters 30
  kt_op kt_ar4096 gemm_ar 'mk_reduce_policy<2' --m 4096 --path fused --warmup 10 --iters 30
  kt_op kt_rs2048 gemm_rs 'mk_reduce_policy<1' --m 2048 --path fused --warmup 10 --iters 30
  trace_op tr_ar1024 gemm_ar 1024
  trace_op tr_ar4096 gemm_ar 4096
  trace_op tr_rs2048 gemm_rs 2048
  fused_op ar_def gemm_ar "1024 4096"
fi
# part b (2 GPUs): after run deaaec0-x2 (the copy-engine calls: ~16 us a call between the GEMM kernels, of which a
#   memset of the call's flags and a stream write per peer, ~12 us from the previous call's last kernel to the GEMM):
#   both in one kernel (mk_fused_launch_ce_begin). This build against deaaec0's (carried as .carry/old-deaaec0), in
#   turns, twice, fused path only: GEMM+AR 1024, 4096 (copy engines, own rows summed in the epilogue), GEMM+RS 2048,
#   8192 (copy engines, the reduce kernel), AG+GEMM 2048, 8192 (copy engines); then the kernel tracer's timeline of
#   this build at GEMM+AR 1024 and AG+GEMM 2048.
#   Prediction: -5 to -9 us a call at every shape (AR 1024 0.2207 -> ~0.213).
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_fused_[a-z_0-9]*_2$" CTEST_TIMEOUT=120 CTEST_WALL=240 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s36.sh b'
ab_op() { # NAME BINDIR OP "MS": OP's fused path of BINDIR's build at the M list MS, JSON into $RES/NAME.json
  local name=$1 bd=$2 op=$3 args=()
  for m in $4; do args+=(--m "$m"); done
  TAIL=4 step "$name" 60 "$bd/mk-launch" -n "$G" -- "$bd/mk-bench" "$op" "${args[@]}" --path fused --seed 7 \
    --json "$RES/$name.json"
}
# (Parts b and c ran 765eab7's and d354584's trees, both reverted after them; check those out to repeat them.)
# part c (2 GPUs): after run 765eab7-x2 (part b: the flags' reset and the arrivals in one kernel before the GEMM,
#   mk_fused_launch_ce_begin: 3.1 us long, ~2 us a call saved, within the noise): the arrivals written by the GEMM's
#   CTA 0 first thing, the flags reset at the end of the call that consumed them (MK_FUSED_CE_FOLD and AG+GEMM: by the
#   last CTA out of the GEMM, with the epoch advance, so no kernel but the GEMM in the call; other copy-engine modes:
#   by the advance kernel after the join), the side streams resetting the progress counters they waited for. This
#   build against deaaec0's, in turns, twice, as part b; the kernel tracer's timelines; every 2-rank fused test and
#   the model's 2-rank tests.
#   Prediction: GEMM+AR 1024 / 4096 and AG+GEMM -5 to -7 us a call (~0.2133 -> ~0.207 at AR 1024), GEMM+RS (the reduce
#   kernel and the advance kernel stay) -3 to -4 us.
#   MK_CALL_LIMIT=560 CTEST_TIMEOUT=120 CTEST_WALL=300 \
#     CTEST_ARGS="-R ^test_(fused_[a-z_0-9]*_2|model_gpu_(fused|unfused|sp_agree)_2|model_gpu_agree_2_moedec)$" \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s36.sh c'
if [ "$PART" = b ] || [ "$PART" = c ]; then
  export STEP_GREP='(gemm_ar|gemm_rs|ag_gemm) +fused|rror|FAIL'
  old_build deaaec0
  three_ops() { # B R BINDIR
    ab_op "ar_$1$2" "$3" gemm_ar "1024 4096"
    ab_op "rs_$1$2" "$3" gemm_rs "2048 8192"
    ab_op "ag_$1$2" "$3" ag_gemm "2048 8192"
  }
  ab_turns three_ops
  kt_op kt_ar1024 gemm_ar 'mk_reduce_policy<2' --m 1024 --path fused --warmup 10 --iters 30
  kt_op kt_ag2048 ag_gemm 'mk_ag_policy' --m 2048 --path fused --warmup 10 --iters 30
  if [ "$PART" = c ]; then kt_op kt_rs2048 gemm_rs 'mk_reduce_policy<1' --m 2048 --path fused --warmup 10 --iters 30; fi
fi
# part d (2 GPUs): the copy-engine protocol of deaaec0 again (parts b and c refuted, reverted): the three ops at their
#   default shapes with every call replayed from a CUDA graph (--graph: the fused and unfused calls and the bound's
#   GEMM and collective each a graph), beside the eager calls, in turns, twice: how much of the fused calls' ~10 us of
#   stream hand-offs a graph removes; MK_TRACE of AG+GEMM 2048 (its kernel: 302 us against 291 for cuBLAS's GEMM).
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R ^test_fused_(ag|ar|rs)_ce_2$" CTEST_TIMEOUT=60 CTEST_WALL=90 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s36.sh d'
graph_op() { # NAME OP "MS" [--graph]: OP at the M list MS, --interleave, JSON into $RES/NAME.json
  local name=$1 op=$2 args=()
  for m in $3; do args+=(--m "$m"); done
  shift 3
  TAIL=8 step "$name" 90 mk-launch -n "$G" -- mk-bench "$op" "${args[@]}" --interleave --seed 7 "$@" \
    --json "$RES/$name.json"
}
if [ "$PART" = d ]; then
  export STEP_GREP='^\[0\] (gemm_|ag_)|rror|FAIL'
  for r in 1 2; do
    for g in eager graph; do
      extra=(); [ $g = graph ] && extra=(--graph)
      graph_op "ar_$g$r" gemm_ar "1024 4096" "${extra[@]}"
      graph_op "rs_$g$r" gemm_rs "2048" "${extra[@]}"
      graph_op "ag_$g$r" ag_gemm "2048" "${extra[@]}"
    done
  done
  trace_op tr_ag2048 ag_gemm 2048
fi
# part e (2 GPUs): the kernel tracer with the peer copies recorded (ktrace.c: CUPTI's MEMCPY2 kind, which part a
#   lacked): the timelines of GEMM+AR 1024 and 4096, GEMM+RS 2048 and AG+GEMM 2048 at the defaults, both ranks.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_fused_ar_cefold_2$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s36.sh e'
if [ "$PART" = e ]; then
  export STEP_GREP='(gemm_ar|gemm_rs|ag_gemm) +fused|rror|FAIL'
  kt_ops
fi
