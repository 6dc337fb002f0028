#!/usr/bin/env bash
# tools/fuzz-safetensors.sh — build the safetensors header fuzz target with clang's libFuzzer
# under ASan + UBSan and run it.
#   tools/fuzz-safetensors.sh [SECONDS (60)] [OUT_DIR (build-fuzz)]
# Needs clang and libclang-rt-14-dev (Debian: clang-14 ships libFuzzer); not needed by the
# normal build or tests. Seeds: valid files written by mk-gen, if build/bin/mk-gen exists.
set -euo pipefail
secs=${1:-60}
out=${2:-build-fuzz}
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC_FUZZ:-$(command -v clang || command -v clang-14)}
mkdir -p "$out/corpus"
"$cc" -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root" "$root/tests/fuzz/fuzz_safetensors.c" "$root/models/safetensors.c" "$root/models/safetensors_index.c" \
  "$root/models/dtype.c" "$root/core/log.c" "$root/core/status.c" "$root/core/param.c" "$root/core/bf16.c" \
  -lcjson -lpthread -lm -o "$out/fuzz_safetensors"
if [ -x "$root/build/bin/mk-gen" ] && [ -z "$(ls -A "$out/corpus")" ]; then
  for f in mixtral qwen3_moe; do
    "$root/build/bin/mk-gen" --family $f --layers 1 --hidden 8 --heads 2 --kv-heads 1 --head-dim 4 --experts 2 \
      --top-k 1 --expert-inter 4 --vocab 8 --out "$out/seed_$f" >/dev/null
    cp "$out/seed_$f/model.safetensors" "$out/corpus/seed_$f"
  done
fi
printf '\x08\x00\x00\x00\x00\x00\x00\x00{}      ' > "$out/corpus/empty"
"$out/fuzz_safetensors" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  "$out/corpus"
