#!/usr/bin/env bash
# tools/bench/run_s9c.sh — session 9, third GPU call (4 x H200): GEMM+RS / GEMM+AR on copy engines with the
# owner-sequential order (MK_FUSED_CE_SEQ=1, default: the GEMM walks owners me + 1, me + 2, ..., its own rows
# last, one 16-row group per owner at most; the side stream pushes owner by owner) against the interleaved
# order (=0), and the copy-engine mode at the SM-mode shapes (RS M = 2048, AR M = 1024); AG's GEMM shape alone:
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R test_fused_(rs|ar)_(ce|ceint|auto)|test_fused_(rs|ar)_4$|test_fused_select" \
#     CTEST_TIMEOUT=120 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s9c.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (gemm_)|^gemm|fused on|fused two|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
step rs 25 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --m 16384 --json "$RES/gemm_rs_h200x4.json"
step rs_int 25 env MK_FUSED_CE_SEQ=0 mk-launch -n 4 -- mk-bench gemm_rs --m 8192 --m 16384 --path fused
step rs_ce2048 20 env MK_FUSED_RS_COPY=1 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 4096
step ar 25 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 128 --m 1024 --m 4096 --json "$RES/gemm_ar_h200x4.json"
step ar_int 20 env MK_FUSED_CE_SEQ=0 mk-launch -n 4 -- mk-bench gemm_ar --m 4096 --path fused
step ar_ce1024 20 env MK_FUSED_AR_TWO_SHOT=0 MK_FUSED_AR_COPY=1 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 2048
step torch_rs 40 mk-launch -n 4 -- python3 "$REPO/tools/bench/torch_async_tp.py" --op gemm_rs --merge "$RES/gemm_rs_h200x4.json"
TAIL=20 step gemm 40 mk-bench gemm --interleave --warmup 100 --rotate 3 --iters 100 --shape 8192x7168x8192 \
  --shape 2048x7168x8192 --shape 16384x7168x8192
TAIL=20 step gemm256 40 env MK_GEMM_TILE_N=256 mk-bench gemm --interleave --warmup 100 --rotate 3 --iters 100 \
  --shape 8192x7168x8192 --shape 2048x7168x8192 --shape 16384x7168x8192
echo "end at $(( $(date +%s) - T0 )) s"
