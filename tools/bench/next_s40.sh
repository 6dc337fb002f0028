#!/usr/bin/env bash
# next_s40.sh — session 40's GPU runs (docs/perf/NOTES.md, moe "Session 40"). Run through tools/gpu-check.sh from
# the repository root.
# MK_MOE_G1_PDL was removed after these runs (the kernels back to a1b4e2d's); the script records what ran, each part on
# the tree of its run's commit (b2a42e4, f2a84f1, a8852aa, c2cb6b9, 99bc941, 969ef7c, b93aafd, 41f0dc7, 29156d0; part j,
# 934a08d, was not run).
# part a (2 GPUs): GEMM1 as the dispatch's programmatic dependent (MK_MOE_G1_PDL=1, the new default) against one
#   kernel after the other (=0), in turns, twice, fused path, --breakdown, at mk-bench moe's default shapes (the
#   three prefill shapes run the serial schedule; Mixtral's decode shapes the sender without the count exchange);
#   then tools/bench/group_rows.cu (one GPU): the dispatch's row grouping against TMA bulk copies and the ceilings.
#   Tests: test_moe_block (variant 19: =0), test_moe_pick.
#   Prediction (run 21dc8dc-x2, E = 128: landed 0.094-0.101, g1_first 0.108-0.115): g1_first - landed 14 -> ~3 us
#   (no kernel boundary, no memset), the three prefill shapes -10 us each (E = 128 0.756 -> ~0.746); Mixtral's ll
#   decode -2 to -4 us; group_rows: the warp copy at ~2.2 TB/s (session 38's reading of landed - sent), bulk copies
#   ~3 TB/s or more.
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_moe_(pick|block)$" CTEST_TIMEOUT=150 CTEST_WALL=170 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s40.sh a'
# part b (2 GPUs): as part a's turns, with GEMM1's CTAs claiming tiles in order under MK_MOE_G1_PDL=1 (serial schedule:
#   mk_moe_dev.g1_claim). Part a (run b2a42e4-x2): E = 128 0.750, 0.750 / 0.756, 0.756, but E = 256 13.08, 12.90 /
#   11.33, 11.40 and E = 8 g1_last +0.2-0.3 ms: GEMM1's CTAs started as dispatch CTAs exited, at different times, and
#   walked fixed tiles, so the tiles in flight were no longer neighbours sharing weight panels in L2 (our reading).
#   Prediction: E = 256 and E = 8 back to level or better (-10 to -20 us), E = 128 0.750 again.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_block$" CTEST_TIMEOUT=150 CTEST_WALL=170 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s40.sh b'
# part c (2 GPUs): as part b, with the proxy fence after a tile's wait only until the producer has seen every dispatch
#   CTA out (mk_moe_dev.dsp_out). Part b (run f2a84f1-x2): E = 128 0.760, 0.759 / 0.765, 0.763, but E = 256 11.96,
#   11.89 / 11.58, 11.60 and E = 8 5.03, 5.06 / 4.96, 5.04, GEMM1 and GEMM2 both ~3 % longer at E = 256. Our reading:
#   the fence after every tile's wait stalls the producer until its loads in flight land (62 tiles a CTA at E = 256).
#   Prediction: E = 256 and E = 8 level or better, E = 128 ~0.750.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_block$" CTEST_TIMEOUT=150 CTEST_WALL=170 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s40.sh c'
# part d (2 GPUs): as part c, with fixed tiles again (no claims), each producer's first tile waiting until every
#   dispatch CTA is out (mk_moe_dev.o_dsp_out), then one proxy fence. Part c (run a8852aa-x2): E = 128 0.754, 0.755 /
#   0.762, 0.759, E = 256 11.726, 11.727 / 11.589, 11.605, E = 8 4.881, 4.985 / 4.987, 4.803; GEMM1 and GEMM2 still
#   longer at E = 256. Our reading: claimed tiles drift apart in time, so tiles that share a weight panel no longer
#   read it at the same k-offsets (L2); fixed tiles started together walk side by side as after a kernel boundary.
#   Prediction: E = 256 and E = 8 level or -10 us (the boundary and the memset), E = 128 0.750-0.755.
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_moe_block$" CTEST_TIMEOUT=150 CTEST_WALL=170 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s40.sh d'
# part e (2 GPUs): a diagnostic of part d (run c2cb6b9-x2: E = 256 12.22, 13.18 / 11.46, 11.41 with a synchronised
#   start; GEMM1 8.1 ms against 6.1). MK_MOE_G1_PDL=2 launches GEMM1 with the programmatic attribute but the dispatch
#   does not trigger, so GEMM1's CTAs start only once the dispatch has ended, on every SM at once, as in a plain launch.
#   If 2 is level with 0, part d's loss comes from where and when the CTAs were placed; if 2 loses like 1, from the
#   launch attribute itself. 2, 1, 0 in turns, twice, at the three prefill shapes, fused path.
#   MK_CALL_LIMIT=200 CTEST_ARGS="-R ^test_moe_pick$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_s40.sh e'
# part f (2 GPUs): part e (run 99bc941-x2) lost at E = 256 with 2 as with 1 (12.84, 11.66 / 12.88, 12.91 / 0: 11.35,
#   11.34): not the placement. MK_MOE_G1_PDL=3 is a plain launch (no attribute, no trigger) with the rest of 1 and 2
#   (no memset, the dispatch's last CTA clears the xflags, GEMM1's first tiles wait for dsp_out, one proxy fence). If
#   3 is level with 0, the launch attribute itself slows GEMM1 at E = 256. 3, 2, 0 in turns, twice.
#   MK_CALL_LIMIT=200 CTEST_ARGS="-R ^test_moe_pick$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_s40.sh f'
# part g (2 GPUs): part f (run 969ef7c-x2) lost with 3 as with 2 (13.16, 12.69 / 12.82, 12.97 / 0: 11.45, 11.45): not
#   the attribute either. MK_MOE_G1_PDL=4 is 3 with the memset of the xflags kept between the dispatch and GEMM1. If 4
#   is level with 0, GEMM1 right after the dispatch kernel is what is slow at E = 256; if it loses like 3, the wait
#   for dsp_out and the proxy fence (or the dispatch's count at its end). 4, 3, 0 in turns, twice.
#   MK_CALL_LIMIT=200 CTEST_ARGS="-R ^test_moe_pick$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_s40.sh g'
# part h (2 GPUs): part g (run b93aafd-x2) lost with 4 as with 3 (13.25, 13.32 / 12.98, 12.51 / 0: 11.46, 11.45): not
#   the memset. MK_MOE_G1_PDL=5 is 3 without the proxy fence (the first tiles wait for dsp_out), 6 is 3 with the fence
#   and without that wait. 5, 6, 0 in turns, twice, at E = 256.
#   MK_CALL_LIMIT=200 CTEST_ARGS="-R ^test_moe_pick$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_s40.sh h'
# part i (2 GPUs): part h (run 41f0dc7-x2) lost with 5 and 6 (13.06, 12.78 / 12.88, 13.03 / 0: 11.78, 11.72): neither
#   the fence nor the wait. MK_MOE_G1_PDL=7 is 0 with only dsp_out's 8-byte heap allocation (every later heap area of
#   the bench 256 bytes on per serial handle). 7, 0 in turns, twice, at E = 256.
#   MK_CALL_LIMIT=150 CTEST_ARGS="-R ^test_moe_pick$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_s40.sh i'
# part j (2 GPUs): part i (run 29156d0-x2): 7 level with 0 (11.74, 11.63 / 11.64, 11.73): not the heap layout.
#   MK_MOE_G1_PDL=8 is 6 (a plain launch, one proxy fence a producer, no wait) with the memset kept and without the
#   dispatch's count at its end (no __syncthreads, fence, atomic, xflag clear there). 8, 6, 0 in turns, twice.
#   MK_CALL_LIMIT=150 CTEST_ARGS="-R ^test_moe_pick$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_s40.sh j'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ] || [ "$PART" = b ] || [ "$PART" = c ] || [ "$PART" = d ]; then
  export STEP_GREP='uniform fused|phases|rror|FAIL'
  moe_turns pdl "" MK_MOE_G1_PDL 1 0 -- --path fused
fi
if [ "$PART" = a ]; then
  TAIL=30 STEP_GREP='.' step group_build 120 nvcc -std=c++17 -arch=sm_90a -O3 -I../.. ../../tools/bench/group_rows.cu \
    -o /tmp/group_rows
  TAIL=30 STEP_GREP='.' step group_rows 90 /tmp/group_rows
fi
# pdl SHAPES MODE...: the fused path at SHAPES with MK_MOE_G1_PDL at each MODE, in turns, twice (parts e-j)
pdl() {
  export STEP_GREP='uniform fused|phases|rror|FAIL'
  moe_modes 'pdl%s_%s' "$1" MK_MOE_G1_PDL "${@:2}" -- --path fused
}
E128="--shape 4096,2048,128,8,768" E256="--shape 8192,7168,256,8,2048"
case "$PART" in
  e) pdl "--shape 4096,4096,8,2,14336 $E128 $E256" 2 1 0 ;;
  f) pdl "$E128 $E256" 3 2 0 ;;
  g) pdl "$E128 $E256" 4 3 0 ;;
  h) pdl "$E256" 5 6 0 ;;
  i) pdl "$E256" 7 0 ;;
  j) pdl "$E256" 8 6 0 ;;
esac
