#!/usr/bin/env bash
# tools/bench/next_moedisp.sh — branch moedisp (issues #7, #9: MoE decode dispatch latency), 4 x H200,
# one device call, time-guarded by MK_CALL_LIMIT (bench_step.sh):
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R test_moe_block$|test_moe_block_ep4|test_moe_block_2x2|test_moe_pick" \
#     CTEST_TIMEOUT=180 CTEST_WALL=240 tools/gpu-check.sh -- 'bash ../../tools/bench/next_moedisp.sh'
# (gpu-check.sh runs this in build-gpu/bin.) What changed (docs/perf/NOTES.md, moe, "Session 5:
# dispatch latency"): the dispatch CTA sends every destination's rows first, then one barrier and
# W signals in parallel; rows cut into parts over the warps when a CTA has few; the receive takes
# sources in order of arrival; overlapped schedule: the dispatch launched before the plan/exchange
# and released by a device flag (MK_MOE_DISPATCH_EARLY=1, the default; 0 = the old event order).
# Steps, most wanted first (the guard skips what no longer fits): the six decode shapes, split-K AUTO,
# early dispatch on then off (A/B in one call: runs of identical code spread 5-8 % on this machine
# kind); the three T >= 4096 shapes once (AUTO: serial schedule; the send/receive changes apply, not
# the launch order); the decode shapes with split-K off, early on then off.
set -uo pipefail
BIN=$PWD
export PATH=$BIN:$PATH
STEP_GREP='^\[0\] (moe|\{|  T=|    phases)|FAIL|rror'
. "$(cd "$(dirname "$0")" && pwd)/bench_step.sh" # env, T0, LIMIT, step
echo "LIMIT $LIMIT s"
S="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
for early in 1 0; do
  TAIL=30 step moe_dec_auto_e$early 40 env MK_MOE_DISPATCH_EARLY=$early mk-launch -n 4 -- mk-bench moe --breakdown $S \
    --path fused --json "$RES/moe_dec_auto_e$early.json"
done
TAIL=30 step moe_prefill 90 mk-launch -n 4 -- mk-bench moe --breakdown --path fused --shape 4096,4096,8,2,14336 \
  --shape 4096,2048,128,8,768 --shape 8192,7168,256,8,2048 --json "$RES/moe_prefill.json"
for early in 1 0; do
  TAIL=30 step moe_dec_k0_e$early 40 env MK_MOE_DISPATCH_EARLY=$early mk-launch -n 4 -- mk-bench moe --breakdown $S \
    --path fused --split-k 0 --json "$RES/moe_dec_k0_e$early.json"
done
echo "end at $(( $(date +%s) - T0 )) s"
