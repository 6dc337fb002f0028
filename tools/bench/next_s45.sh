#!/usr/bin/env bash
# next_s45.sh — prepared in session 44 for a session lent one GPU (docs/perf/NOTES.md, attention/flash_fwd
# "Session 44", Next). Run through tools/gpu-check.sh from the repository root, after applying the debug patch to the
# device's copy of the tree (never merged):
#   git apply tools/bench/dbg44.patch && MKERNEL_BUILD_COMMIT=<sha> MK_CALL_LIMIT=300 \
#     CTEST_ARGS="-R ^test_flash_attn(_ws0|_ws1)?$" CTEST_TIMEOUT=60 CTEST_WALL=90 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s45.sh a'
# The debug patches live in the trees they were made for and were removed after: dbg44.patch in 76e0533's (part a),
# dbg45.patch in fb0edfa's (part c; git show fb0edfa:tools/bench/dbg45.patch). tools/bench/ws_stamps.patch holds the
# same stamps (kinds 0-3) for the tree after this session.
# part a (1 GPU, nvidia-h200): why the persistent flash kernel's tile loop runs ~7 % slower than one CTA an item
#   (session 44: same SASS, same instructions, L2 as local; more MIO-throttle, short-scoreboard and named-barrier
#   stalls). dbg44.patch stamps (clock64) each consumer warpgroup's key tiles in one CTA: K_t landed, its turn to
#   issue S_t, S_t's softmax done; tools/bench/ws_stamps.py reduces them. S 16384 non-causal (128 tiles an item),
#   one CTA an item (0) and persistent (1), twice each; then the same timed without stamps (the patch's cost).
#   Prediction, if the two warpgroups' softmax phases overlap more in the persistent kernel: there, warpgroup 1's
#   turn lags warpgroup 0's by further from half a period than in 0, and the turn waits are longer; the period ~7 %
#   longer. If the lag and the waits are the same in both, the loss is elsewhere (the producer, or the SM itself).
# part b (1 GPU, nvidia-h200): the softmax with ex2.approx.ftz and short chains (kernels/attention/flash_fwd.cuh,
#   softmax_rows) against 76e0533's (exp2f: a range test and two multiplies around every MUFU.EX2; each row's max and
#   sum one serial chain). Part a's stamps: one CTA an item, the tile period is 3249 cycles where the two
#   warpgroups' S and P V need 2048 of tensor pipe, and 2953 of it pass between a warpgroup's turn and its softmax's
#   end. SASS of the D 128 consumers' loop: ~788 instructions a warp for an unmasked tile, now ~586 (-26 %). This
#   build and 76e0533's (old_build; the tree in .carry/old-76e0533, carried) in turns, twice: B 1, hq 32, hkv 8,
#   d 128, S 2048 / 8192 / 16384, causal and not; the TP = 2 shape (hq 16, hkv 2, 8192 causal); d 64 at 8192; then
#   cuDNN (sdpa_ref.py) on the same shapes, and the new build with MK_ATTN_WS_PERSISTENT=0 and 1.
#   Prediction: the period 3249 -> 2700-2900 cycles; S >= 8192 non-causal -8 to -15 %, causal -5 to -12 %,
#   S 2048 -5 to -10 %; d 64 a smaller gain (half the tensor work a tile, the same softmax: more of the period is
#   softmax, so rather more, -10 to -20 %).
#   MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_(flash_attn(_ws0|_ws1)?|attn_merge|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1|\
#     model_gpu|model_gpu_prefill|model_gpu_fused_1)$" CTEST_TIMEOUT=200 CTEST_WALL=240 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s45.sh b'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
if [ "$PART" = a ]; then
  REPO=$(cd ../.. && pwd)
  STEP_GREP='^attn_prefill fused +b=|FAIL|rror'
  for r in 1 2; do
    for p in 0 1; do
      TAIL=2 step "stamps_p${p}_$r" 60 env MK_ATTN_WS_PERSISTENT=$p MK_WS_STAMPS="$RES/stamps_p${p}_$r.txt" \
        mk-bench attn --mode prefill --seq 16384 --causal 0 --warmup 2 --iters 5
    done
  done
  python3 "$REPO/tools/bench/ws_stamps.py" "$RES"/stamps_p*.txt --item 128 | tee "$RES/ws_stamps.txt" | head -60
  for r in 1 2; do for p in 0 1; do
    TAIL=2 step "nostamp_p${p}_$r" 60 env MK_ATTN_WS_PERSISTENT=$p mk-bench attn --mode prefill --seq 16384 --causal 0
  done; done
fi
if [ "$PART" = b ]; then
  REPO=$(cd ../.. && pwd)
  STEP_GREP='^attn_prefill fused|torch_sdpa|FAIL|rror'
  OLD_TARGETS=mk-bench old_build 76e0533
  attn_run() { # WHICH R BINDIR
    TAIL=8 step "attn_$1_$2" 150 "$3/mk-bench" attn --mode prefill --seq 2048,8192,16384 --path fused \
      --json "$RES/attn_$1_$2.json"
    TAIL=2 step "attn_tp2_$1_$2" 40 "$3/mk-bench" attn --mode prefill --seq 8192 --hq 16 --hkv 2 --causal 1 \
      --path fused --json "$RES/attn_tp2_$1_$2.json"
    TAIL=2 step "attn_d64_$1_$2" 40 "$3/mk-bench" attn --mode prefill --seq 8192 --d 64 --path fused \
      --json "$RES/attn_d64_$1_$2.json"
  }
  ab_turns attn_run
  TAIL=8 step sdpa_cudnn 90 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 2048,8192,16384 --backend cudnn \
    --merge "$RES/attn_new_2.json"
  TAIL=2 step sdpa_cudnn_tp2 40 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 8192 --hq 16 --hkv 2 --causal 1 \
    --backend cudnn --merge "$RES/attn_tp2_new_2.json"
  for p in 0 1; do
    TAIL=8 step "attn_p$p" 120 env MK_ATTN_WS_PERSISTENT=$p mk-bench attn --mode prefill --seq 2048,8192,16384 \
      --path fused --json "$RES/attn_p$p.json"
  done
fi
# part c (1 GPU, nvidia-h200), after applying tools/bench/dbg45.patch (never merged; dbg44's stamps plus kind 3, S_t
#   in registers, and MK_DBG_SM80=V choosing the mma.sync kernel's softmax: 0 this tree's, 1 76e0533's, 2 exp2f in
#   this tree's chains, 3 ex2.approx with one chain a row):
#   git apply tools/bench/dbg45.patch && MKERNEL_BUILD_COMMIT=<sha> MK_CALL_LIMIT=400 \
#     CTEST_ARGS="-R ^test_flash_attn$" CTEST_TIMEOUT=60 CTEST_WALL=90 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s45.sh c'
#   (1) Part b: the new softmax gained 3-4 % at S >= 8192 (D 128) where -8 to -15 % was predicted from its 26 % fewer
#   instructions. Where do a warpgroup's 2953 cycles from its turn to its softmax's end go: waiting for S_t (the
#   tensor pipe busy with the other warpgroup's S and P V) or the softmax itself? Prediction: turn to S in registers
#   ~2000 of them (S_t queued behind the other warpgroup's P V(t-1) and its own), the softmax ~500-700.
#   (2) Part b: the mma.sync kernel at D 64 got 19-20 % slower (8192: 3.317 against 2.767 ms non-causal; 163 -> 132
#   registers), level at D 128. Which of the two changes: the 4 variants in turns at 8192, D 64 twice, D 128 once.
if [ "$PART" = c ]; then
  REPO=$(cd ../.. && pwd)
  STEP_GREP='^attn_prefill fused_mma|^attn_prefill fused +b|FAIL|rror'
  for r in 1 2; do
    TAIL=1 step "stamps_c_p0_$r" 60 env MK_ATTN_WS_PERSISTENT=0 MK_WS_STAMPS="$RES/stamps_c_p0_$r.txt" \
      mk-bench attn --mode prefill --seq 16384 --causal 0 --path fused --warmup 2 --iters 5
  done
  TAIL=1 step "stamps_c_p1_1" 60 env MK_ATTN_WS_PERSISTENT=1 MK_WS_STAMPS="$RES/stamps_c_p1_1.txt" \
    mk-bench attn --mode prefill --seq 16384 --causal 0 --path fused --warmup 2 --iters 5
  python3 "$REPO/tools/bench/ws_stamps.py" "$RES"/stamps_c_p*.txt > "$RES/ws_stamps_c.txt" 2>&1
  cat "$RES/ws_stamps_c.txt"
  for r in 1 2; do for v in 0 1 2 3; do for d in 64 128; do
    [ "$d" = 128 ] && [ "$r" = 2 ] && continue
    TAIL=4 step "sm80_v${v}_d${d}_$r" 60 env MK_DBG_SM80=$v mk-bench attn --mode prefill --seq 8192 --d $d --path fused \
      --json "$RES/sm80_v${v}_d${d}_$r.json"
  done; done; done
fi
# part d (1 GPU, nvidia-h200): the tree after part c (the mma.sync kernel's softmax back on exp2f, in the new chains:
#   part c's variant 2, 128 registers at D 64, two CTAs an SM). Tests, then
#   (1) mk-bench attn at D 128 (S 2048 / 8192 / 16384) and D 64 (8192). Prediction: fused_mma at D 64 2.46 / 1.37 ms
#   (non-causal / causal; part c's variant 2), against 2.77 / 1.48 at 76e0533; D 128 and the other kernels as in part b.
#   (2) The persistent kernel (1) against one CTA an item (0) with the new softmax, in turns, twice: S 2048 / 4096 /
#   8192 both masks, the TP = 2 shape and Qwen3's (hq 32, hkv 4) at 8192 causal. Part b's single runs had 1 ahead at
#   8192 causal (0.874 against 0.906 ms) and 2048 non-causal (0.1223 against 0.1255), where the default (-1) takes 0.
#   MK_CALL_LIMIT=520 CTEST_ARGS="-R ^test_(flash_attn(_ws0|_ws1)?|attn_merge|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1|\
#     model_gpu|model_gpu_prefill|model_gpu_fused_1)$" CTEST_TIMEOUT=200 CTEST_WALL=220 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s45.sh d'
if [ "$PART" = d ]; then
  STEP_GREP='^attn_prefill fused|FAIL|rror'
  TAIL=9 step attn_d128 150 mk-bench attn --mode prefill --seq 2048,8192,16384 --json "$RES/attn_d128.json"
  TAIL=6 step attn_d64 60 mk-bench attn --mode prefill --seq 8192 --d 64 --json "$RES/attn_d64.json"
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  attn_pers_turns pers 2048,4096,8192 0 1
fi
# part e (1 GPU, nvidia-h200): the default persistent for causal calls of at most 8192 keys (was 4096; part d). The
#   tests again, then the layer's prefill attention shapes under TP = 4 (8192 tokens, causal; Mixtral hq 8, hkv 2;
#   Qwen3 hq 8, hkv 1) and TP = 2 (hq 16, hkv 2), at the default, 0 and 1 in turns, twice, and cuDNN on them.
#   Prediction: the default equals 1 there, 1 ahead of 0 by 5-12 % (fewer items than SMs' rounds: a CTA's start and
#   end weigh more).
#   MK_CALL_LIMIT=420 CTEST_ARGS="-R ^test_(flash_attn(_ws0|_ws1)?|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1|\
#     model_gpu|model_gpu_prefill|model_gpu_fused_1)$" CTEST_TIMEOUT=200 CTEST_WALL=220 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s45.sh e'
if [ "$PART" = e ]; then
  REPO=$(cd ../.. && pwd)
  STEP_GREP='^attn_prefill fused +b|torch_sdpa_cudnn \{|FAIL|rror'
  for r in 1 2; do for p in -1 0 1; do for h in "8 2" "8 1" "16 2"; do
    set -- $h
    TAIL=1 step "tp_h$1_$2_p${p}_$r" 30 env MK_ATTN_WS_PERSISTENT=$p mk-bench attn --mode prefill --seq 8192 --hq $1 \
      --hkv $2 --causal 1 --json "$RES/tp_h$1_$2_p${p}_$r.json"
  done; done; done
  for h in "8 2" "8 1" "16 2"; do
    set -- $h
    TAIL=1 step "cudnn_h$1_$2" 40 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 8192 --hq $1 --hkv $2 --causal 1 \
      --backend cudnn --merge "$RES/tp_h$1_$2_p-1_2.json"
  done
fi
# part f (1 GPU, nvidia-h200; 2692572's tree only: the mode was removed after the run, NOTES attention/flash_fwd
#   session 45, item 4): P through shared memory (MK_ATTN_WS_PSMEM=1, flash_fwd_ws.cuh kPS) against P in
#   registers (0), in turns, twice. Part c: the softmax stretch (S_t in registers to its end) is 1270-1835 cycles of a
#   2983-cycle period, most of it behind the warpgroup's own P V_{t-1}, because ptxas waits for that P V among the
#   exponentials to convert P early. With P stored to the other buffer before that wait, the softmax overlaps its
#   P V. Costs: P V reads A from shared memory (+16 KB a tile and warpgroup, 94 B a cycle while a warpgroup's GEMMs
#   run, under 128), and 8 stmatrix.x4 a warp a tile. Prediction: the period 2983 -> 2500-2700 cycles, S >= 8192
#   -5 to -12 %, the short persistent calls less (-2 to -6 %).
#   MK_CALL_LIMIT=230 CTEST_ARGS="-R ^test_flash_attn(_ws0|_ws1|_ps0|_ps1)?$" CTEST_TIMEOUT=60 CTEST_WALL=60 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s45.sh f'
if [ "$PART" = f ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  for r in 1 2; do for v in 0 1; do
    TAIL=6 step "ps${v}_$r" 40 env MK_ATTN_WS_PSMEM=$v mk-bench attn --mode prefill --seq 2048,8192,16384 \
      --json "$RES/ps${v}_$r.json"
    for h in "8 2" "16 2"; do
      set -- $h
      TAIL=1 step "ps${v}_h$1_$2_$r" 20 env MK_ATTN_WS_PSMEM=$v mk-bench attn --mode prefill --seq 8192 --hq $1 \
        --hkv $2 --causal 1 --json "$RES/ps${v}_h$1_$2_$r.json"
    done
    TAIL=2 step "ps${v}_d64_$r" 20 env MK_ATTN_WS_PSMEM=$v mk-bench attn --mode prefill --seq 8192 --d 64 \
      --json "$RES/ps${v}_d64_$r.json"
  done; done
fi
