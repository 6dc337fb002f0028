#!/usr/bin/env bash
# tools/bench/next_moe3.sh — the GPU run of the moe3 branch (issue #7: fused MoE decode and
# overlap), on one 4 x H200 host, from build-gpu/bin (mk-launch and mk-bench on PATH). The
# predictions it confirms or refutes are in docs/perf/NOTES.md (moe, version 6). Through
# tools/gpu-check.sh, from the repository root:
#   CTEST_ARGS="-R test_moe|test_gemm" CTEST_TIMEOUT=120 tools/gpu-check.sh -- \
#     'RES=$RES bash ../../tools/bench/next_moe3.sh'
# Writes logs and JSON under $RES. About 5-7 minutes after the build; if the build and this do
# not fit one 10-minute device call, run steps 2-3 and 4-5 in two calls (same commit).
set -uo pipefail
RES=${RES:?set RES to the output folder}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
step() { # name, timeout, command...: runs it, keeps its log, prints rc and the table's tail
  local name=$1 t=$2
  shift 2
  timeout "$t" "$@" > "$RES/$name.log" 2>&1
  echo "$name rc=$?"
  grep -vE '^\s*$' "$RES/$name.log" | tail -"${TAIL:-14}"
}
# 1. Correctness: gpu-check.sh runs ctest first (CTEST_ARGS above, --output-on-failure, into
#    $RES/ctest.log): test_moe_block* must pass (variants 4, 5: split-K) before any time counts.
B="mk-launch -n 4 -- mk-bench moe --breakdown"
DEC="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768
     --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
# 2. Decode: default (no split) vs split-K, overlapped (AUTO below 1024 tokens) and serial.
TAIL=40 step moe_decode_base 150 $B $DEC --json "$RES/moe_decode_base.json"
TAIL=40 step moe_decode_split 150 $B $DEC --split-k 8 --json "$RES/moe_decode_split.json"
TAIL=40 step moe_decode_split_serial 150 $B $DEC --split-k 8 --schedule serial --json "$RES/moe_decode_split_serial.json"
# 3. Every default shape (AUTO), the acceptance table.
TAIL=60 step moe_all 200 $B --json "$RES/moe_h200x4.json"
# 4. The overlapped schedule at T >= 4096 (combine now launched after GEMM1, paced polls):
#    GEMM1 beside 16 comm CTAs (11.9 ms at 8192,7168,256 in run 52db79a); and hybrid.
TAIL=40 step moe_overlap_big 150 $B --schedule overlap --shape 4096,4096,8,2,14336 --shape 8192,7168,256,8,2048
TAIL=40 step moe_hybrid_big 150 $B --schedule hybrid --shape 4096,4096,8,2,14336 --shape 4096,2048,128,8,768 \
  --shape 8192,7168,256,8,2048
# 5. Two emulated nodes (loopback proxy), with and without split-K.
step moe_2nodes 120 mk-launch -n 4 --nodes 2 -- mk-bench moe --shape 4096,4096,8,2,14336 --shape 16,4096,8,2,14336 \
  --json "$RES/moe_2nodes.json"
step moe_2nodes_split 120 mk-launch -n 4 --nodes 2 -- mk-bench moe --shape 16,4096,8,2,14336 --split-k 8 \
  --json "$RES/moe_2nodes_split.json"
mk-bench plot "$RES/moe_h200x4.json" -o "$RES/moe_h200x4.png" > /dev/null 2>&1 || echo "plot failed"
