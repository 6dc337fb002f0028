#!/usr/bin/env bash
# next_x8.sh — issue 11 on one 8 x H200 host (`nvidia-h200-x8`): the earlier issues' mk-bench
# commands on 8 ranks of one node group and on 2 emulated nodes x 4 (loopback proxy), fused vs
# unfused in the same JSON files. Three device calls of <= 10 min, from the repository root
# (gpu-check.sh configures, builds, runs ctest with CTEST_ARGS, then this in build-gpu/bin):
#
#  call 1 (~9 min: build ~3 (unknown on this machine: 4-GPU logs do not time it), tests ~5):
#    the 8-rank correctness tests (fused ops ~5 s each, MoE block ~40 s, ring attention ~15 s,
#    whole model ~25 s per configuration; 4-GPU times x 1.5-2), then nothing else
#    CTEST_ARGS="-R (_8|_2x4|_tp8|_ep8)$" CTEST_TIMEOUT=240 CTEST_WALL=390 \
#      tools/gpu-check.sh -- 'bash ../../tools/bench/next_x8.sh 1'
#  call 2 (~7 min): AG+GEMM, GEMM+RS, GEMM+AR at TP 8 (the 4-GPU shapes' N or K split 8 ways:
#    N = 28672 / 8 = 3584 for AG, K = 3584 for RS/AR; ~40 s each), ring attention (~40 s),
#    NVLink / loopback put bandwidth (mk-bench comm, ~30 s); on 8 and on 2 x 4 each
#    CTEST_ARGS="-R ^none$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_x8.sh 2'
#  call 3 (~9 min): the GPU serving test on 2 x 4 (~70 s), MoE at EP 8 (~120 s) and 2 x 4
#    (~60 s), the layer benchmark on 8 (both presets, ~50 s each), mk-serve on 2 nodes x 4
#    under load (64 clients, DUR s per path, default 45; ~85 s each with start and drain)
#    CTEST_ARGS="-R ^none$" tools/gpu-check.sh -- 'bash ../../tools/bench/next_x8.sh 3'
# Left for a fourth call if there is device time: test_serve_gpu_8x1_fused/_8x2_unfused, the
# layer benchmark on 2 x 4 (same command under mk-launch -n 8 --nodes 2), --autotune runs.
#
# Each call's files go under $RES (packed by gpu-check.sh at exit) and are copied to $OUT/x8/
# as each step ends: the device returns what is under $OUT even when a call runs out of time.
# Time estimates come from the 4-GPU logs (docs/perf/raw/run-e7526f0, run-86709bb,
# run-6ab8609): 8 ranks start NCCL and the bootstrap in ~10-15 s per launch. A step that
# passes its timeout is killed and the next one runs. Predictions: docs/perf/NOTES.md,
# "8 GPUs (issue 11) — predictions". Knobs: DUR (serve seconds per path), ITERS (timed calls
# per shape, default 20), SKIP_SERVE=1, SKIP_LAYER=1.
# Every command sets NCCL_NVLS_ENABLE=0 (no NVLink multicast anywhere).
set -uo pipefail
PART=${1:?usage: next_x8.sh 1|2|3|4}
RES=${RES:?set RES to the output folder (gpu-check.sh does)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export MK_BOOTSTRAP_TIMEOUT_MS=120000
BIN=$PWD # gpu-check.sh runs this in build-gpu/bin
export PATH=$BIN:$PATH
ITERS=${ITERS:-20}
C=${MKERNEL_BUILD_COMMIT:-$(git -C "$BIN/../.." rev-parse HEAD 2>/dev/null || echo unknown)}
C=${C:0:7}
T0=$(date +%s)
save() { # files...: copy to $OUT/x8 as soon as they exist
  if [ -n "${OUT:-}" ]; then mkdir -p "$OUT/x8" && cp "$@" "$OUT/x8/" 2>/dev/null; fi
  return 0
}
step() { # name, timeout, command...: runs it, keeps its log, prints rc, time and the table's tail
  local name=$1 t=$2
  shift 2
  timeout "$t" "$@" > "$RES/$name.log" 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s"
  grep -vE '^\s*$' "$RES/$name.log" | grep -E 'fused|unfused|FAIL|rror|TIMEOUT|skipped' | tail -"${TAIL:-12}"
  save "$RES/$name.log" "$RES/$name.json"
}
L8="mk-launch -n 8 --"
L24="mk-launch -n 8 --nodes 2 --"
nvidia-smi -L | grep -c '^GPU' | { read -r n; [ "$n" -ge 8 ] || echo "WARNING: $n GPUs: the 8-rank steps will fail"; }
case "$PART" in
1)
  # gpu-check.sh ran the 8-rank tests into $RES/ctest.log; keep it now (the tarball comes at exit)
  save "$RES/ctest.log" "$RES/nvidia-smi.csv" "$RES/mk-bench-info.txt"
  grep -E 'Test +#|tests passed' "$RES/ctest.log" | tail -30
  ;;
2)
  # NVLink put bandwidth to each of 7 peers, and the loopback proxy between the 2 x 4 groups (~30 s each)
  step comm_h200x8 90 $L8 mk-bench comm --json "$RES/comm_h200x8.json"
  step comm_h200_2x4 90 $L24 mk-bench comm --json "$RES/comm_h200_2x4.json"
  # 4 GPUs: AG N 7168, RS/AR K 7168 per rank (full 28672); 8 GPUs: 3584. Defaults for M.
  # (~40 s each at 8 ranks: 3-4 shapes, 10 + ITERS calls per path, NCCL start)
  step ag_gemm_h200x8 120 $L8 mk-bench ag_gemm --n 3584 --k 8192 --iters "$ITERS" --json "$RES/ag_gemm_h200x8.json"
  step gemm_rs_h200x8 120 $L8 mk-bench gemm_rs --n 8192 --k 3584 --iters "$ITERS" --json "$RES/gemm_rs_h200x8.json"
  step gemm_ar_h200x8 120 $L8 mk-bench gemm_ar --n 8192 --k 3584 --iters "$ITERS" --json "$RES/gemm_ar_h200x8.json"
  # 2 x 4 through the loopback proxy: the 4-GPU 2-node runs' M (8192; AR 1024) plus the defaults
  step ag_gemm_h200_2x4 120 $L24 mk-bench ag_gemm --n 3584 --k 8192 --iters "$ITERS" --json "$RES/ag_gemm_h200_2x4.json"
  step gemm_rs_h200_2x4 120 $L24 mk-bench gemm_rs --n 8192 --k 3584 --iters "$ITERS" --json "$RES/gemm_rs_h200_2x4.json"
  step gemm_ar_h200_2x4 120 $L24 mk-bench gemm_ar --n 8192 --k 3584 --iters "$ITERS" --json "$RES/gemm_ar_h200_2x4.json"
  # ring attention: S = 2048 and 8192 rows per rank (16k and 64k in all), causal and not (~40 s)
  step ring_attn_h200x8 150 $L8 mk-bench ring_attn --iters "$ITERS" --json "$RES/ring_attn_h200x8.json"
  step ring_attn_h200_2x4 150 $L24 mk-bench ring_attn --iters "$ITERS" --json "$RES/ring_attn_h200_2x4.json"
  for f in ag_gemm gemm_rs gemm_ar ring_attn; do
    for cfg in h200x8 h200_2x4; do
      [ -s "$RES/${f}_$cfg.json" ] && mk-bench plot "$RES/${f}_$cfg.json" -o "$RES/${f}_$cfg.png" > /dev/null 2>&1 &&
        save "$RES/${f}_$cfg.png"
    done
  done
  ;;
3)
  # correctness of the GPU serving backend on 2 x 4 before its load run
  ctest --test-dir "$BIN/.." --output-on-failure --timeout 200 -R 'test_serve_gpu_8x2_fused$' > "$RES/ctest_serve_x8.log" 2>&1
  echo "ctest serve 8x2 rc=$? at $(( $(date +%s) - T0 )) s"
  save "$RES/ctest_serve_x8.log"
  # MoE, the default shapes at EP 8 (~120 s: 9 shapes); 2 x 4: the 4-GPU 2-node shapes (~60 s)
  TAIL=24 step moe_h200x8 170 $L8 mk-bench moe --iters "$ITERS" --json "$RES/moe_h200x8.json"
  TAIL=12 step moe_h200_2x4 120 $L24 mk-bench moe --shape 4096,4096,8,2,14336 --shape 16,4096,8,2,14336 \
    --shape 4096,2048,128,8,768 --iters "$ITERS" --json "$RES/moe_h200_2x4.json"
  if [ "${SKIP_LAYER:-0}" != 1 ]; then
    # one decoder layer at full size, prefill T = 8192 and decode at 4096 (~45 s per preset at 4 GPUs)
    for preset in mixtral qwen3; do
      step "layer_${preset}_h200x8_$C" 100 $L8 mk-bench layer --preset $preset --warmup 3 --iters 5 \
        --json "$RES/layer_${preset}_h200x8_$C.json"
    done
  fi
  if [ "${SKIP_SERVE:-0}" != 1 ]; then
    # mk-serve on 2 nodes x 4 under load: Qwen3-30B-A3B layer sizes, 4 layers, 64 clients (~100 s each)
    DUR=${DUR:-45} CFGS="8 2 unfused,8 2 fused" SKIP_TESTS=1 bash "$BIN/../../tools/bench/next_serve3.sh"
    for f in "$RES"/serve_qwen3_8x2_*; do [ -e "$f" ] && save "$f"; done
  fi
  for f in moe_h200x8 moe_h200_2x4 "layer_mixtral_h200x8_$C" "layer_qwen3_h200x8_$C"; do
    [ -s "$RES/$f.json" ] && mk-bench plot "$RES/$f.json" -o "$RES/$f.png" > /dev/null 2>&1 && save "$RES/$f.png"
  done
  ;;
4)
  # what part 3 left when run with SKIP_LAYER=1 SKIP_SERVE=1 (session 19: the device time left after
  # the MoE test fixes): the layer benchmark on 8, then mk-serve on 2 x 4 (DUR default 30 here)
  for preset in mixtral qwen3; do
    step "layer_${preset}_h200x8_$C" 100 $L8 mk-bench layer --preset $preset --warmup 3 --iters 5 \
      --json "$RES/layer_${preset}_h200x8_$C.json"
    [ -s "$RES/layer_${preset}_h200x8_$C.json" ] && mk-bench plot "$RES/layer_${preset}_h200x8_$C.json" \
      -o "$RES/layer_${preset}_h200x8_$C.png" > /dev/null 2>&1 && save "$RES/layer_${preset}_h200x8_$C.png"
  done
  DUR=${DUR:-30} CFGS="8 2 unfused,8 2 fused" SKIP_TESTS=1 bash "$BIN/../../tools/bench/next_serve3.sh"
  ;;
*)
  echo "usage: next_x8.sh 1|2|3|4"
  exit 2
  ;;
esac
echo "part $PART end at $(( $(date +%s) - T0 )) s"
