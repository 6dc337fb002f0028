#!/usr/bin/env bash
# tools/bench/run_s12b.sh — session 12, second GPU call (4 x H200): the MoE combine in the down GEMM's
# tail (MK_MOE_COMBINE_TAIL) against the combine kernel at the prefill shapes (same seed, same call),
# the O projection with the skinny split rule (MK_GEMM_SKINNY_SPLIT_KB), then every default bench
# (async-TP merged, plots) and GEMM+AR in turns:
#   MK_CALL_LIMIT=590 CTEST_ARGS="-R test_moe_block|test_gemm_skinny|test_fused_ar_(2|4|ctas_4)$|test_layers_moe_dec|test_model_gpu_fused_4$" \
#     CTEST_TIMEOUT=150 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s12b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
S="--shape 4096,4096,8,2,14336 --shape 4096,2048,128,8,768 --shape 8192,7168,256,8,2048"
TAIL=20 step moe_tail1 60 mk-launch -n 4 -- mk-bench moe --breakdown --seed 7 $S --path fused
TAIL=20 step moe_tail0 60 env MK_MOE_COMBINE_TAIL=0 mk-launch -n 4 -- mk-bench moe --breakdown --seed 7 $S --path fused
for n in 4096 2048; do
  step oproj$n 25 mk-launch -n 4 -- mk-bench gemm_ar --m 64 --n $n --k 1024
  step oproj${n}_split0 25 env MK_GEMM_SKINNY_SPLIT_KB=0 mk-launch -n 4 -- mk-bench gemm_ar --m 64 --n $n --k 1024 --path fused
done
. "$REPO/tools/bench/bench_defaults.sh"
step ar_il 30 mk-launch -n 4 -- mk-bench gemm_ar --interleave --json "$RES/gemm_ar_h200x4_interleave.json"
echo "end at $(( $(date +%s) - T0 )) s"
