#!/usr/bin/env bash
# next_s39.sh — session 39's GPU runs (docs/perf/NOTES.md, moe "Session 39"). Run through tools/gpu-check.sh from
# the repository root.
# Both knobs were removed after these runs (the kernels back to a1b4e2d's); the script records what ran.
# part a (2 GPUs; runs 93fd1ee-x2, 45c0e9d-x2, d193887-x2, 04c302c-x2): the peers' rows grouped beside GEMM1
#   (MK_MOE_CE_BESIDE; -1 the default in those builds, 16 CTAs) against every row grouped before it (=0, session
#   38), in turns, twice, fused path, --breakdown, at issue 7's three prefill shapes; then 8 and 32 CTAs once.
#   Tests: test_moe_pick, test_moe_block (variants 17, 19 and 20: beside on 16 CTAs, off, on 1 CTA).
#   Prediction (run 979f653-x2, E = 128: counts 0.023, sent 0.039, landed 0.098, g1_first 0.113, g1_last 0.457 ms):
#   own rows grouped on every SM by ~0.05, the peer's copy in by ~0.05, GEMM1's first window ~0.01 later:
#   g1_first -> ~0.06, 0.764 -> ~0.715 ms; E = 256: g1_first 0.493 -> ~0.33 (the copy of 112 MiB), -0.15 ms;
#   E = 8: g1_first 0.114 -> ~0.07.
#   MK_CALL_LIMIT=400 CTEST_ARGS="-R ^test_moe_(pick|block)$" CTEST_TIMEOUT=150 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s39.sh a'
# part c (2 GPUs; run 21dc8dc-x2): the copies after the count exchange (MK_MOE_CE_AFTER=1, the default in that
#   build) against at the call's start (=0, session 38), in turns, twice, fused path, --breakdown, at the three
#   prefill shapes. Tests: test_moe_block (its copy-engine variants under the new default).
#   Prediction (run 04c302c-x2, E = 128, off runs: counts 0.019-0.021, sent 0.036-0.039, landed 0.096, g1_first 0.11):
#   counts back to ~0.008 (the records no longer share the link with the copy), the copy (~45 us) still in before the
#   own rows are grouped; g1_first -> ~0.10, 0.757 -> ~0.745 ms.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_block$" CTEST_TIMEOUT=150 CTEST_WALL=160 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s39.sh c'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
PRE="--shape 4096,4096,8,2,14336 --shape 4096,2048,128,8,768 --shape 8192,7168,256,8,2048"
if [ "$PART" = a ]; then
  export STEP_GREP='uniform fused|phases|rror|FAIL'
  moe_modes 'bes_%s%s' "$PRE" MK_MOE_CE_BESIDE on=-1 off=0 -- --path fused
  moe bes_8 "$PRE" MK_MOE_CE_BESIDE=8 -- --path fused
  moe bes_32 "$PRE" MK_MOE_CE_BESIDE=32 -- --path fused
fi
if [ "$PART" = c ]; then
  export STEP_GREP='uniform fused|phases|rror|FAIL'
  moe_modes 'after%s_%s' "$PRE" MK_MOE_CE_AFTER 1 0 -- --path fused
fi
