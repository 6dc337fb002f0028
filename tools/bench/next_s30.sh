#!/usr/bin/env bash
# next_s30.sh — session 30's GPU runs (docs/perf/NOTES.md, layer "Session 30"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs): where the decode layer's time goes after session 29's stack-frame fix: the layer (prefill cut to
#   256 tokens) under the kernel tracer, the MoE block's small kernels and the TP all-gather listed.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_gather_rows$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s30.sh a'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ]; then
  KT_LIST='moe_|gather_rows|residual|rmsnorm|skinny|qkv|flash|merge' kt_layer kt_dec --tokens 256
fi
# part b (2 GPUs): the decode MoE handle gives every rank every token's output (mk_moe_forward_all: GEMM2 stores each
#   expert row into every rank, every rank reduces every token and adds it to the residual; MK_LAYER_MOE_ALL=1, new
#   default) instead of each rank's tokens and the all-gather kernel after (=0); the push reduce's last CTA advances
#   the call (no advance kernel, both). The layer with it on and off in turns, twice; then --graph; then traced.
#   Prediction (part a's trace: gather_rows 8.8-9.5 us + ~1.1 us gap, advance 0.8 + ~1.5 us): the decode layer
#   -9 to -11 us at both models (Mixtral 0.489 -> ~0.479, Qwen3 0.300 -> ~0.290), prefill level.
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R ^test_(moe_block|model_gpu|model_gpu_fused_[12]|model_gpu_agree_2_moedec|model_gpu_agree_mixtral_flash_2|gather_rows|bench_layer_batch|layers_moe_dec)$" \
#     CTEST_TIMEOUT=240 CTEST_WALL=330 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s30.sh b'
if [ "$PART" = b ]; then
  for v in all noall allb noallb; do
    case $v in
      all*) MK_LAYER_MOE_ALL=1 layer "layer_$v" "$BIN" ;;
      noall*) MK_LAYER_MOE_ALL=0 layer "layer_$v" "$BIN" ;;
    esac
  done
  layer layer_graph "$BIN" --graph
  KT_LIST='moe_|gather_rows|residual' kt_layer kt_all --tokens 256
fi
# part c (2 GPUs): GEMM+AR's small-M path in the LL format (MK_FUSED_AR_LL, new, default -1: each 4 bytes of a partial
#   beside a 4-byte flag, no fence, no flags; one-shot) against the fenced path (=0: one-shot below M = 64, two-shot
#   from it): the layer's decode O projections (64 x 4096 x 2048 Mixtral, 64 x 2048 x 2048 Qwen3) and the issue's
#   N = 8192, K = 7168 at M = 16, 64, 128, with --breakdown, in turns, twice; then the layer, on and off in turns.
#   Prediction (run eb9864d's stamps: 8 us between the last push and the peer's flags): the O projection's GEMM+AR
#   -4 to -6 us (19.9 -> ~15 us in the trace), the decode layers as much; M = 128 (2 MiB of LL words) level or slower.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(fused_(ar_2|ar_ll0_2|ar_ll1c_2|ar_sk2_2|ar_push_2|ar_tail_2|rs_2|ar_group2_4)|model_gpu_fused_2|model_gpu_agree_2_moedec)$" \
#     CTEST_TIMEOUT=120 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s30.sh c'
if [ "$PART" = c ]; then
  export STEP_GREP='gemm_ar|phases|rror|FAIL'
  for v in ll noll llb nollb; do
    case $v in ll*) L=-1 ;; *) L=0 ;; esac
    TAIL=6 step "ar_o_$v" 40 env MK_FUSED_AR_LL=$L mk-launch -n "$G" -- mk-bench gemm_ar --m 64 --n 4096 --k 2048 \
      --interleave --breakdown --seed 7 --json "$RES/ar_o_$v.json"
    TAIL=6 step "ar_q_$v" 40 env MK_FUSED_AR_LL=$L mk-launch -n "$G" -- mk-bench gemm_ar --m 64 --n 2048 --k 2048 \
      --interleave --breakdown --seed 7 --json "$RES/ar_q_$v.json"
    TAIL=12 step "ar_i_$v" 60 env MK_FUSED_AR_LL=$L mk-launch -n "$G" -- mk-bench gemm_ar --m 16 --m 64 --m 128 \
      --n 8192 --k 7168 --interleave --breakdown --seed 7 --json "$RES/ar_i_$v.json"
  done
  unset STEP_GREP
  for v in ll noll llb nollb; do
    case $v in ll*) MK_FUSED_AR_LL=-1 layer "layer_$v" "$BIN" ;; *) MK_FUSED_AR_LL=0 layer "layer_$v" "$BIN" ;; esac
  done
fi
# part d (2 GPUs): the final commit: the 2-GPU tests of the fused ops and the MoE, then the three fused ops at the
#   issue's shapes (defaults) on 2 ranks against NCCL + cuBLASLt, after session 29's stack frames and the LL GEMM+AR.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(fused_[a-z_0-9]*_2|moe_block|moe_router|gather_rows|gemm_skinny|model_gpu_unfused_2|model_gpu_sp_agree_2)$" \
#     CTEST_TIMEOUT=120 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s30.sh d'
if [ "$PART" = d ]; then
  for op in ag_gemm gemm_rs gemm_ar; do
    TAIL=10 step "${op}_x2" 90 mk-launch -n "$G" -- mk-bench "$op" --interleave --seed 7 --json "$RES/${op}_x2.json"
  done
fi
# part e (2 GPUs): after the review (the push reduce's residual add through moe_axpy8; the LL sum skips a failed
#   load's words): the tests that cover both, and the layer once.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_(moe_block|fused_ar_2|fused_ar_ll1c_2|model_gpu_agree_2_moedec|model_gpu_fused_2)$" \
#     CTEST_TIMEOUT=150 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s30.sh e'
if [ "$PART" = e ]; then
  layer layer_review "$BIN"
fi
