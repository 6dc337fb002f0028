#!/usr/bin/env bash
# next_s20.sh — the GPU runs of the loopback / multi-node changes (signal batches, whole-area MoE PUTs, the
# shared NCCL communicator, the serving warm-up, the fused ops over TP groups), on 4 or 8 GPUs (G = the GPUs
# present; "2 nodes" = 2 x G/2 through the loopback proxy). Run through tools/gpu-check.sh from the
# repository root (it configures, builds, runs ctest with CTEST_ARGS, then this in build-gpu/bin).
# Session 20 ran the tests, parts a, b and c on 4 GPUs (2 x 2; docs/perf/NOTES.md "Session 20"). What #11
# still needs, on 8 GPUs (nvidia-h200-x8):
#  call 1, the 8-rank tests after sessions 19-20's changes (~8 min):
#    MK_CALL_LIMIT=560 CTEST_ARGS="-R test_(fused|moe_block|ring_attn)_.*(_8|_2x4|_ep8)$|test_fused_.*group2|test_serve_gpu_8x" \
#      CTEST_TIMEOUT=200 CTEST_WALL=520 tools/gpu-check.sh
#  call 2, the 8-rank model tests: CTEST_ARGS="-R test_model_gpu_.*(_8|_tp8|_2x4)$" (the unfused ones took 56-60 s
#    each in session 19; the shared NCCL communicator predicts 20-30 s)
#  call 3, part a (~8 min): MK_CALL_LIMIT=560 CTEST_ARGS="-R ^none$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_s20.sh a'
#    1. the MoE at 2 nodes in four configurations: main's before session 20 (per-chunk PUTs, a kernel per
#       signal: MK_LOOPBACK_SIG_BATCH=0 MK_MOE_REMOTE_WHOLE=0), signals batched, signals batched with
#       whole-area PUTs, and the defaults (whole areas at prefill, per chunk at decode: MK_MOE_REMOTE_WHOLE=-1).
#       At 2 x 2: T = 4096 10.4-13.2 -> 6.1 ms, T = 16 0.85 -> 0.51-0.54.
#       Prediction at 2 x 4 (NOTES session 19): T = 4096 from 21.3 ms to 5.5-7, T = 16 from 1.49 to 0.5-0.8.
#    2. mk-serve at 2 nodes, unfused then fused, DUR s of load (default 30); at 2 x 2 both paths served with a
#       median TTFT of 74-78 ms and no engine step above 0.5 s: the same at 2 x 4 (27 s unfused in session 19).
#    3. the layer benchmark at 2 nodes (#11), in turns.
#  part c: the layer at 2 nodes alone (3. of part a).
#  part m (one node group of G, any kind): the unfused baselines after the cuBLASLt plan cache (f45f573): mk-bench moe
#    at its 9 default shapes and the layer, both in one node, in turns where the bench has them. Prediction (NOTES
#    session 20): unfused (16, 2048, 128) 0.83 -> 0.35-0.6 ms, (4096, 2048, 128) 1.79 -> 1.3-1.6; E = 8 within noise.
#  call 4, part b (~6 min, 8 GPUs): MK_CALL_LIMIT=560 CTEST_ARGS="-R ^none$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_s20.sh b'
#    4. the layer on 8 in one node, in turns, 20 calls (session 19's unfused MoE block inside it; Qwen3's
#       attention at tp 4 now over its TP group: its decode block at or below unfused, 0.182 / 0.175 before);
#    5. Mixtral's attention linears at tp 8 in both transfer modes (AG N 768 K 4096, RS N 4096 K 512);
#    6. (4 GPUs only) gemm_ar / gemm_rs at 2 nodes with and without the signal batches (session 20 at 2 x 2:
#       no difference).
# Steps that would pass the call's limit are skipped (bench_step.sh).
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
L2="mk-launch -n $G --nodes 2 --"
TAG=h200_2x$((G / 2))
if [ "$PART" = m ]; then # the unfused baselines after the cuBLASLt plan cache, one node group
  TAIL=14 step "moe_h200x${G}_plans" 200 mk-launch -n $G -- mk-bench moe --iters 20 --json "$RES/moe_h200x${G}_plans.json"
  TAIL=30 step "layer_h200x${G}_plans" 200 mk-launch -n $G -- mk-bench layer --interleave --warmup 3 --iters 20 --seed 7 \
    --json "$RES/layer_h200x${G}_plans.json" --samples "$RES/layer_h200x${G}_plans.samples"
elif [ "$PART" = c ]; then # the layer at 2 nodes alone (after mk_fused_create_group: the TP groups' ops on NVLink)
  TAIL=30 step "layer_$TAG" 200 $L2 mk-bench layer --interleave --warmup 3 --iters 20 --seed 7 --json "$RES/layer_$TAG.json"
elif [ "$PART" = a ]; then
  for cfg in "0 0" "1 0" "1 1" "1 -1"; do
    set -- $cfg
    TAIL=8 step "moe_${TAG}_sig$1_whole$2" 120 env MK_LOOPBACK_SIG_BATCH=$1 MK_MOE_REMOTE_WHOLE=$2 $L2 mk-bench moe \
      --shape 4096,4096,8,2,14336 --shape 16,4096,8,2,14336 --iters 20 --json "$RES/moe_${TAG}_sig$1_whole$2.json"
  done
  DUR=${DUR:-30} CFGS="$G 2 unfused,$G 2 fused" SKIP_TESTS=1 bash "$BIN/../../tools/bench/next_serve3.sh"
  grep -HE 'mk_engine_forward_seconds_bucket\{le="(0.5|1|10|30|\+Inf)"\}' "$RES"/serve_qwen3_*.metrics.txt 2>/dev/null
  TAIL=30 step "layer_$TAG" 150 $L2 mk-bench layer --interleave --warmup 3 --iters 20 --seed 7 --json "$RES/layer_$TAG.json" \
    --samples "$RES/layer_$TAG.samples"
else
  if [ "$G" -ge 8 ]; then
    TAIL=30 step layer_h200x8_il 150 mk-launch -n 8 -- mk-bench layer --interleave --warmup 3 --iters 20 --seed 7 \
      --json "$RES/layer_h200x8_il.json" --samples "$RES/layer_h200x8_il.samples"
    for m in 0 1; do
      TAIL=8 step "ag_gemm_tp8_qkv_ce$m" 90 env MK_FUSED_AG_COPY=$m mk-launch -n 8 -- mk-bench ag_gemm --m 8192 --n 768 \
        --k 4096 --interleave --iters 20 --json "$RES/ag_gemm_tp8_qkv_ce$m.json"
      TAIL=8 step "gemm_rs_tp8_o_ce$m" 90 env MK_FUSED_RS_COPY=$m mk-launch -n 8 -- mk-bench gemm_rs --m 8192 --n 4096 \
        --k 512 --interleave --iters 20 --json "$RES/gemm_rs_tp8_o_ce$m.json"
    done
  fi
  for sb in $([ "$G" -ge 8 ] || echo 0 1); do
    TAIL=8 step "gemm_ar_${TAG}_sig$sb" 90 env MK_LOOPBACK_SIG_BATCH=$sb $L2 mk-bench gemm_ar --n 8192 --k 3584 \
      --iters 20 --json "$RES/gemm_ar_${TAG}_sig$sb.json"
    TAIL=8 step "gemm_rs_${TAG}_sig$sb" 90 env MK_LOOPBACK_SIG_BATCH=$sb $L2 mk-bench gemm_rs --n 8192 --k 3584 \
      --iters 20 --json "$RES/gemm_rs_${TAG}_sig$sb.json"
  done
fi
echo "part $PART end at $(( $(date +%s) - T0 )) s"
