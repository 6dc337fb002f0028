#!/usr/bin/env bash
# tools/bench/run_s16a.sh — session 16, 4 x H200: (1) the skinny GEMM's weight stream with L2 prefetch
# (MK_GEMM_SKINNY_PF, k-steps ahead) and batched ring loads (MK_GEMM_SKINNY_BATCH), back to back (--batch 20),
# cuBLASLt beside; (2) GEMM+AR M = 16 / 128 with the prefetch; (3) GEMM+AR 1024 with the owners' sums pushed
# (MK_FUSED_PUSH=2) against session 15's push (1), in turns, twice; AR 4096 two-shot on SM roles with push 2
# against the default copy engines. Ran at f0629aa: MK_GEMM_SKINNY_PF / _BATCH and MK_FUSED_PUSH=2 were removed after
# it (docs/perf/NOTES.md, session 16). Tests under CTEST_ARGS:
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R test_fused_(ar|rs)_push_(2|4)$|test_fused_ar_(4|tail_4|two_4)$|test_gemm_skinny(_pf)?$" \
#     CTEST_TIMEOUT=150 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s16a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm|^gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
SK="--shape 16x8192x7168 --shape 128x8192x7168 --batch 20"
for c in 0,1 0,4 16,1 32,1 64,1 32,4; do
  pf=${c%,*} b=${c#*,}
  TAIL=4 step sk_pf${pf}_b$b 20 env MK_GEMM_SKINNY=1 MK_GEMM_SKINNY_PF=$pf MK_GEMM_SKINNY_BATCH=$b mk-bench gemm $SK \
    --json "$RES/sk_pf${pf}_b$b.json"
done
for pf in 0 32; do
  TAIL=4 step ar_small_pf$pf 25 env MK_GEMM_SKINNY_PF=$pf mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --interleave \
    --json "$RES/ar_small_pf$pf.json"
done
for r in 1 2; do
  for v in 2 1; do
    TAIL=4 step ar1024_push${v}_$r 30 env MK_FUSED_PUSH=$v mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --interleave \
      --json "$RES/ar1024_push${v}_$r.json"
  done
done
TAIL=4 step ar4096_sm_push2 30 env MK_FUSED_AR_COPY=0 MK_FUSED_AR_TWO_SHOT=1 mk-launch -n 4 -- mk-bench gemm_ar --m 4096 \
  --interleave --json "$RES/ar4096_sm_push2.json"
TAIL=4 step ar4096_default 30 mk-launch -n 4 -- mk-bench gemm_ar --m 4096 --interleave --json "$RES/ar4096_default.json"
echo "end at $(( $(date +%s) - T0 )) s"
