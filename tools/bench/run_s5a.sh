#!/usr/bin/env bash
# tools/bench/run_s5a.sh — session 5, first GPU call (4 x H200): after the tests of session 4's merges
# (gpu-check.sh's ctest), the A/B runs that decide the opt-in defaults, time-guarded by MK_CALL_LIMIT:
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R test_fused|test_moe|test_gemm|test_gather|test_layers|test_ref" CTEST_WALL=300 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/run_s5a.sh'
# 1. branch laymoe (#9): layer decode with MK_MOE_DECODE_TOKENS / MK_TP_GATHER_SM on and off (the variants of the former next_laymoe.sh);
# 2. branch rsov (#6): GEMM+RS / GEMM+AR with MK_FUSED_CE_OVERLAP 0 vs 1 in one call (the former next_rsov.sh, with a reducer sweep);
# 3. MoE decode split-K AUTO vs off (#7; E = 128 decode was 12 % slower at c3fccbc);
# 4. ncu of the skinny GEMM (M = 16, 8192 x 7168) and of cuBLASLt's kernel at the same shape;
# 5. GEMM+AR at M = 16 / 64 / 128 at defaults; PyTorch async-TP merged into the RS rows.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STEP_GREP='^\[0\] (ag_|gemm_|moe|layer|\{|  T=|    phases)|^gemm|fused on|keeps the SM path|FAIL|rror'
. "$REPO/tools/bench/bench_step.sh" # env, T0, LIMIT, step
echo "LIMIT $LIMIT s"
for v in new nodec old; do
  case $v in
    new) envs="MK_MOE_DECODE_TOKENS=64 MK_TP_GATHER_SM=1" ;;
    nodec) envs="MK_MOE_DECODE_TOKENS=0 MK_TP_GATHER_SM=1" ;;
    old) envs="MK_MOE_DECODE_TOKENS=0 MK_TP_GATHER_SM=0" ;;
  esac
  for preset in mixtral qwen3; do
    TAIL=14 step layer_${preset}_$v 45 env $envs mk-launch -n 4 -- mk-bench layer \
      --preset $preset --decode batch --batch 64 --context 4096 --tokens 1024 --warmup 5 --iters 20 \
      --json "$RES/layer_${preset}_$v.json"
  done
done
step gemm_rs_ov 45 mk-launch -n 4 -- mk-bench gemm_rs --m 2048 --m 8192 --m 16384 --ce-overlap-ab \
  --json "$RES/gemm_rs_ov_h200x4.json"
step gemm_ar_ov 35 mk-launch -n 4 -- mk-bench gemm_ar --m 1024 --m 4096 --ce-overlap-ab --json "$RES/gemm_ar_ov_h200x4.json"
for r in 4 16; do
  step rs_ov_red$r 25 env MK_FUSED_CE_REDUCERS=$r mk-launch -n 4 -- mk-bench gemm_rs --m 8192 --ce-overlap-ab
done
S="--shape 16,4096,8,2,14336 --shape 128,4096,8,2,14336 --shape 16,2048,128,8,768 --shape 128,2048,128,8,768 --shape 16,7168,256,8,2048 --shape 128,7168,256,8,2048"
TAIL=30 step moe_dec_auto 40 mk-launch -n 4 -- mk-bench moe --breakdown $S --path fused --json "$RES/moe_dec_auto.json"
TAIL=30 step moe_dec_k0 40 mk-launch -n 4 -- mk-bench moe --breakdown $S --path fused --split-k 0 --json "$RES/moe_dec_k0.json"
NCU=/usr/local/cuda/bin/ncu
TAIL=60 STEP_GREP='.' step ncu_skinny 60 $NCU -k regex:skinny --launch-skip 10 --launch-count 1 --set full \
  mk-bench gemm --shape 16x8192x7168 --path fused --warmup 5 --iters 10
TAIL=60 STEP_GREP='.' step ncu_cublas 60 $NCU -k regex:'sm90|gemm|cutlass|xmma' --launch-skip 10 --launch-count 1 --set full \
  mk-bench gemm --shape 16x8192x7168 --path unfused --warmup 5 --iters 10
step ar_small 30 mk-launch -n 4 -- mk-bench gemm_ar --m 16 --m 64 --m 128 --warmup 50 --iters 200 --json "$RES/ar_small.json"
step torch_gemm_rs 40 mk-launch -n 4 -- python3 "$REPO/tools/bench/torch_async_tp.py" --op gemm_rs \
  --merge "$RES/gemm_rs_ov_h200x4.json"
echo "end at $(( $(date +%s) - T0 )) s"
