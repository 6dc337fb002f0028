#!/usr/bin/env bash
# tools/bench/run_s11b.sh — session 11, second GPU call (4 x H200): where GEMM+AR's small-M time outside its
# kernel goes: per call with one event pair each (default) against --batch 20 back-to-back calls per pair, with
# and without programmatic dependent launch; the plain skinny GEMM the same ways; K = 64 (no GEMM to speak of);
# the SASS of the flag stores:
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R test_bench_report" CTEST_TIMEOUT=60 CTEST_WALL=30 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s11b.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_|  +phases)|^gemm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step ar_b1 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128
step ar_b20 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --batch 20
step ar_b20_nopdl 25 env MK_GEMM_SKINNY_PDL=0 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --batch 20
step ar_b20_graph 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --batch 20 --graph
step ar_k64 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --k 64 --breakdown
step ar_k64_b20 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --k 64 --batch 20
step sk_b1 25 env MK_GEMM_SKINNY=1 mk-bench gemm --shape 16x8192x7168 --shape 128x8192x7168 --shape 16x8192x64
step sk_b20 25 env MK_GEMM_SKINNY=1 mk-bench gemm --shape 16x8192x7168 --shape 128x8192x7168 --shape 16x8192x64 --batch 20
step sk_b20_nopdl 25 env MK_GEMM_SKINNY=1 MK_GEMM_SKINNY_PDL=0 mk-bench gemm --shape 16x8192x7168 --shape 128x8192x7168 --shape 16x8192x64 --batch 20
O=$(find "$REPO" -path '*fused/gemm_ar.cu.o' | head -1)
if command -v cuobjdump >/dev/null && [ -n "$O" ]; then
  cuobjdump -sass "$O" > "$RES/gemm_ar_sass.txt" 2>&1
  echo "gemm_ar.cu.o: $(grep -c MEMBAR "$RES/gemm_ar_sass.txt") MEMBAR, $(grep -c 'STRONG.SYS' "$RES/gemm_ar_sass.txt") STRONG.SYS"
  grep -o 'MEMBAR[.A-Z]*' "$RES/gemm_ar_sass.txt" | sort | uniq -c
fi
echo "end at $(( $(date +%s) - T0 )) s"
