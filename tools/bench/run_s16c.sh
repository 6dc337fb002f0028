#!/usr/bin/env bash
# tools/bench/run_s16c.sh — session 16, 4 x H200: (1) the skinny GEMM at aee143e (the last commit of session 15,
# built from a copy of its tree in .carry/old-aee143e) against this tree with the producer's loads in groups of
# 1 (the same loop as aee143e), 2, 4, 8 k-steps (MK_GEMM_SKINNY_BATCH), back to back (--batch 20), twice;
# GEMM+AR M = 16, 128, 1024 at aee143e and here (batch 1 and 4), in turns; (2) the MoE block's schedules at
# prefill since the push combine: serial (AUTO at T >= 1024) against overlap with 16 and 32 dispatch CTAs
# (--seed 7), E = 128 twice, E = 8 once. Ran at 763b0fc (MK_GEMM_SKINNY_BATCH was removed after it), with
#   mkdir -p .carry/old-aee143e && git archive aee143e | tar x -C .carry/old-aee143e --exclude=docs
# and .carry/old-aee143e in the device call's carry. Tests under CTEST_ARGS:
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R test_gemm_skinny(_batch)?$|test_fused_ar_(4|push_4)$" CTEST_TIMEOUT=150 \
#     CTEST_WALL=150 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s16c.sh'
# (Its old-tree build became old_build in bench_step.sh after the run: the same commands.)
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm|^gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
old_build aee143e
SK="--shape 16x8192x7168 --shape 128x8192x7168 --batch 20"
for r in 1 2; do
  TAIL=4 step sk_old_$r 15 env MK_GEMM_SKINNY=1 $OB/mk-bench gemm $SK --json "$RES/sk_old_$r.json"
  for b in 1 2 4 8; do
    TAIL=4 step sk_b${b}_$r 15 env MK_GEMM_SKINNY=1 MK_GEMM_SKINNY_BATCH=$b mk-bench gemm $SK --json "$RES/sk_b${b}_$r.json"
  done
done
AR="gemm_ar --m 16 --m 128 --m 1024 --interleave"
TAIL=6 step ar_old 30 $OB/mk-launch -n 4 -- $OB/mk-bench $AR --json "$RES/ar_old.json"
for b in 1 4; do
  TAIL=6 step ar_b$b 30 env MK_GEMM_SKINNY_BATCH=$b mk-launch -n 4 -- mk-bench $AR --json "$RES/ar_b$b.json"
done
STEP_GREP='^\[0\]   T=|^\[0\]     phases|FAIL|rror'
E128="--shape 4096,2048,128,8,768"
for r in 1 2; do
  TAIL=4 step e128_serial_$r 30 mk-launch -n 4 -- mk-bench moe --seed 7 --breakdown --schedule serial $E128 \
    --json "$RES/e128_serial_$r.json"
  TAIL=4 step e128_overlap_$r 30 mk-launch -n 4 -- mk-bench moe --seed 7 --breakdown --schedule overlap $E128 \
    --json "$RES/e128_overlap_$r.json"
  TAIL=4 step e128_overlap32_$r 30 mk-launch -n 4 -- mk-bench moe --seed 7 --breakdown --schedule overlap \
    --comm-ctas 32 $E128 --json "$RES/e128_overlap32_$r.json"
done
E8="--shape 4096,4096,8,2,14336"
for s in serial overlap; do
  TAIL=4 step e8_$s 45 mk-launch -n 4 -- mk-bench moe --seed 7 --breakdown --schedule $s $E8 --json "$RES/e8_$s.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
