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
if [ "$PART" = a ]; then
  export STEP_GREP='^\[0\] (gemm_|ag_|\{)|^gemm|fused on|fused in|fused two|keeps the SM path|async-TP|FAIL|rror'
  fused_op ag_def ag_gemm "2048 8192 16384"
  fused_op rs_def gemm_rs "2048 8192 16384"
  for r in 1 2; do
    async_tp "torch_ag$r" ag_gemm "$RES/ag_def.json"
    async_tp "torch_rs$r" gemm_rs "$RES/rs_def.json"
  done
  fused_op ar_def gemm_ar "16 128 1024 4096"
fi
# part b (2 GPUs): the SM clock and power of GEMM+RS 8192 and GEMM+AR 4096 in fold mode (MK_FUSED_FOLD=1) and on copy
#   engines (=0): the fused path alone (--path fused, 1500 calls after 300 warm-up) with nvidia-smi sampling every
#   50 ms, fold and copy engines in turns, twice. Question: fold's RS is ~5 % slower than the copy engines' while its
#   GEMM alone in fold's layout (MK_FUSED_FOLD_DEBUG=7) is not (session 32); does fold run at a lower clock under the
#   700 W cap
#   (its SM stores over NVLink and its sums in the epilogue) where the copy engines move the same bytes?
#   Prediction if so: fold's median SM clock ~5 % under the copy engines' at RS 8192, at the same power.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_fused_rs_fold_2$" CTEST_TIMEOUT=120 CTEST_WALL=100 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s33.sh b'
clock_run() { # NAME OP M VAR=VALUE...: the fused path alone under nvidia-smi sampling; prints its medians
  local name=$1 op=$2 m=$3 smi q=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active
  shift 3
  nvidia-smi --query-gpu=$q --format=csv,noheader > /dev/null 2>&1 ||
    q=timestamp,index,clocks.sm,power.draw,temperature.gpu
  nvidia-smi --query-gpu=$q --format=csv,noheader -lms 50 > "$RES/$name.csv" 2>&1 &
  smi=$!
  sleep 0.3
  TAIL=4 step "$name" 60 env "$@" mk-launch -n "$G" -- mk-bench "$op" --m "$m" --path fused --warmup 300 --iters 1500 \
    --seed 7 --json "$RES/$name.json"
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  python3 - "$RES/$name.csv" <<'PY'
import statistics, sys
rows = [l.strip().split(', ') for l in open(sys.argv[1]) if l.count(',') >= 4]
for g in sorted({r[1] for r in rows}):
    mine = [r for r in rows if r[1] == g]
    busy = [r for r in mine if float(r[3].split()[0]) > 400]  # samples of the timed loop (power above idle)
    if not busy:
        print("  gpu %s: no busy samples" % g); continue
    mhz = [float(r[2].split()[0]) for r in busy]; w = [float(r[3].split()[0]) for r in busy]
    print("  gpu %s: %d busy samples, SM MHz median %.0f (p10 %.0f, p90 %.0f), power median %.0f W" % (
        g, len(busy), statistics.median(mhz), sorted(mhz)[len(mhz) // 10], sorted(mhz)[len(mhz) * 9 // 10],
        statistics.median(w)))
PY
}
if [ "$PART" = b ]; then
  export STEP_GREP='^\[0\] (gemm_|\{)|^gemm|fused on|fused in|fused two|keeps the SM path|FAIL|rror'
  for r in 1 0 1b 0b; do
    clock_run "clk_rs_fold$r" gemm_rs 8192 MK_FUSED_FOLD="${r%b}"
    clock_run "clk_ar_fold$r" gemm_ar 4096 MK_FUSED_FOLD="${r%b}"
  done
fi
