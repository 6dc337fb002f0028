#!/usr/bin/env bash
# tools/bench/run_s9a.sh — session 9, first GPU call (4 x H200): the staged epilogue (MK_GEMM_EPI=1: each
# warp's 16 x 64 slabs through shared memory, 16-byte stores) against the direct one (MK_GEMM_EPI=0) on
# the plain GEMM beside cuBLASLt (interleaved), ncu of both epilogues and of cuBLASLt with the per-instruction
# stall samples (source page, SASS), then GEMM+RS / GEMM+AR at the defaults:
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_gemm$|^test_gemm_grouped$|test_fused_(rs|ar)_4$|^test_fused$|test_moe_block" \
#     CTEST_TIMEOUT=150 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s9a.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_)|^gemm|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
S="--shape 1024x8192x7168 --shape 2048x8192x7168 --shape 8192x8192x7168 --shape 16384x8192x7168 --shape 8192x8192x8192"
B="mk-bench gemm --interleave --warmup 100 --rotate 3 --iters 100 $S"
TAIL=20 step gemm_epi1 40 env MK_GEMM_EPI=1 $B --json "$RES/gemm_epi1.json"
TAIL=20 step gemm_epi0 40 env MK_GEMM_EPI=0 $B --json "$RES/gemm_epi0.json"
TAIL=20 step gemm_epi1b 40 env MK_GEMM_EPI=1 $B --json "$RES/gemm_epi1b.json"
step rs 25 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --m 16384
step ar 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --m 1024 --m 4096
NCU="/usr/local/cuda/bin/ncu --clock-control none"
# (As run at 47c59b6 the imports below passed --clock-control, which --import refuses: no CSVs came back.)
ncu_one() { # NAME KERNEL-REGEX PATH [ENV...]
  local name=$1 k=$2 path=$3
  shift 3
  TAIL=30 STEP_GREP='Duration|Throughput|SM Frequency|Executed Instructions  |Cycles Per Issued' step "ncu_$name" 90 \
    env "$@" $NCU -k regex:"$k" --launch-skip 10 --launch-count 1 --set full --import-source no -o "$RES/ncu_$name" -f \
    mk-bench gemm --shape 2048x8192x7168 --path "$path" --warmup 5 --iters 10
  $NCU -i "$RES/ncu_$name.ncu-rep" --page details > "$RES/ncu_${name}_details.txt" 2>&1
  $NCU -i "$RES/ncu_$name.ncu-rep" --page raw --csv > "$RES/ncu_${name}_raw.csv" 2>&1
  $NCU -i "$RES/ncu_$name.ncu-rep" --page source --csv --print-source sass > "$RES/ncu_${name}_sass.csv" 2>&1 ||
    $NCU -i "$RES/ncu_$name.ncu-rep" --page source --csv > "$RES/ncu_${name}_sass.csv" 2>&1
  head -c 600 "$RES/ncu_${name}_sass.csv"; echo; wc -l "$RES/ncu_${name}_sass.csv"
  grep -E 'Duration|Compute \(SM\) Throughput' "$RES/ncu_${name}_details.txt" | head -4
  rm -f "$RES/ncu_$name.ncu-rep"
}
ncu_one epi1 mk_gemm_core fused MK_GEMM_TILE_N=256 MK_GEMM_EPI=1
ncu_one epi0 mk_gemm_core fused MK_GEMM_TILE_N=256 MK_GEMM_EPI=0
ncu_one cublas 'nvjet|sm90|gemm|cutlass|xmma' unfused MK_GEMM_EPI=1
echo "end at $(( $(date +%s) - T0 )) s"
