#!/usr/bin/env bash
# tools/bench/run_s10a.sh — session 10, first GPU call (4 x H200): where GEMM+AR loses at the layer's shapes
# (the O projection: M = 8192, N = 4096 / 2048, K = 1024, comm-bound; decode M = 64), the copy-engine knobs
# there (side streams, rows per piece, SM modes), and the SM clock / power of AG and RS at M = 8192 (GEMM alone,
# NCCL alone, unfused, fused, in that order, sampled every 50 ms):
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_fused_(rs|ar)_(ce|ceint)" CTEST_TIMEOUT=120 CTEST_WALL=150 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s10a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_|ag_)|^gemm|fused on|fused two|phases|host us|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
MIX="--m 8192 --m 2048 --n 4096 --k 1024"
step ar_mix 25 mk-launch -n 4 -- mk-bench gemm_ar $MIX
step ar_mix_s3 25 env MK_FUSED_CE_STREAMS=3 mk-launch -n 4 -- mk-bench gemm_ar $MIX
step ar_mix_r2k 25 env MK_FUSED_CE_ROWS=2048 mk-launch -n 4 -- mk-bench gemm_ar $MIX
step ar_mix_s3r1k 25 env MK_FUSED_CE_STREAMS=3 MK_FUSED_CE_ROWS=1024 mk-launch -n 4 -- mk-bench gemm_ar $MIX
step ar_mix_sm 25 env MK_FUSED_AR_COPY=0 mk-launch -n 4 -- mk-bench gemm_ar $MIX
step ar_mix_two 25 env MK_FUSED_AR_COPY=0 MK_FUSED_AR_TWO_SHOT=1 mk-launch -n 4 -- mk-bench gemm_ar $MIX
step ar_qwen 25 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 2048 --k 1024
step ar_qwen_s3 25 env MK_FUSED_CE_STREAMS=3 mk-launch -n 4 -- mk-bench gemm_ar --m 8192 --n 2048 --k 1024
step ar_dec 25 mk-launch -n 4 -- mk-bench gemm_ar --m 64 --n 4096 --k 1024 --breakdown
step ar_dec_q 25 mk-launch -n 4 -- mk-bench gemm_ar --m 64 --n 2048 --k 1024 --breakdown
step ar_small 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --breakdown
step ar_ce_s3 25 env MK_FUSED_AR_TWO_SHOT=0 MK_FUSED_AR_COPY=1 MK_FUSED_CE_STREAMS=3 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 4096
step rs_s3 25 env MK_FUSED_CE_STREAMS=3 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192
# Clocks: the four timed parts of one shape, 1500 iterations each.
Q=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader > /dev/null 2>&1 || Q=timestamp,index,clocks.sm,power.draw,temperature.gpu
for op in ag_gemm gemm_rs; do
  nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 50 > "$RES/clocks_$op.csv" 2>&1 &
  smi=$!
  sleep 0.5
  step clk_$op 40 mk-launch -n 4 -- mk-bench $op --m 8192 --warmup 20 --iters 1500
  sleep 0.3
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  python3 - "$RES/clocks_$op.csv" <<'PY'
import sys
rows=[l.strip().split(', ') for l in open(sys.argv[1]) if l.count(',')>=4]
g0=[r for r in rows if r[1]=='0']
print(f"{sys.argv[1]}: {len(g0)} samples of GPU 0 (sm MHz, W):")
print(' '.join(f"{r[2].split()[0]}/{r[3].split('.')[0]}" for r in g0))
PY
done
step trace_ag 30 env MK_TRACE="$RES/trace_ag8192" mk-launch -n 4 -- mk-bench ag_gemm --m 8192 --warmup 5 --iters 3 --path fused
step trace_rs 30 env MK_TRACE="$RES/trace_rs8192" mk-launch -n 4 -- mk-bench gemm_rs --m 8192 --warmup 5 --iters 3 --path fused
for f in "$RES"/trace_*.rank0.json; do python3 "$REPO/tools/bench/trace_stats.py" "$f"; done
echo "end at $(( $(date +%s) - T0 )) s"
