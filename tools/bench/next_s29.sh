#!/usr/bin/env bash
# next_s29.sh — session 29's GPU runs (docs/perf/NOTES.md, moe "Session 29"). Run through tools/gpu-check.sh from
# the repository root.
# part a (1 GPU of the 2, nvidia-h200-x2): why a rank's decode gate/up GEMM streams its 940 MB of weights at 3.64
#   TB/s (Mixtral layer, run bd7ae88-x2) when a plain streaming read reaches 4.5: tools/bench/tma_stream.cu times TMA
#   rings of each box shape with no arithmetic; then the grouped GEMM alone at the layer's shape (4 experts of 32
#   rows, 28672 x 4096) against cuBLASLt, at tile widths 256 and 128, and ncu's memory view of the core's kernel.
#   MK_CALL_LIMIT=360 CTEST_ARGS="-R ^test_gemm_grouped$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s29.sh a'
#   Measured (run 4182cf3-x2): every TMA ring 4.03-4.19 TB/s, the 16-byte-load read 4.21; the grouped GEMM alone
#   0.236 ms (ncu: DRAM 4.15 TB/s), cuBLASLt 0.279: the stream is at the ceiling.
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
SRC=$BIN/../..
if [ "$PART" = a ]; then
  STEP_GREP='.' TAIL=20 step tma_stream 120 bash -c "nvcc -std=c++17 -arch=sm_90a -O3 -I$SRC \
    $SRC/tools/bench/tma_stream.cu -o /tmp/tma_stream && /tmp/tma_stream"
  G1='--group-rows 32,32,32,32 --shape 128x28672x4096 --interleave --warmup 10 --iters 40 --seed 7'
  export STEP_GREP='^gemm|fused|unfused|TB|ms'
  TAIL=8 step g_def 60 mk-bench gemm $G1 --json "$RES/g_def.json"
  TAIL=8 step g_128 60 env MK_GEMM_TILE_N=128 mk-bench gemm $G1 --json "$RES/g_128.json"
  TAIL=8 step g_128s 60 env MK_GEMM_TILE_N=128 MK_GEMM_WG_SKIP=1 mk-bench gemm $G1 --json "$RES/g_128s.json"
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -n "$NCU" ] && TAIL=60 STEP_GREP='Duration|Throughput|DRAM|dram|L2|Stall|Issued|Elapsed|SM Freq|Mem.*Busy' \
    step ncu_g 120 env MK_GEMM_TILE_N=128 MK_GEMM_WG_SKIP=1 "$NCU" --clock-control none -k 'regex:gemm_core' \
    --launch-skip 4 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats mk-bench gemm $G1 --path fused
fi
# part b (2 GPUs): a debug build, docs/perf/raw/run-eb9864d-x2/dbg29.patch applied to 4182cf3 (not merged): the
#   decode MoE front's globaltimer stamps at call 30, printed at call 31; GEMM+AR at the layer's decode O projections
#   with --breakdown.
#   git apply docs/perf/raw/run-eb9864d-x2/dbg29.patch; MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_router$" \
#     CTEST_TIMEOUT=60 CTEST_WALL=60 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s29.sh b'
#   Measured (run eb9864d-x2): GEMM1's first tile 27 us after the plan starts (NOTES, moe, session 29, item 2);
#   GEMM+AR 64 x 4096 x 2048 0.0245 against unfused 0.0201 ms (its push waits 8 us for the peer's slabs).
if [ "$PART" = b ]; then
  for sh in 32,4096,8,2,14336 32,2048,128,8,768; do
    STEP_GREP='MDBG|fused' TAIL=200 step "mdbg_${sh%%,*}_${sh#*,*,}" 60 mk-launch -n "$G" -- mk-bench moe --shape $sh \
      --path fused --warmup 10 --iters 40 --seed 7
  done
  for nk in 4096,2048 2048,2048; do
    STEP_GREP='gemm_ar|phase|pushed|waited' TAIL=30 step "ar_oproj_${nk%,*}" 60 mk-launch -n "$G" -- \
      mk-bench gemm_ar --m 64 --n "${nk%,*}" --k "${nk#*,}" --interleave --breakdown --seed 7
  done
fi
# part c (2 GPUs): the decode path without the count exchange (MK_MOE_LL, new; the layer's decode handle now
#   ceil(64 / tp) tokens a rank, MK_MOE_DECODE_TOKENS=-1): the op at the layer's decode shapes, on (-1) against off
#   (0) in turns, twice; the layer with it, without it, and as before (off, 64 tokens a rank), in turns; then
#   --graph; then the layer traced. Prediction: the MoE block's front (plan start to GEMM1's first tile, ~27 us in
#   run eb9864d's stamps) to ~10-12 us: the op and the fused decode layer -12 to -18 us at both models.
#   Measured (run 724d44c-x2): the layer's MoE block Mixtral 0.4393 -> 0.4326, Qwen3 0.2610 -> 0.2865 (slower: GEMM2's
#   rowinfo read from L2 for 8 rows a thread and tile); the op's numbers wrong (the unfused path overwrote the
#   static group sizes; u_rows since). Again at the next commit (plain loads of rowinfo; "old" dropped).
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R ^test_(moe_block|moe_pick|layers_moe_dec|model_gpu_fused_[12]|model_gpu_agree_mixtral_flash_2|bench_layer_batch)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=260 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s29.sh c'
if [ "$PART" = c ]; then
  moe_turns ll "--shape 32,4096,8,2,14336 --shape 32,2048,128,8,768" MK_MOE_LL -1 0
  for v in ll noll llb nollb; do
    case $v in
      ll*) MK_MOE_LL=-1 layer "layer_$v" "$BIN" ;;
      noll*) MK_MOE_LL=0 layer "layer_$v" "$BIN" ;;
      old) MK_MOE_LL=0 MK_MOE_DECODE_TOKENS=64 layer "layer_$v" "$BIN" ;;
    esac
  done
  layer layer_graph "$BIN" --graph
  KT_LIST='moe_|gather_rows' kt_layer kt_eager
fi
# part d (2 GPUs): after the per-CTA latch of GEMM1's wait (ll_seen) and the auto rule (4 top_k >= E): the op at
#   both decode shapes with MK_MOE_LL=1 against 0 in turns, twice; the layer by default (Mixtral on it, Qwen3 off)
#   against MK_MOE_LL=0 and =1 (Qwen3 forced on), in turns; then --graph. Prediction: E = 8 op -10 to -15 us as in
#   part c; E = 128 forced on still slower (its 1/16-full regions), less so (the per-tile wait gone); Mixtral's
#   decode layer -6 to -10 us.
#   Measured (run 224a1f4-x2): E = 8 op 0.4186 -> 0.4067 ms; E = 128 forced on 0.2405 -> 0.2559 (slower); Mixtral's
#   decode layer 0.5162 -> 0.5112, its MoE block 0.4373 -> 0.4316 (missed: -5 to -6 us); Qwen3 forced on +0.024 ms.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(moe_block|moe_pick|model_gpu_fused_2|model_gpu_agree_mixtral_flash_2)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=220 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s29.sh d'
if [ "$PART" = d ]; then
  moe_turns lld "--shape 32,4096,8,2,14336 --shape 32,2048,128,8,768" MK_MOE_LL 1 0
  for v in def noll on defb nollb onb; do
    case $v in
      def*) layer "layer_$v" "$BIN" ;;
      noll*) MK_MOE_LL=0 layer "layer_$v" "$BIN" ;;
      on*) MK_MOE_LL=1 layer "layer_$v" "$BIN" ;;
    esac
  done
  layer layer_graph "$BIN" --graph
fi
# part e (2 GPUs): the final commit's layer (defaults), after the review's tests.
#   MK_CALL_LIMIT=480 CTEST_ARGS="-R ^test_(moe_block|moe_block_grouped|moe_pick|layers_moe_dec|model_gpu|model_gpu_fused_2|model_gpu_unfused_2|model_gpu_sp_agree_2|model_gpu_agree_mixtral_flash_2|bench_layer_batch|serve_gpu_2x1_unfused)$" \
#     CTEST_TIMEOUT=240 CTEST_WALL=330 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s29.sh e'
#   Measured (run c71f9f0-x2): 11 tests passed; Mixtral decode fused 0.5161 (0.5112 at 224a1f4). Then the token's
#   ids from the lanes that hold them (no dependent loads), again with the op at E = 8 on and off:
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R ^test_(moe_block|model_gpu_fused_2|model_gpu_agree_mixtral_flash_2)$" \
#     CTEST_TIMEOUT=200 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s29.sh e'
#   Measured (run 7f14a4e-x2): E = 8 op 0.4183 -> 0.4131 (was -> 0.4067 at 224a1f4), Mixtral decode layer 0.5190 /
#   0.5196: the duplicate-id check's call of mk_raise_timeout (the world by reference) gave the sender a 712-byte
#   stack frame. Then mk_raise_timeout passes two scalars to the out-of-line mk_raise_record (every kernel's frame
#   shrinks: plan_exchange 856 -> 176 bytes, the MoE GEMM1s 296 -> 0), the warp sum by __reduce_add_sync, and the
#   record raised after the loop; part e again with the comm tests:
#   MK_CALL_LIMIT=330 CTEST_ARGS="-R ^test_(moe_block|comm_timeout|comm_put_signal|fused_ar_push_2|gather_rows|model_gpu_fused_2)$" \
#     CTEST_TIMEOUT=150 CTEST_WALL=170 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s29.sh e'
if [ "$PART" = e ]; then
  layer layer_final "$BIN"
  moe_turns lle "--shape 32,4096,8,2,14336" MK_MOE_LL -1 0
  layer layer_finalb "$BIN"
fi
