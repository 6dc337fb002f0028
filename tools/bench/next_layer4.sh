#!/usr/bin/env bash
# next_layer4.sh — what branch layer4 needs from the next GPU session (4x H200), run through
# tools/gpu-check.sh (which builds build-gpu, runs every test, then this in build-gpu/bin):
#   tools/gpu-check.sh -- 'bash ../../tools/bench/next_layer4.sh'
# 1. the quick tests of what layer4 touched, again with their logs under $RES: the positions
#    RoPE (test_elementwise_rope_pos), the CLI, the batch decode bench on 2 GPUs (the serving
#    model's refactored pass, test_serve_gpu_*, runs in gpu-check.sh's full ctest: read it there);
# 2. issue #9 acceptance 3 at decode: `mk-bench layer --decode batch` = 64 sequences x 4096
#    cached positions (paged KV cache, random K/V), one new token each, fused vs unfused, both
#    presets; and the old single-sequence decode (--decode one) beside it for comparison.
# Predictions: docs/perf/NOTES.md, "layer: decode at batch 64 (branch layer4)".
set -uo pipefail
RES=${RES:?set RES to the output folder}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BIN=$PWD # gpu-check.sh runs this in build-gpu/bin
export PATH=$BIN:$PATH
T0=$(date +%s)
# 1. tests (--output-on-failure: the logs say which check failed)
ctest --test-dir "$BIN/.." --output-on-failure --timeout 600 -R 'test_elementwise_rope|test_mk_bench_cli|test_bench_layer_batch' \
  > "$RES/ctest_layer4.log" 2>&1
echo "ctest layer4 rc=$? at $(( $(date +%s) - T0 )) s"
grep -E 'Test +#|tests passed' "$RES/ctest_layer4.log" | tail -12
# 2. decode at batch 64 (each run bounded by 300 s; ~1 min each, most of it the prefill phase)
export MK_BOOTSTRAP_TIMEOUT_MS=120000
C=${MKERNEL_BUILD_COMMIT:-$(git -C "$BIN/../.." rev-parse HEAD 2>/dev/null || echo unknown)}
C=${C:0:7}
for preset in mixtral qwen3; do
  for mode in batch one; do
    tag="layer_${preset}_decode${mode}_h200x4_$C"
    timeout 300 mk-launch -n 4 -- mk-bench layer --preset $preset --decode $mode --batch 64 --context 4096 \
      --warmup 5 --iters 20 --json "$RES/$tag.json" > "$RES/$tag.log" 2>&1
    echo "$tag: rc=$? at $(( $(date +%s) - T0 )) s"
    grep -E "layer:|prefill|decode|FAIL|rror" "$RES/$tag.log" | head -8
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
