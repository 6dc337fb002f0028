#!/usr/bin/env bash
# tools/bench/next_rsov.sh — branch rsov (#6): GEMM+RS / GEMM+AR copy-engine mode with the owner's
# reduce beside the GEMM (MK_FUSED_CE_OVERLAP=1), 4 x H200, after its tests (gpu-check.sh's ctest
# first), time-guarded (LIMIT, default 250 s):
#   CTEST_ARGS="-R test_fused_(rs|ar)|test_fused_ce_order|test_fused_select" CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_rsov.sh'
# The ctest set runs test_fused_{rs,ar}_ceov_{2,4} (the flag on: odd shapes, 100 calls, 100 graph
# replays, AR bit-identical across ranks, alternating with SM roles and the plain copy-engine
# mode) beside the existing rs/ar variants. Then mk-bench gemm_rs / gemm_ar with
# --ce-overlap-ab: on copy engines, path fused = MK_FUSED_CE_OVERLAP=0 and path fused_ceov = 1 in
# one call, the same inputs; RS with PyTorch async-TP merged. A reducer sweep at RS 8192 last.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/bench/bench_step.sh"
grep -E 'test_fused_(rs|ar)|test_fused_ce_order|tests passed|tests failed' "$RES/ctest.log" 2>/dev/null | tail -30
step gemm_rs_ov 70 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --m 16384 --ce-overlap-ab \
  --json "$RES/gemm_rs_ov_h200x4.json"
step gemm_ar_ov 60 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 4096 --ce-overlap-ab --json "$RES/gemm_ar_ov_h200x4.json"
step torch_gemm_rs 40 mk-launch -n 4 -- python3 "$REPO/tools/bench/torch_async_tp.py" --op gemm_rs \
  --merge "$RES/gemm_rs_ov_h200x4.json"
for r in 4 16; do
  step rs_ov_red$r 30 env MK_FUSED_CE_REDUCERS=$r mk-launch -n 4 -- mk-bench gemm_rs --m 8192 --ce-overlap-ab
done
echo "end at $(( $(date +%s) - T0 )) s"
