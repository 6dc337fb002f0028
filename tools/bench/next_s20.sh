#!/usr/bin/env bash
# next_s20.sh — what branch lbsig needs from the next GPU session, on 4 or 8 GPUs (G = the GPUs
# present; "2 nodes" = 2 x G/2 through the loopback proxy). Run through tools/gpu-check.sh from the
# repository root (it configures, builds, runs ctest with CTEST_ARGS, then this in build-gpu/bin):
#  call 1, correctness of the branch's four changes (~6-8 min):
#    MK_CALL_LIMIT=560 CTEST_ARGS="-R test_comm_put_signal|test_nccl_coll|test_loopback|test_moe_block_2x|test_model_gpu_.*(2nodes|2x4)|test_model_gpu_unfused|test_serve_gpu_.x2|test_fused_.*_2x|test_fused_.*_2nodes" \
#      CTEST_TIMEOUT=200 CTEST_WALL=500 tools/gpu-check.sh
#    (on 8 GPUs the regex also takes the _2x4 and 8-rank unfused model tests)
#  call 2, part a (~8 min): MK_CALL_LIMIT=560 CTEST_ARGS="-R ^none$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_s20.sh a'
#    1. the MoE at 2 nodes in three configurations: main's (per-chunk PUTs, a kernel per signal:
#       MK_LOOPBACK_SIG_BATCH=0 MK_MOE_REMOTE_WHOLE=0), signals batched, and signals batched with
#       whole-area PUTs (the branch's defaults). Prediction (NOTES session 19): T = 4096 from 21.3 ms
#       to 5.5-7 at 2 x 4, T = 16 from 1.49 to 0.3-0.5.
#    2. mk-serve at 2 nodes, unfused then fused, DUR s of load (default 30): the shared NCCL
#       communicator and the warm-up; prediction: the unfused first wave's TTFT < 2 s (27 s in session
#       19), no mk_engine_forward_seconds observation above 1 s.
#    3. the layer benchmark at 2 nodes (#11; not run in session 19), in turns.
#  part c: the layer at 2 nodes alone (3. of part a).
#  call 3, part b (~8 min, 8 GPUs): MK_CALL_LIMIT=560 CTEST_ARGS="-R test_serve_gpu_8x1_fused|test_serve_gpu_8x2_unfused" \
#      CTEST_TIMEOUT=150 CTEST_WALL=260 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s20.sh b'
#    4. the layer on 8 in one node, in turns, 20 calls (session 19's unfused MoE block inside it);
#    5. Mixtral's attention linears at tp 8 in both transfer modes (AG N 768 K 4096, RS N 4096 K 512);
#    6. gemm_ar / gemm_rs at 2 nodes with and without the signal batches (prediction: 10-30 % faster).
# Steps that would pass the call's limit are skipped (bench_step.sh).
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
BIN=$PWD
export PATH=$BIN:$PATH
G=$(nvidia-smi -L | grep -c '^GPU')
L2="mk-launch -n $G --nodes 2 --"
TAG=h200_2x$((G / 2))
if [ "$PART" = c ]; then # the layer at 2 nodes alone (after mk_fused_create_group: the TP groups' ops on NVLink)
  TAIL=30 step "layer_$TAG" 200 $L2 mk-bench layer --interleave --warmup 3 --iters 20 --seed 7 --json "$RES/layer_$TAG.json"
elif [ "$PART" = a ]; then
  for cfg in "0 0" "1 0" "1 1"; do
    set -- $cfg
    TAIL=8 step "moe_${TAG}_sig$1_whole$2" 120 env MK_LOOPBACK_SIG_BATCH=$1 MK_MOE_REMOTE_WHOLE=$2 $L2 mk-bench moe \
      --shape 4096,4096,8,2,14336 --shape 16,4096,8,2,14336 --iters 20 --json "$RES/moe_${TAG}_sig$1_whole$2.json"
  done
  DUR=${DUR:-30} CFGS="$G 2 unfused,$G 2 fused" SKIP_TESTS=1 bash "$BIN/../../tools/bench/next_serve3.sh"
  grep -HE 'mk_engine_forward_seconds_bucket\{le="(0.5|1|10|30|\+Inf)"\}' "$RES"/serve_qwen3_*.metrics.txt 2>/dev/null
  TAIL=30 step "layer_$TAG" 150 $L2 mk-bench layer --interleave --warmup 3 --iters 20 --seed 7 --json "$RES/layer_$TAG.json"
else
  if [ "$G" -ge 8 ]; then
    TAIL=30 step layer_h200x8_il 150 mk-launch -n 8 -- mk-bench layer --interleave --warmup 3 --iters 20 --seed 7 \
      --json "$RES/layer_h200x8_il.json"
    for m in 0 1; do
      TAIL=8 step "ag_gemm_tp8_qkv_ce$m" 90 env MK_FUSED_AG_COPY=$m mk-launch -n 8 -- mk-bench ag_gemm --m 8192 --n 768 \
        --k 4096 --interleave --iters 20 --json "$RES/ag_gemm_tp8_qkv_ce$m.json"
      TAIL=8 step "gemm_rs_tp8_o_ce$m" 90 env MK_FUSED_RS_COPY=$m mk-launch -n 8 -- mk-bench gemm_rs --m 8192 --n 4096 \
        --k 512 --interleave --iters 20 --json "$RES/gemm_rs_tp8_o_ce$m.json"
    done
  fi
  for sb in 0 1; do
    TAIL=8 step "gemm_ar_${TAG}_sig$sb" 90 env MK_LOOPBACK_SIG_BATCH=$sb $L2 mk-bench gemm_ar --n 8192 --k 3584 \
      --iters 20 --json "$RES/gemm_ar_${TAG}_sig$sb.json"
    TAIL=8 step "gemm_rs_${TAG}_sig$sb" 90 env MK_LOOPBACK_SIG_BATCH=$sb $L2 mk-bench gemm_rs --n 8192 --k 3584 \
      --iters 20 --json "$RES/gemm_rs_${TAG}_sig$sb.json"
  done
fi
echo "part $PART end at $(( $(date +%s) - T0 )) s"
