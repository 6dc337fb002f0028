#!/usr/bin/env bash
# tools/bench/next_moeskinny.sh — branch moeskinny (issues #7, #9: MoE decode grouped GEMMs on the swap-AB
# skinny scheme), 4 x H200, one device call, time-guarded by MK_CALL_LIMIT (bench_step.sh):
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R test_moe_block$|test_moe_block_ep4|test_moe_block_skinny|test_moe_pick" \
#     CTEST_TIMEOUT=180 CTEST_WALL=300 tools/gpu-check.sh -- 'bash ../../tools/bench/next_moeskinny.sh'
# (gpu-check.sh runs this in build-gpu/bin.) What changed (docs/perf/NOTES.md, moe, "Session 5: skinny
# grouped GEMMs"): MK_MOE_SKINNY=1/2 runs GEMM1 (SwiGLU epilogue) and GEMM2 of the overlapped schedule
# on kernels/gemm/gemm_skinny_grouped.cuh (weights on the 64-row wgmma side, each expert's rows the
# token side, the first ring of weights issued before the rows' ready wait); 1: token tile T from
# ranks x max_tokens (64 at T = 16, 128 at T = 128), 2: from twice the uniform rows per expert.
# Steps, most wanted first (the guard skips what no longer fits): the six decode shapes with the core
# (0), the skinny path at 1 and 2, then the core again (runs of identical code spread 5-8 % on this
# machine kind: the second 0 is the spread).
set -uo pipefail
BIN=$PWD
export PATH=$BIN:$PATH
STEP_GREP='^\[0\] (moe|\{|  T=|    phases)|FAIL|rror'
. "$(cd "$(dirname "$0")" && pwd)/bench_step.sh" # env, T0, LIMIT, step
echo "LIMIT $LIMIT s"
S="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
for v in 0 1 2 0b; do
  TAIL=30 step moe_dec_skinny$v 45 env MK_MOE_SKINNY=${v%b} mk-launch -n 4 -- mk-bench moe --breakdown $S \
    --path fused --json "$RES/moe_dec_skinny$v.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
