#!/usr/bin/env bash
# next_s28.sh — session 28's GPU runs (docs/perf/NOTES.md, layer "Session 28"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs, nvidia-h200-x2): the layer (both presets, TP = EP = 2) eagerly and from graphs, each process
#   traced by libmk_ktrace.so (CUPTI, tools/ktrace/ktrace.c); tools/bench/ktrace_report.py prints each kind of
#   call's kernels with their median durations and the gaps between them (kt_<v>.txt), to place the decode
#   layer's time: where the MoE block loses ~0.03-0.04 ms beyond the op alone, and the attention block's 0.085 ms
#   of compute at decode against ~0.015 ms of weights and KV to stream.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_bench_layer_batch$" CTEST_TIMEOUT=120 CTEST_WALL=120 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s28.sh a'
#   Measured (run 7fa1977-x2, raw/run-7fa1977-x2/kt_*.txt): see NOTES. The decode layer's small kernels: Qwen3's
#   moe_route 10.6 us for 64 tokens, the three q/k/v GEMMs with their split-K reduces and two RoPEs ~30 us (Mixtral)
#   of ~20 kernels; at prefill mk_rope_kernel 141 + 37 us (Mixtral), its double pow once per pair and thread.
# part b (2 GPUs): the merged q/k/v GEMM with mk_qkv_post_bf16 on the fused path (MK_LAYER_QKV=1, new) against the
#   separate kernels (0), in turns, twice, eagerly; then --graph; then the layer traced again; moe_route with the row
#   in registers and RoPE's frequency table on both paths. Predictions: decode fused -12 to -20 us (Mixtral) and
#   -15 to -22 us (Qwen3) from MK_LAYER_QKV=1; Qwen3's decode MoE block -6 to -8 us on both paths (route 10.6 -> ~3
#   us); prefill attention blocks -0.1 to -0.15 ms on both paths (RoPE 178 -> ~25 us at Mixtral).
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(elementwise_(qkv|rope|rope_pos|linear)|moe_router|model_gpu_fused_[12]|model_gpu_unfused_2|model_gpu_agree_mixtral_flash_2)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=240 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s28.sh b'
#   Measured (run 175bba9-x2): decode layer fused Mixtral 0.547 / 0.551 -> 0.526 / 0.526 ms, Qwen3 0.355 / 0.358 ->
#   0.336 / 0.336; Qwen3's route 10.6 -> 3.7 us; prefill attention -0.09 ms on both paths: held.
# part c (2 GPUs): why the decode MoE's moe_plan_exchange_kernel (one CTA: plan, count records, wait) takes ~30 us
#   in the layer (both ranks start it within ~1 us of each other, run 175bba9-x2) when the op's phases put the
#   counts ~11 us after the plan's start (run 282029b-x2): the op alone traced at the layer's decode shapes, and
#   the Mixtral layer traced with the rows sent after the counts (MK_MOE_SEND_EARLY=0) and with the dispatch
#   launched after the exchange (MK_MOE_DISPATCH_EARLY=0).
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_router$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s28.sh c'
#   Measured (run fcd8848-x2): the exchange kernel takes 26.5-27.7 us in the op alone too; the rows land ~22 us
#   after the plan starts and gate GEMM1's first tile. SEND_EARLY=0 level, DISPATCH_EARLY=0 slower.
# part d (2 GPUs): the fused path's norm + router + route in one kernel (mk_moe_norm_route, MK_LAYER_ROUTE) and the
#   residual inside the MoE output's gather (mk_gather_rows_add, MK_LAYER_GATHER_ADD): both on (the default) against
#   both off, in turns, twice; then --graph; then the layer traced. Prediction: decode fused -10 to -14 us at each
#   model (norm, router and route 15.5 / 16.7 us of kernels and gaps at Mixtral / Qwen3 -> one kernel of ~5 / ~7;
#   the residual's 2.6 us kernel and its gap); the unfused path and prefill unchanged.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(moe_router|gather_rows|elementwise_(rmsnorm|qknorm)|model_gpu_fused_[12]|model_gpu_agree_mixtral_flash_2|bench_layer_batch)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=240 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s28.sh d'
#   Measured (runs 6df28f0-x2, then bd148ff-x2 with 4 router outputs a warp and the add vectorised): Qwen3 decode
#   fused 0.3313 / 0.3331 against 0.3350 / 0.3350 ms off, Mixtral 0.518 / 0.522 against 0.525 / 0.536; the fused
#   kernel 14.3 us (Qwen3) / 12.6 us (Mixtral) against ~15-17 us of separate kernels and gaps: under the prediction.
#   Again at 3c32e9d (1, 2 or 4 router outputs a warp by the shape, 8 / that many steps of loads in flight a lane):
#   predicted Mixtral's fused kernel 12.6 -> ~5 us (decode layer -5 to -8 us), Qwen3's level (4 outputs a warp, 2
#   steps: as at bd148ff).
#   Measured (run bd7ae88-x2): the kernel 12.6 -> 7.4 us (Mixtral), 14.3 -> 10.7 us (Qwen3); decode fused Mixtral
#   0.520 / 0.516 against 0.543 / 0.525 off, Qwen3 0.330 / 0.328 against 0.338 / 0.337.
# part e (1 GPU of the 2): ncu (--clock-control none) on test_moe_router's calls of mk_moe_norm_route and of the
#   separate norm, router and route kernels it compares them with: why the fused kernel takes 12-14 us at T = 64.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_router$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s28.sh e'
#   Measured (run 36b2940-x2): the fused kernel 20.3 us under ncu at T = 64, E = 128 (64 of 132 SMs busy, half the
#   stalls on L1TEX scoreboard: the router's loads); the separate kernels 4.2 + 9.8 + 6.4 + 5.3 us.
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ]; then
  kt_layer kt_eager
  kt_layer kt_graph --graph
fi
if [ "$PART" = b ]; then
  for v in 1 0 1b 0b; do
    MK_LAYER_QKV=${v%b} layer "layer_qkv$v" "$BIN"
  done
  layer layer_graph "$BIN" --graph
  kt_layer kt_eager
fi
if [ "$PART" = c ]; then
  export KT_LIST='moe_|gather_rows|skinny'
  if [ -f "$KT" ]; then
    mkdir -p "$RES/kt_moe"
    TAIL=8 step kt_moe 90 env CUDA_INJECTION64_PATH="$KT" KTRACE_DIR="$RES/kt_moe" mk-launch -n "$G" -- mk-bench moe \
      --shape 32,4096,8,2,14336 --shape 32,2048,128,8,768 --iters 20 --seed 7 --breakdown --json "$RES/kt_moe.json"
    python3 "$BIN/../../tools/bench/ktrace_report.py" "$RES/kt_moe" --files "$G" --list "$KT_LIST" > "$RES/kt_moe.txt"
    cat "$RES/kt_moe.txt"
    (cd "$RES" && tar czf kt_moe.csv.tgz kt_moe && rm -rf kt_moe)
  fi
  MK_MOE_SEND_EARLY=1 kt_layer kt_se1 --preset mixtral
  MK_MOE_SEND_EARLY=0 kt_layer kt_se0 --preset mixtral
  MK_MOE_DISPATCH_EARLY=0 kt_layer kt_de0 --preset mixtral
fi
if [ "$PART" = d ]; then
  for v in 1 0 1b 0b; do
    MK_LAYER_ROUTE=${v%b} MK_LAYER_GATHER_ADD=${v%b} layer "layer_small$v" "$BIN"
  done
  layer layer_graph "$BIN" --graph
  kt_layer kt_eager
fi
if [ "$PART" = e ]; then
  T=$(find "$BIN/.." -name test_moe_router -type f -perm -u+x | head -1)
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  echo "test: $T ncu: $NCU"
  [ -n "$T" ] && [ -n "$NCU" ] && TAIL=80 STEP_GREP='norm_route|rmsnorm_f32|linear_f32|route_reg|Duration|Throughput|Stall|stall|Registers|Achieved Occ|Block Size|Grid Size|One or More|Warp Cycles|Issued' \
    step ncu_route 200 "$NCU" --clock-control none -k 'regex:norm_route|rmsnorm_f32|linear_f32_vec|route_reg' \
    --launch-count 18 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis "$T"
fi
