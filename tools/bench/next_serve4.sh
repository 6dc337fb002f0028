#!/usr/bin/env bash
# next_serve4.sh — what branch serve4 needs from the next GPU session (4x H200), run through
# tools/gpu-check.sh (which builds build-gpu, runs every test, then this in build-gpu/bin):
#   tools/gpu-check.sh -- 'bash ../../tools/bench/next_serve4.sh'
# Predictions: docs/perf/NOTES.md, "Serving step budget (prediction)".
# 1. correctness of what serve4 changed: the serving GPU tests (logits copied straight into a
#    page-locked buffer), mk_linear_f32out with MK_LINEAR_F32_ROWS=8 and 16 (bit-identical to 1),
#    the host-side step test;
# 2. a short serving run (4 GPUs, fused, DUR s) with the defaults, then the same with
#    MK_LINEAR_F32_ROWS=8 (the lm_head reads its weights 8 times instead of 64), each with
#    its /metrics (mk_engine_forward_seconds, mk_engine_sample_seconds_total) under $RES.
# Knobs: DUR (default 30), SKIP_TESTS=1.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
RES=${RES:-/tmp/mk-results}
mkdir -p "$RES"
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "$HERE/../../build-gpu/bin" 2>/dev/null && pwd || pwd)
DUR=${DUR:-30}
T0=$(date +%s)
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  ctest --test-dir "$BIN/.." --output-on-failure --timeout 600 \
    -R 'test_step_host|test_serve_gpu_4x1_fused|test_serve_gpu_4x1_unfused|test_serve_gpu_4x2_fused|test_elementwise_linear' \
    > "$RES/ctest_serve4.log" 2>&1
  echo "ctest serve4 rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E 'Test +#|tests passed' "$RES/ctest_serve4.log" | tail -8
  grep -A6 'host per engine step' "$RES/ctest_serve4.log" | head -8
  for r in 8 16; do
    MK_LINEAR_F32_ROWS=$r ctest --test-dir "$BIN/.." --output-on-failure --timeout 120 -R 'test_elementwise_linear|^test_model_gpu$' \
      > "$RES/ctest_rows$r.log" 2>&1
    echo "MK_LINEAR_F32_ROWS=$r: ctest rc=$?"; grep -E 'Test +#|tests passed' "$RES/ctest_rows$r.log" | tail -6
  done
fi
for rows in 1 8; do
  mkdir -p "$RES/rows$rows"
  echo "== serving, 4 GPUs fused, MK_LINEAR_F32_ROWS=$rows, DUR=$DUR"
  MK_LINEAR_F32_ROWS=$rows RES=$RES/rows$rows SKIP_TESTS=1 DUR=$DUR CFGS="4 1 fused" bash "$HERE/next_serve3.sh"
  m=$RES/rows$rows/serve_qwen3_4x1_fused.metrics.txt
  [ -f "$m" ] && awk '/^mk_engine_steps_total /{s=$2} /^mk_engine_forward_seconds_sum /{f=$2} /^mk_engine_sample_seconds_total /{p=$2}
    END {if (s) printf "steps %d: forward %.2f ms/step, sampling %.2f ms/step\n", s, 1e3*f/s, 1e3*p/s}' "$m"
done
echo "end at $(( $(date +%s) - T0 )) s"
