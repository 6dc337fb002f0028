#!/usr/bin/env bash
# tools/bench/gemm_perf.sh OUTDIR — the GEMM performance run of docs/perf/NOTES.md ("gemm"):
# run from the directory holding mk-bench (build/bin), one GPU. Samples GPU clocks, power
# and throttle reasons every 100 ms in the background (nvidia-smi, read-only) while it times
#   1. the acceptance shapes, both paths, defaults (last wave split along K where the model
#      picks it); again with the paths interleaved after a longer warm-up;
#   2. the same, ours only, data-parallel only (MK_GEMM_SPLIT_K=0) and the split forced
#      (MK_GEMM_SPLIT_K=2, =4);
#   3. 8192^3 and 8192x7168x8192 three times each, 300 calls, every call's time kept
#      (--samples), to look at the bimodal timings.
# Writes OUTDIR/{gemm,gemm_inter,gemm_dp,gemm_split2,gemm_split4}.json, *.log, samples_*.csv and smi.csv.
set -uo pipefail
out=${1:?usage: gemm_perf.sh OUTDIR}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
q=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$q --format=csv -i 0 > /dev/null 2>&1 || q=${q/clocks_throttle_reasons/clocks_event_reasons}
nvidia-smi --query-gpu=$q --format=csv -lms 100 > "$out/smi.csv" 2>&1 &
smi=$!
mark() { echo "# $(date +%s.%N) $*" >> "$out/marks.txt"; }
mark start
./mk-bench gemm --rotate 3 --iters 100 --json "$out/gemm.json" --samples "$out/samples_gemm.csv" > "$out/gemm.log" 2>&1
mark gemm done
./mk-bench gemm --interleave --warmup 200 --rotate 3 --iters 100 --json "$out/gemm_inter.json" > "$out/gemm_inter.log" 2>&1
mark interleaved done
MK_GEMM_SPLIT_K=0 ./mk-bench gemm --path fused --rotate 3 --iters 100 --json "$out/gemm_dp.json" > "$out/gemm_dp.log" 2>&1
mark dp done
for n in 2 4; do
  MK_GEMM_SPLIT_K=$n ./mk-bench gemm --path fused --rotate 3 --iters 100 --json "$out/gemm_split$n.json" > "$out/gemm_split$n.log" 2>&1
  mark split $n done
done
for r in 1 2 3; do
  ./mk-bench gemm --shape 8192x8192x8192 --shape 8192x7168x8192 --rotate 3 --iters 300 \
    --json "$out/gemm_rep$r.json" --samples "$out/samples_rep$r.csv" > "$out/gemm_rep$r.log" 2>&1
  mark rep $r done
done
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null
for f in gemm gemm_inter gemm_dp gemm_split2 gemm_split4 gemm_rep1 gemm_rep2 gemm_rep3; do echo "== $f"; grep -vE '^#' "$out/$f.log" | tail -40; done
