#!/usr/bin/env bash
# next_s38.sh — session 38's GPU runs (docs/perf/NOTES.md, moe "Session 38"). Run through tools/gpu-check.sh from
# the repository root.
# part a (2 GPUs): the prefill dispatch's rows by copy engine (MK_MOE_CE_SEND; -1 the new default, on at issue 7's
#   three prefill shapes on 2 ranks) against the rows sent by the dispatch's SMs (=0), in turns, twice, fused path,
#   --breakdown; then the defaults at the prefill shapes with the unfused path beside. Tests: test_moe_pick,
#   test_moe_block (variants 17 and 18: forced on and off) and the copy-engine fused tests, whose stream memory
#   operations moved into comm (mk_stream_write32 / mk_stream_wait32).
#   Prediction (phases of run 373ce9f-x2, E = 128: sent 0.071, landed 0.119, g1_first 0.131 ms): the copy of the 16 MiB
#   x to the peer (~45 us at ~370 GB/s) overlaps the plan, exchange and the own rows' grouping; g1_first -> ~0.075,
#   (4096, 2048, 128) 0.789 -> ~0.735 ms; (8192, 7168, 256) g1_first 0.709 -> ~0.47, 11.57 -> ~11.35; (4096, 4096, 8)
#   g1_first 0.145 -> ~0.11, -0.03 ms.
#   MK_CALL_LIMIT=560 \
#     CTEST_ARGS="-R ^test_moe_(pick|block)$|^test_fused_(ag|rs|ar)_ce(fold)?_2$|^test_fused_ar_auto_2$" \
#     CTEST_TIMEOUT=150 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s38.sh a'
# part b (2 GPUs): the defaults after part a: mk-bench moe at its 9 shapes (docs/perf/moe_h200x2_<commit>.json) and the
#   layer at its defaults (both models, prefill and decode; its prefill MoE blocks run the serial schedule, Qwen3's
#   with E = 128, k = 8 and Mixtral's with E = 8, k = 2, both on copy engines now); test_moe_block on 2 node groups of
#   one GPU (loopback: the SM dispatch there).
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_moe_pick$" \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s38.sh b'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
PRE="--shape 4096,4096,8,2,14336 --shape 4096,2048,128,8,768 --shape 8192,7168,256,8,2048"
if [ "$PART" = a ]; then
  export STEP_GREP='uniform fused|phases|rror|FAIL'
  moe_modes 'ce_%s%s' "$PRE" MK_MOE_CE_SEND on=-1 off=0 -- --path fused
  export STEP_GREP='uniform fused|rror|FAIL'
  moe moe_pre "$PRE"
fi
if [ "$PART" = b ]; then
  STEP_GREP='^OK|rror|FAIL|Assert' TAIL=4 step moe_2x1 150 mk-launch -n 2 --nodes 2 -- ./test_moe_block
  export STEP_GREP='uniform fused|rror|FAIL'
  moe moe_def ""
  export STEP_GREP='^\[0\] (layer +|\{)|FAIL|rror'
  layer layer_def "$BIN"
fi
