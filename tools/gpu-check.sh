#!/usr/bin/env bash
# tools/gpu-check.sh — one call on a lent GPU machine: unpack the carried Debian packages
# (the machine has no cJSON and can install nothing), configure, build with all cores,
# run every test, and save mk-bench --info plus any extra commands' output under $OUT.
#   tools/gpu-check.sh [-- EXTRA_COMMAND ...]     (EXTRA commands run from build/bin)
# Needs: .carry/debs/*.deb (apt-get download libcjson1 libcjson-dev), carried.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/mk-out}
mkdir -p "$OUT"
prefix=/tmp/mkprefix
mkdir -p "$prefix"
for f in .carry/debs/*.deb; do dpkg -x "$f" "$prefix"; done
nvidia-smi --query-gpu=index,name,memory.total,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.csv" 2>&1
nvidia-smi topo -m >> "$OUT/nvidia-smi.csv" 2>&1
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_PREFIX_PATH="$prefix/usr" > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
grep -E '^\-\-   \[' "$OUT/configure.log"
cmake --build build-gpu -j "$(nproc)" > "$OUT/build.log" 2>&1 || { grep -E 'error|Error' "$OUT/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
ctest --test-dir build-gpu --output-on-failure --timeout 300 > "$OUT/ctest.log" 2>&1
rc=$?
grep -E 'Test +#|tests passed|FAILED|Skipped' "$OUT/ctest.log" | tail -60
build-gpu/bin/mk-bench --info | tee "$OUT/mk-bench-info.txt"
if [ "${1:-}" = "--" ]; then
  shift
  (cd build-gpu/bin && PATH=$PWD:$PATH && eval "$*") 2>&1 | tee "$OUT/extra.log" | tail -80
fi
exit $rc
