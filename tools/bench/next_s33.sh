#!/usr/bin/env bash
# next_s33.sh — session 33's GPU runs (docs/perf/NOTES.md, fused "Session 33"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs): PyTorch async-TP (torch.ops.symm_mem.fused_all_gather_matmul / fused_matmul_reduce_scatter) on 2
#   ranks, never run there before, side by side with the fused and unfused paths at the issue's AG+GEMM and GEMM+RS
#   shapes: mk-bench at the defaults (--interleave --seed 7), then the async-TP script twice, its rows merged into the
#   mk-bench JSON; GEMM+AR's defaults beside (no async-TP op exists for it).
#   Question: at 4 ranks async-TP was ahead at M = 16384 for both ops (session 16); is it on 2 ranks too?
#   MK_CALL_LIMIT=330 CTEST_ARGS="-R ^test_fused_(ag|rs|ar)_2$" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s33.sh a'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
REPO=${REPO:-$(cd "$(dirname "$0")/../.." && pwd)}
if [ "$PART" = a ]; then
  export STEP_GREP='^\[0\] (gemm_|ag_|\{)|^gemm|fused on|fused in|fused two|keeps the SM path|async-TP|FAIL|rror'
  fused_op ag_def ag_gemm "2048 8192 16384"
  fused_op rs_def gemm_rs "2048 8192 16384"
  for op in ag_gemm gemm_rs; do
    short=${op%%_gemm}; short=${short#gemm_}
    for r in 1 2; do
      TAIL=6 step "torch_${short}$r" 90 mk-launch -n "$G" -- python3 "$REPO/tools/bench/torch_async_tp.py" --op $op \
        --warmup 20 --iters 100 --merge "$RES/${short}_def.json"
    done
  done
  fused_op ar_def gemm_ar "16 128 1024 4096"
fi
