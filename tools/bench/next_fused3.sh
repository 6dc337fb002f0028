#!/usr/bin/env bash
# tools/bench/next_fused3.sh — the GPU run for branch fused3 (issue #6): the copy-engine modes of
# AG+GEMM (MK_FUSED_AG_COPY=1), GEMM+RS (MK_FUSED_RS_COPY=1) and GEMM+AR (MK_FUSED_AR_COPY=1,
# two-shot), compile-checked only so far.
# On 4 x H200, from the repository root:
#   CTEST_ARGS="-R fused" tools/gpu-check.sh -- 'bash ../../tools/bench/next_fused3.sh'
# (gpu-check runs the extra commands in build-gpu/bin with it on PATH; files go under $RES).
# The ctest part covers test_fused_{ag,rs,ar}_ce_{2,4} (odd shapes, 100 calls, 100 graph replays,
# modes alternating) beside the existing fused tests. Predictions: docs/perf/NOTES.md, fused
# section, "Session 3 (fused3)".
set -uo pipefail
RES=${RES:?set RES to the output folder}
REPO=${REPO:-$(cd "$(dirname "$0")/../.." && pwd)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# 0. The new tests once more, verbose (their logs in $RES).
for t in ag_ce rs_ce ar_ce; do
  for n in 2 4; do
    timeout 120 mk-launch -n "$n" -- test_fused "$t" > "$RES/test_fused_${t}_${n}.log" 2>&1
    echo "test_fused $t n=$n rc=$?"; tail -2 "$RES/test_fused_${t}_${n}.log"
  done
done
# 1. A/B in one run: SM roles (default, autotuned split) against the copy-engine modes.
for op in ag_gemm gemm_rs gemm_ar; do
  timeout 150 mk-launch -n 4 -- mk-bench "$op" --autotune --json "$RES/${op}_sm.json" > "$RES/${op}_sm.log" 2>&1
  echo "$op SM rc=$?"; grep -v autotune "$RES/${op}_sm.log" | tail -8
  env MK_FUSED_AG_COPY=1 MK_FUSED_RS_COPY=1 MK_FUSED_AR_COPY=1 timeout 150 mk-launch -n 4 -- mk-bench "$op" --json "$RES/${op}_ce.json" \
    > "$RES/${op}_ce.log" 2>&1
  echo "$op copy engines rc=$?"; tail -8 "$RES/${op}_ce.log"
done
# 2. Piece size of the copies and flags at M = 8192.
for rows in 128 512 1024; do
  for op in ag_gemm gemm_rs; do
    env MK_FUSED_AG_COPY=1 MK_FUSED_RS_COPY=1 MK_FUSED_CE_ROWS=$rows timeout 90 mk-launch -n 4 -- mk-bench "$op" --m 8192 \
      --path fused --json "$RES/${op}_ce_rows${rows}.json" > "$RES/${op}_ce_rows${rows}.log" 2>&1
    echo "$op rows $rows rc=$?"; tail -2 "$RES/${op}_ce_rows${rows}.log"
  done
done
# 2b. One side stream (pushes to one peer after another) against one per peer (in parallel).
for op in ag_gemm gemm_rs gemm_ar; do
  env MK_FUSED_AG_COPY=1 MK_FUSED_RS_COPY=1 MK_FUSED_AR_COPY=1 MK_FUSED_CE_STREAMS=3 timeout 150 mk-launch -n 4 -- mk-bench "$op" \
    --path fused --json "$RES/${op}_ce_streams3.json" > "$RES/${op}_ce_streams3.log" 2>&1
  echo "$op 3 side streams rc=$?"; tail -4 "$RES/${op}_ce_streams3.log"
done
# 3. async-TP in the same run, merged into the copy-engine files; plots.
for op in ag_gemm gemm_rs; do
  timeout 120 mk-launch -n 4 -- python3 "$REPO/tools/bench/torch_async_tp.py" --op "$op" --merge "$RES/${op}_ce.json" \
    > "$RES/torch_${op}.log" 2>&1
  echo "torch $op rc=$?"
  mk-bench plot "$RES/${op}_ce.json" -o "$RES/${op}_ce.png" > /dev/null 2>&1 || echo "plot $op failed"
done
# 4. Traces of one copy-engine call each at M = 8192 (GEMM CTAs' waits; the copies are not traced).
for op in ag_gemm gemm_rs; do
  env MK_FUSED_AG_COPY=1 MK_FUSED_RS_COPY=1 MK_TRACE="$RES/trace_${op}_ce" timeout 60 mk-launch -n 4 -- mk-bench "$op" \
    --m 8192 --warmup 1 --iters 2 --path fused > "$RES/trace_${op}_ce.log" 2>&1
  echo "trace $op rc=$?"
  python3 "$REPO/tools/bench/trace_png.py" "$RES/trace_${op}_ce.rank0.json" -o "$RES/trace_${op}_ce_rank0.png" || echo "render failed"
done
