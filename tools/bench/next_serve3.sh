#!/usr/bin/env bash
# next_serve3.sh — what branch serve3 needs from the next GPU session (4x H200), run through
# tools/gpu-check.sh (which builds build-gpu, runs every test, then this in build-gpu/bin):
#   tools/gpu-check.sh -- 'bash ../../tools/bench/next_serve3.sh'
# 1. the tests of what serve3 added (kv_copy, the GPU serving backend on 2 / 4 / 2x2 ranks);
# 2. acceptance 2 of issue 10: a Qwen3-30B-A3B layer-size model (mk-gen --full, 4 layers),
#    mk-serve --gpus on 4 GPUs and on 2 nodes x 2 (loopback), fused and unfused, 64 concurrent
#    clients for DUR seconds each (default 120; prompts of 256 in / 256 out), JSON under $RES.
# Knobs: CFGS (the configurations, "GPUS NODES PATH" separated by commas; default all four),
# DUR (seconds of load per configuration), SKIP_TESTS=1 (skip step 1), LAYERS (default 4).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
RES=${RES:-/tmp/mk-results}
mkdir -p "$RES"
BIN=$(cd "$(dirname "$0")/../../build-gpu/bin" 2>/dev/null && pwd || pwd)
export PATH=$BIN:$PATH
DUR=${DUR:-120}                  # seconds during which requests start
RUN_S=${RUN_S:-$((DUR + 60))}     # hard bound of one benchmark run (the last requests finish)
CFGS=${CFGS:-4 1 unfused,4 1 fused,4 2 unfused,4 2 fused}
LAYERS=${LAYERS:-4}
T0=$(date +%s)
# 1. tests (--output-on-failure: the logs say which check failed)
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  ctest --test-dir "$BIN/.." --output-on-failure --timeout 600 -R 'test_kv_copy|test_serve' > "$RES/ctest_serve3.log" 2>&1
  echo "ctest serve3 rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E 'Test +#|tests passed' "$RES/ctest_serve3.log" | tail -12
fi
# 2. acceptance 2
M=/tmp/qwen3_30b_a3b_${LAYERS}l
[ -d $M ] || mk-gen --family qwen3_moe --full --layers "$LAYERS" --out $M > "$RES/gen.log" 2>&1 || { echo "mk-gen failed"; tail "$RES/gen.log"; exit 1; }
echo "model ready at $(( $(date +%s) - T0 )) s: $(du -sh $M | cut -f1)"
export MK_HEAP_BYTES=$((24 << 30)) MK_BOOTSTRAP_TIMEOUT_MS=120000
IFS=, read -r -a cfgs <<< "$CFGS"
for cfg in "${cfgs[@]}"; do
  set -- $cfg
  n=$1 k=$2 p=$3 tag="serve_qwen3_${n}x${k}_${p}"
  port=$(( 18000 + RANDOM % 1000 ))
  mk-launch -n "$n" --nodes "$k" -- mk-serve --model $M --port $port --gpus --path "$p" --max-batch 64 \
    --kv-pages 4096 --block-size 16 --max-model-len 1024 --max-step-tokens 4096 --tokenizer none \
    > "$RES/$tag.server.log" 2>&1 &
  lp=$!
  for _ in $(seq 1 180); do grep -q "listening on" "$RES/$tag.server.log" && break; kill -0 $lp 2>/dev/null || break; sleep 1; done
  if ! grep -q "listening on" "$RES/$tag.server.log"; then
    echo "$tag: the server did not start"; tail -20 "$RES/$tag.server.log"; kill $lp 2>/dev/null; wait $lp; continue
  fi
  timeout "$RUN_S" mk-bench serve --port $port --duration "$DUR" --concurrency 64 --input-len 256 --output-len 256 \
    --vocab 151936 --json "$RES/$tag.json" > "$RES/$tag.bench.log" 2>&1
  echo "$tag: bench rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "Successful|Failed|throughput|TTFT|TPOT|ITL" "$RES/$tag.bench.log" | head -16
  curl -s "localhost:$port/metrics" > "$RES/$tag.metrics.txt" 2>/dev/null
  kill -TERM $lp; wait $lp; echo "$tag: mk-launch rc=$? (143 = stopped by SIGTERM)"
  grep -E "rank [0-9]+: (rank 0 stopped|lost)|died|killing" "$RES/$tag.server.log" | head -6
  # the device tool returns what is under $OUT even when the call runs out of time
  if [ -n "${OUT:-}" ]; then mkdir -p "$OUT/serve" && cp "$RES/$tag".* "$OUT/serve/" 2>/dev/null; fi
done
echo "end at $(( $(date +%s) - T0 )) s"
