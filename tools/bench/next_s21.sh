#!/usr/bin/env bash
# next_s21.sh — session 21's GPU runs on 4 GPUs in one node group (nvidia-h200-x4). Run through
# tools/gpu-check.sh from the repository root (it configures, builds, runs ctest with CTEST_ARGS, then
# this in build-gpu/bin):
#   MK_CALL_LIMIT=540 CTEST_ARGS="-R ^test_(moe_block(_ep4)?|gemm|gemm_grouped|moe_pick)$" tools/gpu-check.sh -- \
#     'bash ../../tools/bench/next_s21.sh g'
# part g: the fused MoE's down GEMM beside its gate/up GEMM (MK_MOE_G12_SMS, serial schedule with the push
#   combine), -1 (one after the other) and 0 / 16 / 32 / 48 SMs left to the down GEMM from the start, at the
#   three prefill shapes of issue 7, --seed 7 --breakdown. Prediction (docs/perf/NOTES.md, session 21):
#   (4096, 2048, 128, 8, 768) 1.04 -> 0.89-0.95 ms at 32-48 SMs, its GEMM phase (g1_first -> g2_done)
#   0.67 -> 0.50-0.55; E = 8 and E = 256 prefill within 2 % (their down GEMM is compute-bound).
#   Then Qwen3's layer, -1 and 32 in turns of process, and the host's CPU quota and throttling counters
#   around the layer runs (the unfused layer's spread, session 21).
# part d: the cuBLASLt plans kept per bucket of M (MK_LT_M_BUCKETS): Qwen3's layer with 0 (a plan per M, as
#   before) and 16 buckets a doubling (default), MK_DEBUG=INFO for each handle's count of plans made and
#   their host time. Run 0bcc239 (buckets of 128 rows): the unfused MoE block in the layer 6.47 ms (3.2-12.9)
#   -> 1.38; but the decode shapes of mk-bench moe slower (an algorithm for 128 rows on experts of a few):
#   (16, 2048, 128) 0.646 -> 1.024 ms. Prediction with 16 a doubling: the layer as with 128 rows, the decode
#   shapes back to 0.65 / 0.55 / 0.31 / 0.35 ms (run 86af083's unfused). Then the defaults (g12 on where link-bound, buckets): mk-bench moe at
#   its 9 shapes and the layer (both presets), --samples:
#   MK_CALL_LIMIT=540 CTEST_ARGS="-R ^test_(moe_block|moe_block_ep4|moe_pick|model_gpu_(fused|unfused|agree)_4)$" \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s21.sh d'
# part e (2 GPUs, nvidia-h200-x2: the 4-GPU kind was withdrawn after run 0bcc239): in one call, at EP = 2, the
#   unfused decode shapes with a plan per M (MK_LT_M_BUCKETS=0) and 16 buckets a doubling, the E = 128 prefill
#   with GEMM2 beside GEMM1 off (-1) and by default (I = 768 at W = 2: on, 49 SMs), and Qwen3's layer with
#   plans per M and per bucket. Predictions: decode rows equal within noise for 0 and 16 (the mk-bench
#   routing is fixed, so a plan per M never misses there); E = 128 prefill 5-10 % faster with g12; the
#   unfused layer's MoE block as at 4 GPUs, several-fold faster with buckets.
#   MK_CALL_LIMIT=500 CTEST_ARGS="-R ^test_(plan_cache|model_gpu_unfused_2|model_gpu_sp_agree_2|moe_block)$" \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s21.sh e'
# part f (2 GPUs): after the diagnosis of run diag21-x2 (host timestamps: docs/perf/NOTES.md session 21), the
#   bucket plans without cublasLtMatmulAlgoCheck: Qwen3's layer with 16 and 4 buckets a doubling (MK_DEBUG=INFO:
#   each handle's GEMMs, their host time, the plans made), and the decode shapes with 0 and 16. Prediction: the
#   unfused layer's host time after the count sync from 0.4-5.5 ms a call to < 0.5, its median from 7.1 ms
#   toward its blocks' sum (~3.7), the decode shapes unchanged.
# part h (2 GPUs): with 4 buckets a doubling (the default after part f), the decode shapes against a plan per M,
#   then the layer, both presets, --samples. Prediction: decode shapes within 3 % of a plan per M; the unfused
#   layer's medians at their blocks' sums.
# part i (2 GPUs): mk-bench moe at its 9 shapes with the unfused expert GEMMs per expert (MK_MOE_UNFUSED_GEMM=0)
#   and as cuBLAS grouped GEMMs (1). Prediction: grouped faster at E = 128 / 256 decode, where the per-expert
#   path is 64-128 host calls a step (~1 ms at E = 128, T = 16, EP = 2), toward its GEMMs alone; within a few %
#   at E = 8 and at prefill, or slower where the grouped kernel is less tuned than cuBLASLt's choice.
# part j (2 GPUs): the defaults after part i (grouped unfused expert GEMMs where a rank holds >= 16 experts of
#   <= 256 rows): mk-bench moe at its 9 shapes and the layer with --warmup 20. Prediction: unfused E = 128 / 256
#   decode as part i's grouped column, the others as its per-expert column; fused unchanged.
source "$(dirname "$0")/bench_step.sh"
PART=${1:-g}
cpu_state() { # CPU quota and CFS throttling of this container (cgroup v2 or v1), the CPUs seen
  echo "nproc $(nproc)"
  for f in /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu.stat /sys/fs/cgroup/cpu/cpu.cfs_quota_us \
    /sys/fs/cgroup/cpu/cpu.cfs_period_us /sys/fs/cgroup/cpu/cpu.stat; do
    [ -r "$f" ] && { echo "$f:"; cat "$f"; }
  done
  uptime
}
# The decode shapes (E = 8 and 128, T = 16 and 128) once per value of MK_LT_M_BUCKETS given.
moe_dec_lt() {
  for b in "$@"; do
    TAIL=10 step "moe_dec_lt$b" 60 env MK_LT_M_BUCKETS=$b mk-launch -n "$G" -- mk-bench moe --shape 16,4096,8,2,14336 \
      --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --iters 20 --seed 7 \
      --json "$RES/moe_dec_lt$b.json"
  done
}
# Qwen3's layer once per value of MK_LT_M_BUCKETS given, with each cuBLASLt handle's counts (MK_DEBUG=INFO).
layer_qwen3_lt() {
  for b in "$@"; do
    TAIL=14 step "layer_qwen3_lt$b" 90 env MK_LT_M_BUCKETS=$b MK_DEBUG=INFO MK_DEBUG_SUBSYS=KERNEL mk-launch -n "$G" -- \
      mk-bench layer --preset qwen3 --interleave --warmup 3 --iters 20 --seed 7 --json "$RES/layer_qwen3_lt$b.json" \
      --samples "$RES/layer_qwen3_lt$b.samples"
    grep -h "plans made" "$RES/layer_qwen3_lt$b.log" | sort | uniq -c | sort -rn | head -8
  done
}
if [ "$PART" = g ]; then
  for g in -1 0 16 32 48; do
    TAIL=10 step "moe_g12_$g" 60 env MK_MOE_G12_SMS=$g mk-launch -n "$G" -- mk-bench moe --shape 4096,2048,128,8,768 \
      --shape 4096,4096,8,2,14336 --shape 8192,7168,256,8,2048 --iters 20 --seed 7 --breakdown \
      --json "$RES/moe_g12_$g.json"
  done
  cpu_state > "$RES/cpu_before.txt" 2>&1
  for g in -1 32; do
    TAIL=14 step "layer_qwen3_g12_$g" 90 env MK_MOE_G12_SMS=$g mk-launch -n "$G" -- mk-bench layer --preset qwen3 \
      --interleave --warmup 3 --iters 20 --seed 7 --json "$RES/layer_qwen3_g12_$g.json" \
      --samples "$RES/layer_qwen3_g12_$g.samples"
  done
  cpu_state > "$RES/cpu_after.txt" 2>&1
  cat "$RES/cpu_before.txt" "$RES/cpu_after.txt"
elif [ "$PART" = e ]; then
  moe_dec_lt 0 16
  for g in -1 -2; do
    TAIL=6 step "moe_e128_g12_$g" 60 env MK_MOE_G12_SMS=$g mk-launch -n "$G" -- mk-bench moe --shape 4096,2048,128,8,768 \
      --iters 20 --seed 7 --breakdown --json "$RES/moe_e128_g12_$g.json"
  done
  layer_qwen3_lt 0 16
elif [ "$PART" = f ]; then
  layer_qwen3_lt 16 4
  moe_dec_lt 0 16
elif [ "$PART" = h ]; then # 2 GPUs, after the default became 4 buckets a doubling: decode shapes 0 / 4, the layer
  moe_dec_lt 0 4
  TAIL=30 step "layer_h200x${G}" 200 mk-launch -n "$G" -- mk-bench layer --interleave --warmup 3 --iters 20 --seed 7 \
    --json "$RES/layer_h200x${G}.json" --samples "$RES/layer_h200x${G}.samples"
elif [ "$PART" = i ]; then # 2 GPUs: the unfused path's expert GEMMs per expert (0) or as cuBLAS grouped GEMMs (1)
  for u in 0 1; do
    TAIL=20 step "moe_ugemm$u" 90 env MK_MOE_UNFUSED_GEMM=$u mk-launch -n "$G" -- mk-bench moe --iters 20 --seed 7 \
      --json "$RES/moe_ugemm$u.json"
  done
elif [ "$PART" = j ]; then # 2 GPUs: the defaults (MK_MOE_UNFUSED_GEMM=-1): mk-bench moe and the layer, --warmup 20
  TAIL=20 step "moe_h200x${G}" 90 mk-launch -n "$G" -- mk-bench moe --iters 20 --seed 7 --json "$RES/moe_h200x${G}.json"
  TAIL=30 step "layer_h200x${G}" 150 mk-launch -n "$G" -- mk-bench layer --interleave --warmup 20 --iters 20 --seed 7 \
    --json "$RES/layer_h200x${G}.json" --samples "$RES/layer_h200x${G}.samples"
elif [ "$PART" = d ]; then
  layer_qwen3_lt 0 16
  TAIL=20 step "moe_h200x${G}" 200 mk-launch -n "$G" -- mk-bench moe --iters 20 --json "$RES/moe_h200x${G}.json"
  TAIL=30 step "layer_h200x${G}" 200 mk-launch -n "$G" -- mk-bench layer --interleave --warmup 3 --iters 20 --seed 7 \
    --json "$RES/layer_h200x${G}.json" --samples "$RES/layer_h200x${G}.samples"
fi
echo "part $PART end at $(( $(date +%s) - T0 )) s"
