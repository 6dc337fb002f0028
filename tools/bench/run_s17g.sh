#!/usr/bin/env bash
# tools/bench/run_s17g.sh — session 17, 4 x H200: is a fused kernel's CTA slow at copies because its ~200 KiB of shared
# memory leaves the L1 little room? The per-CTA NVLink push / pull rates and the reducers' loop alone
# (mk-bench comm --per-cta) as they are, with 200 KiB of dynamic shared memory a CTA, and with that and ld.global.cg
# loads; then the pipelined GEMM+AR two-shot with its copies loading through ld.global.cg (mk_fused_copy_block) at the
# O projection and M = 1024, --interleave (80a8941, plain loads: 0.532 / 0.337 ms):
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R test_fused_ar_pipe" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s17g.sh'
# Ran at e03b514. MK_FUSED_AR_PIPE was removed after run 5717005 (NOTES, fused, session 17): to rerun, check out e03b514
# and run that commit's copy of this script.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] gemm_ar +(un)?fused|nvlink|reduce4|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
TAIL=24 step comm_base 60 mk-launch -n 4 -- mk-bench comm --per-cta --json "$RES/comm_base.json"
TAIL=24 step comm_smem200 60 mk-launch -n 4 -- mk-bench comm --per-cta --smem-kb 200 --json "$RES/comm_smem200.json"
TAIL=24 step comm_smem200_cg 60 mk-launch -n 4 -- mk-bench comm --per-cta --smem-kb 200 --ldcg \
  --json "$RES/comm_smem200_cg.json"
P="MK_FUSED_AR_PIPE=1 MK_FUSED_AR_PIPE_LAG=64"
TAIL=2 ar_step o4096_pipe $P -- --m 8192 --n 4096 --k 1024 --ctas 16
TAIL=2 ar_step ar1024_pipe $P -- --m 1024 --ctas 16
echo "end at $(( $(date +%s) - T0 )) s"
