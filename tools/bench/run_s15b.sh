#!/usr/bin/env bash
# tools/bench/run_s15b.sh — session 15, 4 x H200: GEMM+RS / GEMM+AR push mode (MK_FUSED_PUSH: the GEMM's epilogue
# stores other owners' rows into their PX, reducers read locally) against pull (=0) on SM roles, and against the
# default copy engines (RS >= 32 MiB, AR 4096); then the MoE (8192, 7168, 256) prefill with the push combine on / off:
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R test_fused_(rs_push_[24]|ar_push_[24]|ar_tail_4|rs_tma_4|rs_2nodes)$|test_moe_block$" \
#     CTEST_TIMEOUT=90 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s15b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm_|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
for r in 1 2; do
  for v in 1 0; do
    TAIL=4 step ar1024_push${v}_$r 30 env MK_FUSED_PUSH=$v mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --interleave \
      --json "$RES/ar1024_push${v}_$r.json"
  done
done
for v in 1 0; do
  TAIL=6 step rs_sm_push$v 45 env MK_FUSED_RS_COPY=0 MK_FUSED_PUSH=$v mk-launch -n 4 -- mk-bench gemm_rs \
    --m 2048 --m 8192 --interleave --json "$RES/rs_sm_push$v.json"
done
TAIL=6 step rs_default 45 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --interleave --json "$RES/rs_default.json"
TAIL=4 step ar4096_two_push 30 env MK_FUSED_AR_TWO_SHOT=1 mk-launch -n 4 -- mk-bench gemm_ar --m 4096 --interleave \
  --json "$RES/ar4096_two_push.json"
TAIL=4 step ar4096_default 30 mk-launch -n 4 -- mk-bench gemm_ar --m 4096 --interleave --json "$RES/ar4096_default.json"
for v in 1 0; do
  STEP_GREP='^\[0\]   T=|^\[0\]     phases|FAIL|rror' TAIL=4 step e256_push$v 60 env MK_MOE_PUSH=$v mk-launch -n 4 -- \
    mk-bench moe --seed 7 --breakdown --shape 8192,7168,256,8,2048 --json "$RES/moe_e256_push$v.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
