#!/usr/bin/env bash
# tools/bench/fused_bench.sh — the fused-op acceptance runs on one 4-GPU host, from build/bin
# (or with mk-launch / mk-bench on PATH): mk-bench ag_gemm / gemm_rs / gemm_ar on 4 ranks
# (--autotune over the role split), PyTorch async-TP rows merged into the AG and RS files,
# plots, then 2 emulated nodes x 2 GPUs through the loopback proxy.
#   RES=OUTDIR REPO=path/to/mkernel tools/bench/fused_bench.sh
set -uo pipefail
RES=${RES:?set RES to the output folder}
REPO=${REPO:-$(cd "$(dirname "$0")/../.." && pwd)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
for op in ag_gemm gemm_rs gemm_ar; do
  timeout 150 mk-launch -n 4 -- mk-bench "$op" --autotune ${BENCH_FLAGS:-} --json "$RES/${op}_h200x4.json" > "$RES/${op}_h200x4.log" 2>&1
  echo "$op rc=$?"
  grep -v autotune "$RES/${op}_h200x4.log" | tail -12
done
for op in ag_gemm gemm_rs; do
  timeout 120 mk-launch -n 4 -- python3 "$REPO/tools/bench/torch_async_tp.py" --op "$op" \
    --merge "$RES/${op}_h200x4.json" > "$RES/torch_${op}.log" 2>&1
  echo "torch $op rc=$?"
  grep -E "async-TP|failures" "$RES/torch_${op}.log" | grep -v '\[\]' | head -5
done
for op in ag_gemm gemm_rs gemm_ar; do
  mk-bench plot "$RES/${op}_h200x4.json" -o "$RES/${op}_h200x4.png" > /dev/null 2>&1 || echo "plot $op failed"
done
for op in ag_gemm gemm_rs gemm_ar; do
  m=8192; [ "$op" = gemm_ar ] && m=1024
  timeout 90 mk-launch -n 4 --nodes 2 -- mk-bench "$op" --m "$m" --json "$RES/${op}_2nodes.json" > "$RES/${op}_2nodes.log" 2>&1
  echo "$op 2 nodes rc=$?"
  tail -3 "$RES/${op}_2nodes.log"
done
# MK_TRACE: one traced AG+GEMM and one GEMM+RS at M=8192 (the last call's trace is kept), rendered.
for op in ag_gemm gemm_rs; do
  MK_TRACE="$RES/trace_${op}" timeout 60 mk-launch -n 4 -- mk-bench "$op" --m 8192 --warmup 1 --iters 2 \
    --path fused > "$RES/trace_${op}.log" 2>&1
  echo "trace $op rc=$?"
  python3 "$REPO/tools/bench/trace_png.py" "$RES/trace_${op}.rank0.json" -o "$RES/trace_${op}_rank0.png" || echo "render failed"
done
