#!/usr/bin/env bash
# tools/gpu-check.sh — one call on a lent GPU machine: unpack the carried Debian packages
# (the machine has no cJSON and can install nothing), configure, build with all cores,
# run every test, print mk-bench --info, then run extra commands.
#   MKERNEL_BUILD_COMMIT=<sha> [CTEST_ARGS="-R regex"] [CTEST_TIMEOUT=s] [CTEST_WALL=s] [BUILD_TARGETS="t1 t2"] \
#     tools/gpu-check.sh [-- 'EXTRA COMMANDS']
# CTEST_TIMEOUT bounds one test (default 300 s), CTEST_WALL the whole ctest run (default 480 s), so
# that the results still come back inside one device call. BUILD_TARGETS builds only those targets (default: all;
# the tests that CTEST_ARGS picks must be among them).
# Extra commands run in build-gpu/bin and write their files under $RES. Everything under
# $RES (logs, JSON) is packed into $OUT/results.tgz at exit (the device returns few files).
# Needs: .carry/debs/*.deb (apt-get download libcjson1 libcjson-dev libmicrohttpd12 libmicrohttpd-dev
# libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3) and, where the machine lacks
# GnuTLS, .carry/debs-rt/*.deb (libgnutls30 and its dependencies), both carried.
set -uo pipefail
export MK_CALL_T0=${MK_CALL_T0:-$(date +%s)} # bench_step.sh: MK_CALL_LIMIT counts from here
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/mk-out}
export RES=/tmp/mk-results
rm -rf "$RES"
mkdir -p "$OUT" "$RES"
trap 'tar czf "$OUT/results.tgz" -C "$RES" . 2>/dev/null' EXIT
prefix=/tmp/mkprefix
mkdir -p "$prefix"
for f in .carry/debs/*.deb; do dpkg -x "$f" "$prefix"; done
# Runtime libraries of those packages that the machine may lack (libmicrohttpd's GnuTLS stack):
# .carry/debs-rt/*.deb, used only where the system has no libgnutls.so.30.
if ! ldconfig -p 2>/dev/null | grep -q 'libgnutls\.so\.30' && ls .carry/debs-rt/*.deb > /dev/null 2>&1; then
  mkdir -p /tmp/mkrt
  for f in .carry/debs-rt/*.deb; do dpkg -x "$f" /tmp/mkrt; done
  export LD_LIBRARY_PATH=/tmp/mkrt/usr/lib/x86_64-linux-gnu:/tmp/mkrt/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "runtime libraries from .carry/debs-rt (no system libgnutls.so.30)"
fi
{ grep PRETTY_NAME /etc/os-release; ldd --version | head -1; } > "$RES/os.txt" 2>&1
nvidia-smi --query-gpu=index,name,memory.total,clocks.sm,clocks.mem --format=csv > "$RES/nvidia-smi.csv" 2>&1
nvidia-smi topo -m >> "$RES/nvidia-smi.csv" 2>&1
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_PREFIX_PATH="$prefix/usr" > "$RES/configure.log" 2>&1 || { tail -30 "$RES/configure.log"; exit 1; }
grep -E '^\-\-   \[' "$RES/configure.log"
cmake --build build-gpu -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} > "$RES/build.log" 2>&1 || { grep -E 'error|Error' "$RES/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
timeout "${CTEST_WALL:-480}" ctest --test-dir build-gpu --output-on-failure --timeout "${CTEST_TIMEOUT:-300}" ${CTEST_ARGS:-} \
  > "$RES/ctest.log" 2>&1
rc=$?
grep -E 'Test +#.*(Failed|Timeout|Exception)|tests passed|FAILED' "$RES/ctest.log" | tail -30
build-gpu/bin/mk-bench --info > "$RES/mk-bench-info.txt" 2>&1
head -3 "$RES/mk-bench-info.txt"
if [ "${1:-}" = "--" ]; then
  shift
  (cd build-gpu/bin && PATH=$PWD:$PATH && eval "$*") 2>&1 | tee "$RES/extra.log" | tail -100
fi
exit $rc
