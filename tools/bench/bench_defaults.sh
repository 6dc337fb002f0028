#!/usr/bin/env bash
# tools/bench/bench_defaults.sh — the default-shape benches whose JSON goes under docs/perf/ (issues #6, #7,
# #9): AG+GEMM, GEMM+RS, GEMM+AR, the MoE block (--breakdown), the layer (--decode batch), PyTorch
# async-TP merged into the AG / RS rows, a plot of each. Sourced by the session scripts (run_s5c.sh,
# run_s6c.sh) after bench_step.sh; runs in build-gpu/bin, writes under $RES.
for op in ag_gemm gemm_rs gemm_ar; do step $op 40 mk-launch -n 4 -- mk-bench $op --json "$RES/${op}_h200x4.json"; done
TAIL=40 step moe 70 mk-launch -n 4 -- mk-bench moe --breakdown --json "$RES/moe_h200x4.json"
TAIL=40 step layer 60 mk-launch -n 4 -- mk-bench layer --decode batch --warmup 3 --iters 10 --json "$RES/layer_h200x4.json"
for op in ag_gemm gemm_rs; do
  step torch_$op 40 mk-launch -n 4 -- python3 "$REPO/tools/bench/torch_async_tp.py" --op $op --merge "$RES/${op}_h200x4.json"
done
for f in ag_gemm gemm_rs gemm_ar moe layer; do
  mk-bench plot "$RES/${f}_h200x4.json" -o "$RES/${f}_h200x4.png" > /dev/null 2>&1 || echo "plot $f failed"
done
