#!/usr/bin/env bash
# next_s20.sh — what branch lbsig needs from the next GPU session (works on 4 or 8 GPUs; G = the GPUs
# present, "2 nodes" = 2 x G/2 through the loopback proxy). Run through tools/gpu-check.sh from the
# repository root (it configures, builds, runs ctest with CTEST_ARGS, then this in build-gpu/bin):
#  call 1, correctness of the three changes (~6 min on 4 GPUs):
#    MK_CALL_LIMIT=560 CTEST_ARGS="-R test_comm_put_signal|test_nccl_coll|test_moe_block_2x|test_model_gpu_.*(2nodes|2x4)|test_model_gpu_unfused|test_serve_gpu_.x2|test_fused_.*_2x|test_fused_.*_2nodes" \
#      CTEST_TIMEOUT=200 CTEST_WALL=500 tools/gpu-check.sh
#    (on 8 GPUs add _8 / _tp8 / _2x4 tests: the same regex matches them)
#  call 2, A/B measurements (~8 min):
#    MK_CALL_LIMIT=560 CTEST_ARGS="-R ^none$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_s20.sh'
# What it measures, each A/B in one call:
#  1. loopback signals batched (MK_LOOPBACK_SIG_BATCH=1, the branch's default) against one kernel per
#     signal (=0, main's behaviour), and the MoE's whole-area PUTs across node groups
#     (MK_MOE_REMOTE_WHOLE): mk-bench moe (2 shapes) and gemm_ar / gemm_rs at 2 nodes; the
#     session-19 prediction: the fused MoE at 2 x 4 within 1.5x of 1 x 8 (it was 4.4-8x).
#  2. the shared NCCL communicator of the MoE handles and the serving warm-up: mk-serve unfused at
#     2 nodes, DUR s of load (default 30): the first wave's TTFT (27 s at 2 x 4 in session 19) and
#     mk_engine_forward_seconds' largest bucket; the server's start-up time is in its log.
#  3. the layer benchmark at 2 nodes (not run in session 19), --interleave.
source "$(dirname "$0")/bench_step.sh"
BIN=$PWD
export PATH=$BIN:$PATH
G=$(nvidia-smi -L | grep -c '^GPU')
L2="mk-launch -n $G --nodes 2 --"
TAG=h200_2x$((G / 2))
# the MoE at 2 nodes: main's behaviour (per-chunk PUTs, a kernel per signal), signals batched, and
# signals batched with whole-area PUTs (the branch's defaults)
for cfg in "0 0" "1 0" "1 1"; do
  set -- $cfg
  TAIL=8 step "moe_${TAG}_sig$1_whole$2" 120 env MK_LOOPBACK_SIG_BATCH=$1 MK_MOE_REMOTE_WHOLE=$2 $L2 mk-bench moe \
    --shape 4096,4096,8,2,14336 --shape 16,4096,8,2,14336 --iters 20 --json "$RES/moe_${TAG}_sig$1_whole$2.json"
done
for sb in 0 1; do
  TAIL=8 step "gemm_ar_${TAG}_sig$sb" 90 env MK_LOOPBACK_SIG_BATCH=$sb $L2 mk-bench gemm_ar --n 8192 --k 3584 \
    --iters 20 --json "$RES/gemm_ar_${TAG}_sig$sb.json"
  TAIL=8 step "gemm_rs_${TAG}_sig$sb" 90 env MK_LOOPBACK_SIG_BATCH=$sb $L2 mk-bench gemm_rs --n 8192 --k 3584 \
    --iters 20 --json "$RES/gemm_rs_${TAG}_sig$sb.json"
done
TAIL=30 step "layer_$TAG" 150 $L2 mk-bench layer --interleave --warmup 3 --iters 20 --seed 7 --json "$RES/layer_$TAG.json"
# on 8 GPUs, the layer in one node again, in turns and with 20 calls: session 19's unfused MoE block inside the
# layer (15.6 ms for Qwen3, p10-p90 13.6-25.2, from 5 calls not in turns) with the shared communicator
# on 8 GPUs, Mixtral's attention linears at tp 8 (session 19: the block 7 % behind unfused, both linears
# communication-bound): AG+GEMM N 768 K 4096 and GEMM+RS N 4096 K 512, each transfer mode, in turns
if [ "$G" -ge 8 ]; then
  for m in 0 1; do
    TAIL=8 step "ag_gemm_tp8_qkv_ce$m" 90 env MK_FUSED_AG_COPY=$m mk-launch -n 8 -- mk-bench ag_gemm --m 8192 --n 768 \
      --k 4096 --interleave --iters 20 --json "$RES/ag_gemm_tp8_qkv_ce$m.json"
    TAIL=8 step "gemm_rs_tp8_o_ce$m" 90 env MK_FUSED_RS_COPY=$m mk-launch -n 8 -- mk-bench gemm_rs --m 8192 --n 4096 \
      --k 512 --interleave --iters 20 --json "$RES/gemm_rs_tp8_o_ce$m.json"
  done
fi
[ "$G" -ge 8 ] && TAIL=30 step layer_h200x8_il 150 mk-launch -n 8 -- mk-bench layer --interleave --warmup 3 --iters 20 \
  --seed 7 --json "$RES/layer_h200x8_il.json"
DUR=${DUR:-30} CFGS="$G 2 unfused,$G 2 fused" SKIP_TESTS=1 bash "$BIN/../../tools/bench/next_serve3.sh"
grep -hE 'mk_engine_forward_seconds_bucket\{le="(0.5|1|10|30|\+Inf)"\}' "$RES"/serve_qwen3_*.metrics.txt 2>/dev/null
grep -h 'listening on' "$RES"/serve_qwen3_*.server.log 2>/dev/null | cut -c1-80
echo "end at $(( $(date +%s) - T0 )) s"
