#!/usr/bin/env bash
# tools/bench/run_s7e.sh — session 7, last GPU call (4 x H200): the per-SM NVLink rates behind the fused
# reducers' limit (every pull variant measured this session topped out at ~20-25 GB/s per CTA): 64 MiB pushed
# (16-byte stores to the peer) and pulled (16-byte loads from the peer) by 1 .. 132 CTAs of 512 threads:
#   MK_CALL_LIMIT=150 CTEST_ARGS="-R ^none$" CTEST_WALL=20 tools/gpu-check.sh -- 'bash ../../tools/bench/run_s7e.sh'
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] comm|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh"
echo "LIMIT $LIMIT s"
TAIL=20 step comm_per_cta 60 mk-launch -n 4 -- mk-bench comm --per-cta --iters 20 --warmup 3 --json "$RES/comm_per_cta.json"
echo "end at $(( $(date +%s) - T0 )) s"
