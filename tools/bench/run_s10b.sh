#!/usr/bin/env bash
# tools/bench/run_s10b.sh — session 10, second GPU call (4 x H200): RS/AR on copy engines with one piece per owner
# (MK_FUSED_CE_SEQ_ROWS=0, default) against 256-row pieces; AG's GEMM skipping the flags of shards it saw whole;
# every default-shape bench (bench_defaults.sh), then AG / RS / AR again with --interleave (the GEMM alone, NCCL
# alone, unfused and fused in turns, all at the same clocks), and AG / RS at M = 8192 after a long warm-up of each
# part (each timed at its own steady clock under the power cap):
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R test_fused_(ag|rs|ar)_(ce|ceint|auto)_|test_fused_(ag|rs|ar)_4$|test_fused$" \
#     CTEST_TIMEOUT=120 CTEST_WALL=150 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s10b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_|moe|layer|\{|  T=)|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
. "$REPO/tools/bench/bench_defaults.sh"
for op in ag_gemm gemm_rs gemm_ar; do
  step ${op}_il 40 mk-launch -n 4 -- mk-bench $op --interleave --json "$RES/${op}_h200x4_interleave.json"
done
step ag_long 40 mk-launch -n 4 -- mk-bench ag_gemm --m 8192 --warmup 1000 --iters 300
step rs_long 40 mk-launch -n 4 -- mk-bench gemm_rs --m 8192 --warmup 1000 --iters 300
step ag_long_il 40 mk-launch -n 4 -- mk-bench ag_gemm --m 8192 --warmup 300 --iters 300 --interleave
MIX="--m 8192 --n 4096 --k 1024"
step ar_mix 25 mk-launch -n 4 -- mk-bench gemm_ar $MIX
step ar_mix_256 25 env MK_FUSED_CE_SEQ_ROWS=256 mk-launch -n 4 -- mk-bench gemm_ar $MIX
step ar_qwen 25 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 2048 --k 1024
step ar_qwen_two 25 env MK_FUSED_AR_COPY=0 MK_FUSED_AR_TWO_SHOT=1 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 2048 --k 1024 --autotune
TAIL=40 step layer_two 60 env MK_FUSED_AR_COPY=0 MK_FUSED_AR_TWO_SHOT=1 mk-launch -n 4 -- mk-bench layer --decode batch --warmup 3 --iters 10
echo "end at $(( $(date +%s) - T0 )) s"
