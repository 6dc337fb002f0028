# Final session-2 device call: build, decode bench, tests of what changed, moe + layer benches.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/mk-out}; RES=/tmp/mk-results; rm -rf $RES; mkdir -p $OUT $RES
trap 'tar czf "$OUT/results.tgz" -C "$RES" . 2>/dev/null' EXIT
T0=$(date +%s); left() { echo $(( ${BUDGET:-330} - ($(date +%s) - T0) )); }
prefix=/tmp/mkprefix; mkdir -p $prefix; for f in .carry/debs/*.deb; do dpkg -x "$f" $prefix; done
cmake -S . -B build-gpu -G Ninja -DCMAKE_PREFIX_PATH=$prefix/usr > $RES/configure.log 2>&1 || { tail -20 $RES/configure.log; exit 1; }
cmake --build build-gpu -j $(nproc) > $RES/build.log 2>&1 || { grep -E 'error' $RES/build.log | head -30; exit 1; }
echo "build done at $(( $(date +%s) - T0 )) s"
cd build-gpu/bin; export PATH=$PWD:$PATH
timeout 40 ./mk-bench attn --mode decode --json $RES/attn_decode_h200x4.json > $RES/decode.log 2>&1; echo "decode rc=$?"; grep -E "HBM|attn_decode " $RES/decode.log | tail -4
ctest --test-dir .. --timeout 45 -R "moe_block|test_fused|paged_decode|gemm_grouped|model_gpu_fused_.*_(4|2nodes)$|agree_(mixtral_2nodes|mixtral_flash_2|qwen3_moe_flash_tp4|olmoe_tp4)" > $RES/ctest.log 2>&1; echo "ctest rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "Test +#.*(Failed|Timeout|Exception)|tests passed" $RES/ctest.log
l=$(left); [ $l -gt 40 ] && { timeout $(( l > 100 ? 90 : l - 10 )) mk-launch -n 4 -- ./mk-bench moe --breakdown --json $RES/moe_h200x4.json > $RES/moe.log 2>&1; echo "moe rc=$?"; grep -E "^\[0\] +T=" $RES/moe.log; }
for p in mixtral qwen3; do l=$(left); [ $l -gt 30 ] && { timeout $(( l > 80 ? 70 : l - 10 )) mk-launch -n 4 -- ./mk-bench layer --preset $p --warmup 3 --iters 10 --json $RES/layer_${p}_h200x4.json > $RES/layer_$p.log 2>&1; echo "layer $p rc=$?"; grep -E "^\[0\] layer" $RES/layer_$p.log | head -12; }; done
echo "end at $(( $(date +%s) - T0 )) s"
