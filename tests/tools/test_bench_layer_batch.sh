#!/usr/bin/env bash
# test_bench_layer_batch.sh (multigpu) — `mk-bench layer --decode batch` end to end on 2 ranks
# at a small size (Qwen3 layer, 256 prefill tokens, 8 sequences x 300 cached positions): it
# exits 0 and writes both paths' three decode rows with seqs 8 and finite times. Skips (77)
# with fewer than 2 GPUs.
set -u
launch=${1:?usage: test_bench_layer_batch.sh MK_LAUNCH MK_BENCH}
bench=${2:?usage: test_bench_layer_batch.sh MK_LAUNCH MK_BENCH}
gpus=$("$bench" --info 2>/dev/null | awk '/^GPUs/ {print $2 + 0}')
if [ "${gpus:-0}" -lt 2 ]; then echo "skip: needs 2 GPUs, found ${gpus:-0}"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$launch" -n 2 -- "$bench" layer --preset qwen3 --tokens 256 --batch 8 --context 300 --decode batch \
  --warmup 1 --iters 3 --json "$tmp/r.json" > "$tmp/log" 2>&1
rc=$?
tail -20 "$tmp/log"
if [ $rc -ne 0 ]; then echo "FAIL: mk-bench layer --decode batch exited $rc"; exit 1; fi
python3 - "$tmp/r.json" <<'PY' || exit 1
import json, math, sys
rows = [r for r in json.load(open(sys.argv[1]))["results"] if r["shape"].get("phase") == "decode"]
ok = [r for r in rows if r["shape"].get("seqs") == 8 and isinstance(r.get("median_ms"), (int, float))
      and math.isfinite(r["median_ms"]) and r["median_ms"] > 0]
print(f"{len(ok)} decode rows with seqs 8 and a finite time of {len(rows)}")
sys.exit(0 if len(ok) == len(rows) == 6 else 1)  # layer_attn, layer_moe, layer x fused, unfused
PY
echo "ok"
