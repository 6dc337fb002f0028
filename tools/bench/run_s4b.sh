#!/usr/bin/env bash
# tools/bench/run_s4b.sh — session 4, second GPU call (4 x H200), time-guarded like run_s4a.sh:
#   CTEST_ARGS="-R ^none$" tools/gpu-check.sh -- 'bash ../../tools/bench/run_s4b.sh'
# 1. The small-M floor (NOTES gemm "Also seen: M in {16, 128}"): host vs device time — the plain
#    GEMM and GEMM+AR at M = 16 / 128 timed per call and as CUDA-graph replays (--graph), host_ms
#    in the JSON. 2. #9 acceptance 1: the parity script against transformers on 1, 2, 4 GPUs and
#    2 x 2 (unfused), and the fused path on 4 and 2 x 2. 3. #7: every default MoE shape.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LIMIT=${LIMIT:-520}
STEP_GREP='^(\[0\] )?(gemm|moe|  T=|    phases)|FAIL|PASS|pass|rror|family|^(mixtral|qwen|olmoe)'
. "$(dirname "$0")/bench_step.sh" # env, T0, step
command -v nsys ncu 2>&1 | sed 's/^/tool: /'
SM="--shape 16x8192x7168 --shape 128x8192x7168 --shape 16x7168x8192 --shape 64x4096x1024 --interleave --warmup 50 --iters 200"
step gemm_small 60 mk-bench gemm $SM --json "$RES/gemm_small.json"
step gemm_small_graph 60 mk-bench gemm $SM --graph --json "$RES/gemm_small_graph.json"
step ar_small 60 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 64 --m 128 --warmup 50 --iters 200 --json "$RES/ar_small.json"
step ar_small_graph 60 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 64 --m 128 --warmup 50 --iters 200 --graph --json "$RES/ar_small_graph.json"
python3 - "$RES" <<'PY' || true
import json, sys, os
for f in ("gemm_small", "gemm_small_graph", "ar_small", "ar_small_graph"):
    p = os.path.join(sys.argv[1], f + ".json")
    if not os.path.exists(p): continue
    for r in json.load(open(p))["results"]:
        print(f"{f:18s} {r['path']:8s} {json.dumps(r['shape']):40s} median {r['median_ms']:.4f} host {r.get('host_ms') or 0:.4f}")
PY
P="python3 $REPO/tests/parity/parity_transformers.py --mk-run $PWD/mk-run --mk-launch $PWD/mk-launch"
TAIL=6 step parity_gpu1 90 $P --launch 1 --out "$RES/parity_gpu1.json"
TAIL=6 step parity_gpu2 90 $P --launch 2 --out "$RES/parity_gpu2.json"
TAIL=6 step parity_gpu4 90 $P --launch 4 --out "$RES/parity_gpu4.json"
TAIL=6 step parity_gpu2x2 90 $P --launch 4 --nodes 2 --out "$RES/parity_gpu2x2.json"
TAIL=6 step parity_gpu4_fused 90 env MK_PATH=fused $P --launch 4 --out "$RES/parity_gpu4_fused.json"
TAIL=6 step parity_gpu2x2_fused 90 env MK_PATH=fused $P --launch 4 --nodes 2 --out "$RES/parity_gpu2x2_fused.json"
TAIL=40 step moe_all 200 mk-launch -n 4 -- mk-bench moe --breakdown --json "$RES/moe_h200x4.json"
mk-bench plot "$RES/moe_h200x4.json" -o "$RES/moe_h200x4.png" > /dev/null 2>&1 || echo "plot failed"
echo "end at $(( $(date +%s) - T0 )) s"
