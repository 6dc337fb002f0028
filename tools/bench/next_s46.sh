#!/usr/bin/env bash
# next_s46.sh — session 46, one GPU (nvidia-h200); docs/perf/NOTES.md, attention/flash_fwd "Session 46". Run through
# tools/gpu-check.sh from the repository root:
#   MKERNEL_BUILD_COMMIT=<sha> MK_CALL_LIMIT=560 CTEST_ARGS="-R ^test_(flash_attn(_ws0|_ws1|_rs0)?|ring_attn_1(_ws0)?|\
#     ring_attn_[24]_gpu1|model_gpu_prefill)$" CTEST_TIMEOUT=200 CTEST_WALL=240 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s46.sh a'
# with b38506f's tree in .carry/old-b38506f (git archive b38506f | tar x -C .carry/old-b38506f --exclude=docs; carried).
# part a: the warp-specialised flash kernel with
#   pin   the softmax's exponentials kept before the wait for the warpgroup's own P V_{t-1} (ws_pin_softmax;
#         ptxas had put that wait after the 7th of 64, so most of the softmax waited for the tensor pipe), with the
#         exact running max (MK_ATTN_RESCALE=0);
#   lazy  the same with the lazy rescale (MK_ATTN_RESCALE=8, the default): a row keeps its max until a tile's exceeds
#         it by 2^8, and O's 64 multiplies a thread are skipped where no row of the warp moved;
#   old   b38506f's build;
#   in turns, twice: B 1, hq 32, hkv 8, d 128, S 2048 / 8192 / 16384 both masks; Mixtral's TP = 4 shape (hq 8, hkv 2,
#   8192 causal); d 64 at 8192 both masks. nvidia-smi samples the SM clock and the power every 50 ms throughout;
#   clock_steps.py gives each step's. Then the stamps (tools/bench/ws_stamps.patch on a copy of the tree) at S 16384
#   non-causal, one CTA an item, pin and lazy; then cuDNN on the same shapes.
#   Predictions: the tile period 2983 -> 2500-2750 cycles with pin (the softmax overlaps its own P V); time at
#   S >= 8192 -4 to -10 % against old, less than the cycles if the clock drops; lazy a further -1 to -3 % at
#   S >= 8192 (64 of ~586 instructions a warp and tile); d 64 more than d 128 (more of its period is softmax).
# part b (the tree after part a: the pin removed, the lazy rescale kept): part a's stamped build ran S 16384
#   non-causal at 6.42-6.75 ms where every unstamped build took 7.29-7.46, and its SASS has the pin's order (all 64
#   exponentials before the wait). The stamps runs took --warmup 2 --iters 5, the others 10 / 50. Which is it
#   (the stamped build did not build in this part: ws_stamps.patch did not apply to d3671c5's tree, and its steps
#   named /tmp/stb, not /tmp/stb/bin, since fixed; the iteration counts alone answered it):
#   (1) 16384 non-causal (one CTA an item) of this build, its stamped build (ws_stamps.patch) and b38506f's at
#   warmup / iters 2 / 5, 10 / 50 and 10 / 300, nvidia-smi sampling clocks and power every 20 ms;
#   (2) old (b38506f), lazy (MK_ATTN_RESCALE=8) and exact (=0) in turns, twice, part a's shapes.
#   Predictions: if the iterations: every build near 6.4-6.8 at 2 / 5 and 7.3-7.5 at 10 / 50 and beyond, and the clock
#   lower in the long runs. If the stamps' order: the stamped build ~6.5 at every count, the others ~7.4.
#   Lazy: 2048 non-causal -2 to -3 % against old (part a: 0.1216-0.1221 against 0.1248-0.1250), the rest level.
#   MK_CALL_LIMIT=570 CTEST_ARGS="-R ^test_(flash_attn(_ws0|_ws1|_rs0)?|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1|\
#     model_gpu_prefill)$" CTEST_TIMEOUT=200 CTEST_WALL=200 tools/gpu-check.sh -- 'bash ../../tools/bench/next_s46.sh b'
source "$(dirname "$0")/bench_step.sh"
PART=${1:-a}
REPO=$(cd ../.. && pwd)
MARKS=$RES/marks.txt
marked() { # NAME SECONDS COMMAND...: step, with its start and end in $MARKS for clock_steps.py
  local name=$1
  echo "start $name $(date '+%Y/%m/%d %H:%M:%S.%3N')" >> "$MARKS"
  step "$@"
  echo "end $name $(date '+%Y/%m/%d %H:%M:%S.%3N')" >> "$MARKS"
}
shapes() { # WHICH R BINDIR RESCALE: parts a and b's shapes with MK_ATTN_RESCALE (ignored by builds without it)
  TAIL=6 marked "attn_$1_$2" 60 env MK_ATTN_RESCALE=$4 "$3/mk-bench" attn --mode prefill --seq 2048,8192,16384 \
    --path fused --json "$RES/attn_$1_$2.json"
  TAIL=1 marked "tp4_$1_$2" 20 env MK_ATTN_RESCALE=$4 "$3/mk-bench" attn --mode prefill --seq 8192 --hq 8 --hkv 2 \
    --causal 1 --path fused --json "$RES/tp4_$1_$2.json"
  TAIL=2 marked "d64_$1_$2" 20 env MK_ATTN_RESCALE=$4 "$3/mk-bench" attn --mode prefill --seq 8192 --d 64 \
    --path fused --json "$RES/d64_$1_$2.json"
}
stamps_build() { # [PATCH...]: this tree with tools/bench/PATCH (default ws_stamps.patch; several, in order, as one
  # word), mk-bench only (STB_TARGETS: other targets, "all" for every one), into $STB (default /tmp/stb)
  local patch=${1:-ws_stamps.patch} q out=${STB:-/tmp/stb}
  rm -rf /tmp/stree "$out" && mkdir -p /tmp/stree &&
    (cd "$REPO" && tar cf - --exclude=./build-gpu --exclude=./.carry --exclude=./docs .) | tar xf - -C /tmp/stree &&
    (cd /tmp/stree && for q in $patch; do git apply "$REPO/tools/bench/$q" || exit 1; done) &&
    cmake -S /tmp/stree -B "$out" -G Ninja -DCMAKE_PREFIX_PATH=/tmp/mkprefix/usr > "$RES/stamps_configure.log" 2>&1 &&
    cmake --build "$out" -j "$(nproc)" --target ${STB_TARGETS:-mk-bench} > "$RES/stamps_build.log" 2>&1
  echo "stamps build ($patch) rc=$? at $(( $(date +%s) - T0 )) s"
}
stamped() { # NAME SEQ VAR=VALUE...: the stamped build (stamps_build) at SEQ keys, non-causal, one CTA an item, a
  # burst of 2 / 5, with the environment VAR=VALUE; the stamps into $RES/stamps_NAME.txt
  local name=$1 seq=$2; shift 2
  TAIL=1 marked "stamps_$name" 40 env MK_ATTN_WS_PERSISTENT=0 "$@" MK_WS_STAMPS="$RES/stamps_$name.txt" \
    /tmp/stb/bin/mk-bench attn --mode prefill --seq "$seq" --causal 0 --path fused --warmup 2 --iters 5
}
its() { # NAME SEQ CAUSAL VAR=VALUE...: the item-stamped build (stamps_build item_stamps.patch) at SEQ keys, a burst
  # of 2 / 5, with the environment VAR=VALUE; the stamps into $RES/its_NAME.txt
  local name=$1 seq=$2 causal=$3
  shift 3
  TAIL=1 marked "its_$name" 40 env "$@" MK_ITEM_STAMPS="$RES/its_$name.txt" /tmp/stb/bin/mk-bench attn \
    --mode prefill --seq "$seq" --causal "$causal" --path fused --warmup 2 --iters 5
}
attn_burst() { # NAME TAIL SEQS CAUSAL [D] VAR=VALUE...: mk-bench attn prefill, a burst of 2 / 5 at head dim D (default
  # 128) with the environment VAR=VALUE, JSON into $RES/NAME.json
  local name=$1 tail=$2 seqs=$3 causal=$4 d=128
  shift 4
  case "${1:-}" in *=*) ;; ?*) d=$1; shift ;; esac
  TAIL=$tail marked "$name" 40 env "$@" mk-bench attn --mode prefill --seq "$seqs" --causal "$causal" --d "$d" \
    --path fused --warmup 2 --iters 5 --json "$RES/$name.json"
}
if [ "$PART" = a ]; then
  STEP_GREP='^attn_prefill fused +b|torch_sdpa_cudnn \{|FAIL|rror'
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw --format=csv,noheader -lms 50 > "$RES/clocks.csv" 2>&1 &
  SMI=$!
  OLD_TARGETS=mk-bench old_build b38506f
  for r in 1 2; do
    shapes old $r "$OB" 8
    shapes pin $r "$BIN" 0
    shapes lazy $r "$BIN" 8
  done
  stamps_build
  for v in 0 8; do for r in 1 2; do stamped "rs${v}_$r" 16384 MK_ATTN_RESCALE=$v; done; done
  python3 "$REPO/tools/bench/ws_stamps.py" "$RES"/stamps_rs*.txt > "$RES/ws_stamps.txt" 2>&1
  cat "$RES/ws_stamps.txt"
  TAIL=8 marked sdpa_cudnn 60 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 2048,8192,16384 --backend cudnn \
    --merge "$RES/attn_lazy_2.json"
  TAIL=2 marked sdpa_cudnn_tp4 30 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 8192 --hq 8 --hkv 2 --causal 1 \
    --backend cudnn --merge "$RES/tp4_lazy_2.json"
  TAIL=4 marked sdpa_cudnn_d64 30 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 8192 --d 64 --backend cudnn \
    --merge "$RES/d64_lazy_2.json"
  kill "$SMI" 2>/dev/null
  python3 "$REPO/tools/bench/clock_steps.py" "$RES/clocks.csv" "$MARKS" | tee "$RES/clock_steps.txt"
fi
# part c ran at 94e3813 and hung in every 176-key call (the consumers asked for more registers than the CTA's pool
#   holds; NOTES session 46 item 4). The fix (24 / 240) is in main since session 47 (it was tools/bench/bn176.patch).
# part c (the tree after part b: the pin and the lazy rescale removed; the one-CTA-an-item kernel with 176-key tiles for
#   unsplit non-causal calls, MK_ATTN_WS_BN176=-1, FlashAttention-3's tile for d 128; consumers at 240 registers):
#   tests, then 176 (-1) against 128 (0) in turns, twice: non-causal S 2048 / 8192 / 16384 (d 128), d 64 at 8192;
#   then the same at 16384 in short bursts (--warmup 2 --iters 5: part b showed the first ~7 calls at the full clock,
#   6.39 against 7.35 ms sustained, the sustained ones at the 700 W cap with the clock down to ~1700 MHz).
#   Count, d 128: a tile is 2 x 64 x 176 x 128 x 4 = 11.5 MFLOP, 2816 tensor cycles, against 2048 for 128 keys; the
#   softmax a warp ~586 -> ~690 instructions (88 elements a thread, not 64; the O rescale, the reductions and the
#   barriers once a tile). Prediction: the period 2983 -> 3800-3950 cycles (tensor 69 -> 71-74 %); S >= 8192 -3 to
#   -6 % (sustained, with ~15 % fewer instructions a key also under the power cap), 2048 level to -4 % (12 tiles of 176
#   pad 3 % of the keys), d 64 -3 to -8 %. Also S 16384 causal (one CTA an item there) with 176 forced (1) against 128:
#   the diagonal tiles are masked work, 176-wide ones waste more of it (-2 to +3 %).
#   MK_CALL_LIMIT=300 CTEST_ARGS="-R ^test_flash_attn(_bn176|_bn128)?$" CTEST_TIMEOUT=100 CTEST_WALL=100 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s46.sh c'
if [ "$PART" = b ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  Q=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
  nvidia-smi --query-gpu=$Q --format=csv,noheader -c 1 > /dev/null 2>&1 || Q=timestamp,index,clocks.sm,power.draw
  nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 20 > "$RES/clocks.csv" 2>&1 &
  SMI=$!
  OLD_TARGETS=mk-bench old_build b38506f
  stamps_build
  for it in "2 5" "10 50" "10 300"; do
    set -- $it
    for b in "new $BIN" "stamped /tmp/stb/bin" "old $OB"; do
      set -- $it $b
      TAIL=1 marked "iters_$3_$2" 40 env MK_ATTN_WS_PERSISTENT=0 "$4/mk-bench" attn --mode prefill --seq 16384 \
        --causal 0 --path fused --warmup $1 --iters $2 --json "$RES/iters_$3_$2.json"
    done
  done
  for r in 1 2; do
    shapes old $r "$OB" 8
    shapes exact $r "$BIN" 0
    shapes lazy $r "$BIN" 8
  done
  kill "$SMI" 2>/dev/null
  python3 "$REPO/tools/bench/clock_steps.py" "$RES/clocks.csv" "$MARKS" | tee "$RES/clock_steps.txt"
fi
if [ "$PART" = c ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  Q=timestamp,index,clocks.sm,power.draw
  nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 20 > "$RES/clocks.csv" 2>&1 &
  SMI=$!
  for r in 1 2; do for v in -1 0; do
    TAIL=3 marked "bn${v}_$r" 60 env MK_ATTN_WS_BN176=$v mk-bench attn --mode prefill --seq 2048,8192,16384 \
      --causal 0 --path fused --json "$RES/bn${v}_$r.json"
    TAIL=1 marked "bn${v}_d64_$r" 30 env MK_ATTN_WS_BN176=$v mk-bench attn --mode prefill --seq 8192 --d 64 \
      --causal 0 --path fused --json "$RES/bn${v}_d64_$r.json"
  done; done
  for r in 1 2; do for v in 1 0; do # causal past 8192 keys runs one CTA an item: 176 forced against 128
    TAIL=1 marked "causal_bn${v}_$r" 30 env MK_ATTN_WS_BN176=$v mk-bench attn --mode prefill --seq 16384 --causal 1 \
      --path fused --json "$RES/causal_bn${v}_$r.json"
  done; done
  for r in 1 2; do for v in -1 0; do
    TAIL=1 marked "burst_bn${v}_$r" 30 env MK_ATTN_WS_BN176=$v mk-bench attn --mode prefill --seq 16384 --causal 0 \
      --path fused --warmup 2 --iters 5 --json "$RES/burst_bn${v}_$r.json"
  done; done
  kill "$SMI" 2>/dev/null
  python3 "$REPO/tools/bench/clock_steps.py" "$RES/clocks.csv" "$MARKS" | tee "$RES/clock_steps.txt"
fi
# part d (session 47, after part c in the same call): the stamps (ws_stamps.patch, 94e3813's, which applies to main +
#   bn176.patch) at S 16384 non-causal, one CTA an item, bursts of 2 / 5, 176 (1) against 128 (0), twice each.
#   Prediction: the period 2915-2983 -> 3800-3950 cycles a 176-key tile (2816 tensor cycles against 2048), i.e.
#   21.6-22.4 cycles a key against 22.8-23.3.
if [ "$PART" = d ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  stamps_build
  for r in 1 2; do for v in 1 0; do stamped "bn${v}_$r" 16384 MK_ATTN_WS_BN176=$v; done; done
  for v in 1 0; do
    python3 "$REPO/tools/bench/ws_stamps.py" "$RES"/stamps_bn${v}_*.txt > "$RES/ws_stamps_bn$v.txt" 2>&1
    echo "== bn$v"; cat "$RES/ws_stamps_bn$v.txt"
  done
fi
# part e (session 47; run 60719dc): 176-key tiles were -3.3 % cycles a key in the stamps' median period (3956-3975
#   against 2981-2989 a 128-key tile), yet +1 % in 16384 non-causal bursts and +26 % at 2048. The stamps show the last
#   tile at 16384 (16 valid keys of 176: the TMA box past the sequence's end) waiting ~8,000 cycles more for its K;
#   S 2048's last tile has 112 of 176. And the sustained 10 / 50 calls were 13-15 % slower than the bursts with
#   nvidia-smi's SM clock at 1980 MHz throughout (power.draw is a ~1 s average there). So:
#   (1) nvidia-smi's fields probed, then sampled every 10 ms (with the instantaneous power and the event reasons where
#   there); the per-call times (--samples) of 120 calls (no warm-up) at 16384 non-causal, 128 then 176, twice.
#   Prediction: the first ~7 calls ~6.5 ms, then ~7.4; if the SM clock stays at 1980 MHz there, the slowdown is not
#   the SM clock (the HBM clock, or throttling nvidia-smi's clocks.sm does not show; the reasons field may say).
#   (2) bursts (2 / 5), 128 (0) against 176 (1) in turns, twice, at S 2048, 2112 (12 x 176), 16384, 16800 (partial
#   tiles for both), 16896 (96 x 176 = 132 x 128: full tiles for both). Prediction, if the tile past the end is what
#   costs: 176 at 2048 no faster than at 2112, and 16896 at 176 -2 to -3 % against 128; 128 at 16800 slower per key
#   than at 16896 (its 132nd tile is partial).
#   (3) the stamps at 16800 and 16896 for both: the last tile's period against the median.
if [ "$PART" = e ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  nvidia-smi --help-query-gpu > "$RES/smi_fields.txt" 2>&1
  Q=timestamp,clocks.sm,clocks.mem,power.draw
  for f in power.draw.instant clocks_event_reasons.active clocks_throttle_reasons.active temperature.gpu \
    temperature.memory; do
    nvidia-smi --query-gpu=$Q,$f --format=csv,noheader -c 1 > /dev/null 2>&1 && Q=$Q,$f
  done
  echo "sampling: $Q" | tee "$RES/smi_query.txt"
  nvidia-smi --query-gpu=$Q --format=csv,noheader -lms 10 > "$RES/clocks_e.csv" 2>&1 &
  SMI=$!
  for r in 1 2; do for v in 0 1; do
    TAIL=1 marked "calls_bn${v}_$r" 40 env MK_ATTN_WS_BN176=$v mk-bench attn --mode prefill --seq 16384 --causal 0 \
      --path fused --warmup 0 --iters 120 --samples "$RES/calls_bn${v}_$r.csv" --json "$RES/calls_bn${v}_$r.json"
  done; done
  for r in 1 2; do for v in 0 1; do
    TAIL=5 marked "tails_bn${v}_$r" 60 env MK_ATTN_WS_BN176=$v mk-bench attn --mode prefill \
      --seq 2048,2112,16384,16800,16896 --causal 0 --path fused --warmup 2 --iters 5 --json "$RES/tails_bn${v}_$r.json"
  done; done
  kill "$SMI" 2>/dev/null
  stamps_build
  for s in 16800 16896; do for v in 0 1; do
    stamped "${s}_bn$v" $s MK_ATTN_WS_BN176=$v
    python3 "$REPO/tools/bench/ws_stamps.py" "$RES/stamps_${s}_bn$v.txt" 2>&1 | tee "$RES/ws_stamps_${s}_bn$v.txt"
  done; done
fi
# part f (session 47; run acdaba8): a key tile whose TMA box runs past the sequence's end lands 4,100 (128 keys) to
#   7,200 (176) cycles late (stamps at 16800 against 16896), and 128-key tiles took 0.188 ms at 2112 keys against
#   0.125 at 2048. This tree starts that tile BN keys before the end instead (ws_tile_start; its keys before nb * BN
#   masked), in the flash and the ring kernels. In turns, twice: 03d5742's build (old), this one with 128-key tiles
#   (n128) and with 176 (n176):
#   (1) bursts (2 / 5) non-causal at 2048, 2112, 8000, 16384, 16800; d 64 at 8000; (2) causal bursts at 2112, 8000,
#   16800, old against n128; (3) sustained (10 / 50) non-causal 16384 and 16800.
#   Count: per item, the late tile is 4,100 / 7,200 cycles of ~50,000 at 2112 (17 tiles) and ~390,000 at 16800.
#   Prediction: n128 against old: 2112 non-causal -8 to -12 %, 8000 -2 to -3 %, 16800 -1 %, 2048 / 16384 level
#   (no partial tile); causal smaller (only the last query block's items reach the end). n176 at 2048 from 0.158 to
#   0.125-0.135, at 8000 and 16800 -2 to -4 % against n128.
#   OLD_TARGETS=mk-bench with .carry/old-03d5742 (git archive 03d5742 | tar x -C .carry/old-03d5742 --exclude=docs).
if [ "$PART" = f ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  OLD_TARGETS=mk-bench old_build 03d5742
  run3() { # NAME SECONDS ARGS...: old, n128, n176
    local name=$1 sec=$2; shift 2
    TAIL=6 marked "${name}_old" "$sec" "$OB/mk-bench" "$@" --json "$RES/${name}_old.json"
    TAIL=6 marked "${name}_n128" "$sec" env MK_ATTN_WS_BN176=0 mk-bench "$@" --json "$RES/${name}_n128.json"
    [ "$name" = "${name#causal}" ] &&
      TAIL=6 marked "${name}_n176" "$sec" env MK_ATTN_WS_BN176=1 mk-bench "$@" --json "$RES/${name}_n176.json"
  }
  for r in 1 2; do
    run3 "burst_$r" 60 attn --mode prefill --seq 2048,2112,8000,16384,16800 --causal 0 --path fused --warmup 2 --iters 5
    run3 "d64_$r" 20 attn --mode prefill --seq 8000 --d 64 --causal 0 --path fused --warmup 2 --iters 5
    run3 "causal_$r" 40 attn --mode prefill --seq 2112,8000,16800 --causal 1 --path fused --warmup 2 --iters 5
  done
  run3 sustained 60 attn --mode prefill --seq 16384,16800 --causal 0 --path fused
fi
# part g (session 47, main after the tail-tile start and 176-key tiles by default; run 025e06b): the flash kernel
#   beside cuDNN (PyTorch SDPA) in one run, sustained (10 / 50) and in bursts (2 / 5): hq 32, hkv 8, d 128 at 2048,
#   8192, 16384, 16800, both masks; Mixtral's TP = 4 causal shape; d 64 at 8192. Prediction (run 025e06b against
#   session 46's cuDNN): 16384 non-causal sustained level with cuDNN (7.14 against 7.11), 8192 non-causal -5 to -10 %
#   faster than cuDNN, 2048 non-causal still ~+10 % slower (0.122 against 0.107), causal faster at every length.
if [ "$PART" = g ]; then
  STEP_GREP='^attn_prefill fused +b|torch_sdpa_cudnn \{|FAIL|rror'
  for w in "10 50 sus" "2 5 burst"; do
    set -- $w
    TAIL=8 marked "main_$3" 90 mk-bench attn --mode prefill --seq 2048,8192,16384,16800 --path fused --warmup $1 \
      --iters $2 --json "$RES/main_$3.json"
    TAIL=8 marked "cudnn_$3" 90 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 2048,8192,16384,16800 --backend cudnn \
      --warmup $1 --iters $2 --merge "$RES/main_$3.json"
  done
  TAIL=1 marked tp4 20 mk-bench attn --mode prefill --seq 8192 --hq 8 --hkv 2 --causal 1 --path fused \
    --json "$RES/tp4.json"
  TAIL=2 marked tp4_cudnn 30 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 8192 --hq 8 --hkv 2 --causal 1 \
    --backend cudnn --merge "$RES/tp4.json"
  TAIL=2 marked d64 20 mk-bench attn --mode prefill --seq 8192 --d 64 --path fused --json "$RES/d64.json"
  TAIL=4 marked d64_cudnn 30 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 8192 --d 64 --backend cudnn \
    --merge "$RES/d64.json"
fi
# part h (for session 48; one GPU): 176-key tiles in the persistent kernel. git apply tools/bench/persist176.patch
#   first (MK_ATTN_WS_PERSISTENT=1 with 176-key tiles where the one-CTA kernel takes them, or everywhere with
#   MK_ATTN_WS_BN176=1; compile-checked: d 128 spills 220 / 356 bytes, 7 local loads or stores a tile in the
#   consumers' loop; d 64 80 / 104, none in the loop). Tests: CTEST_ARGS="-R ^test_flash_attn(_ws0|_ws1|_bn176)?$".
#   Main at 2048 non-causal is 9-14 % behind cuDNN (run 655a0d6): 512 items make 3.9 waves, and each CTA's start
#   (Q, K0) and end (the last P V, the stores) are exposed. In turns, twice, bursts and sustained: one CTA an item
#   (p0) against persistent (p1), both with 176-key tiles, at 2048, 2112, 4096, 8192 non-causal; then causal at 2048
#   and 8192, persistent, 176 (MK_ATTN_WS_BN176=1) against 128 (0).
#   Prediction: p1 -2 to -5 % at 2048 and 2112 (session 45 measured -2 % with 128-key tiles), level at 4096, +2 to
#   +5 % at 8192 (its items read every KV head at once); causal 176 level to +3 % (more masked work on the diagonal).
if [ "$PART" = h ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  for r in 1 2; do for v in 0 1; do
    TAIL=4 marked "p${v}_burst_$r" 40 env MK_ATTN_WS_PERSISTENT=$v mk-bench attn --mode prefill \
      --seq 2048,2112,4096,8192 --causal 0 --path fused --warmup 2 --iters 5 --json "$RES/p${v}_burst_$r.json"
    TAIL=4 marked "p${v}_sus_$r" 40 env MK_ATTN_WS_PERSISTENT=$v mk-bench attn --mode prefill \
      --seq 2048,2112,4096,8192 --causal 0 --path fused --json "$RES/p${v}_sus_$r.json"
  done; done
  for r in 1 2; do for v in 1 0; do
    TAIL=2 marked "causal_bn${v}_$r" 30 env MK_ATTN_WS_BN176=$v mk-bench attn --mode prefill --seq 2048,8192 \
      --causal 1 --path fused --json "$RES/causal_bn${v}_$r.json"
  done; done
fi
# part i (session 48, after part h in the same call; one GPU): where 2048 non-causal loses against cuDNN (0.1233
#   against 0.1081 ms in bursts, run 655a0d6). At the steady tile rate of 16384 (6.33 ms for 32 waves of 93 tiles: ~2.1
#   us a 176-key tile) its 4 waves of 12 tiles would take ~0.10 ms: ~5 us an item are lost at its start or end. The
#   item stamps (tools/bench/item_stamps.patch: clock64 and globaltimer at each item's start, Q waited, last P V, stores,
#   CTA exit, by SM) of one call, bursts of 2 / 5: 2048 non-causal one CTA an item (p0) and persistent (p1), 16384 p0,
#   2048 causal p1 (128-key tiles); item_stamps.py gives each phase's median.
#   Prediction: p0 at 2048: CTA exit -> next CTA's Q waited 2,000-4,000 cycles (launch, barrier init, Q and K0 from
#   L2) and the last P V -> stores ~1,000, the tile loop ~4,000 cycles a tile as at 16384; p1 hides the Q wait but not
#   the tile loop's fill and drain.
if [ "$PART" = i ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  stamps_build item_stamps.patch
  its p0_2048 2048 0 MK_ATTN_WS_PERSISTENT=0
  its p1_2048 2048 0 MK_ATTN_WS_PERSISTENT=1
  its p0_16384 16384 0 MK_ATTN_WS_PERSISTENT=0
  its c_p1_2048 2048 1 MK_ATTN_WS_PERSISTENT=1
  its p0_2048b 2048 0 MK_ATTN_WS_PERSISTENT=0
  python3 "$REPO/tools/bench/item_stamps.py" "$RES"/its_*.txt | tee "$RES/item_stamps.txt"
fi
# part j (session 49; one GPU): the epilogue through shared memory (MK_ATTN_WS_TMA_O=1, the default: each consumer
#   writes its 64 rows of O / l as bf16 into SW128 boxes of a staging tile, the Q tile one CTA an item or a tile after
#   the barriers persistent, and one thread stores them by TMA) against the direct 4-byte stores (=0). Part i (run
#   f80207d) measured the last P V -> stores done at 2707 cycles (consumer 0) and a further 1483 for consumer 1 at 2048
#   non-causal one CTA an item: ~4,200 cycles an item where ~1,000 was predicted (each warp-wide 4-byte store writes
#   16 bytes into each of 8 rows: 8 lines a store, 256 stores a CTA). Tests: CTEST_ARGS="-R ^test_(flash_attn(_ws0|\
#   _ws1|_bn176|_bn128|_tma_o0)?|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1|model_gpu_prefill)$".
#   Count: O is 32 KB a CTA; the staging writes are 256 conflict-free 128-byte wavefronts a CTA (~300 cycles), the
#   direct stores ~2,048 line accesses. Prediction: last P V -> stores done (consumer 0) 2707 -> 400-800 cycles,
#   consumer 1's further 1483 -> 600-1000; per item ~3,000 cycles of ~55,000 at 2048 non-causal, so 2048 non-causal
#   -3.5 to -6 % (0.1233 -> 0.116-0.119 ms in bursts), 2112 -3 to -5 %, 4096 -2 to -3 %, 8192 -1 %, 16384 level to
#   -1 %; persistent causal 2048 (128-key tiles, ~8.5 tiles an item) -4 to -8 %, 8192 causal -1 to -2 %.
#   In turns, twice, bursts (2 / 5) and sustained (10 / 50); then the item stamps (item_stamps.patch, regenerated
#   for this tree) at 2048 non-causal one CTA an item and causal persistent, both epilogues; then cuDNN at 2048 and
#   8192 in bursts beside this build's.
#   Run 64a578d measured nothing of the staging: its launcher took it only without cu_seqlens, and mk-bench (like the
#   model) passes them for one sequence; every o0 / o1 pair was level. ed2c056 takes it in varlen calls too, per
#   consumer where its 64 rows stay inside their sequence or the sequence is the last (ws_o_by_tma).
#   Run 1e34e0f: -2.9 % at 2048 non-causal, -6.3 % causal 2048, but the staged epilogue took 2,020 cycles, not 400-800:
#   its proxy fence compiles to MEMBAR.ALL.CTA, which waits for the LSE's global stores just before it (and, in
#   consumer 0's stamping thread, for the stamp). The next tree stores the LSE after the TMA store is issued, and the
#   stamp patch keeps the last-P-V stamp in a register until the stores are done. Prediction: 2,020 -> 900-1,300
#   cycles (an L2 round trip less), 2048 non-causal a further -1 to -2 %.
if [ "$PART" = j ]; then
  STEP_GREP='^attn_prefill fused +b|torch_sdpa_cudnn \{|FAIL|rror'
  for r in 1 2; do for v in 0 1; do
    attn_burst "nc_burst_o${v}_$r" 5 2048,2112,4096,8192,16384 0 MK_ATTN_WS_TMA_O=$v
    attn_burst "c_burst_o${v}_$r" 3 2048,8192,16384 1 MK_ATTN_WS_TMA_O=$v
    TAIL=6 marked "sus_o${v}_$r" 60 env MK_ATTN_WS_TMA_O=$v mk-bench attn --mode prefill --seq 2048,8192,16384 \
      --path fused --json "$RES/sus_o${v}_$r.json"
    TAIL=2 marked "d64_o${v}_$r" 20 env MK_ATTN_WS_TMA_O=$v mk-bench attn --mode prefill --seq 8192 --d 64 \
      --path fused --warmup 2 --iters 5 --json "$RES/d64_o${v}_$r.json"
    TAIL=1 marked "tp4_o${v}_$r" 20 env MK_ATTN_WS_TMA_O=$v mk-bench attn --mode prefill --seq 8192 --hq 8 --hkv 2 \
      --causal 1 --path fused --warmup 2 --iters 5 --json "$RES/tp4_o${v}_$r.json"
  done; done
  stamps_build item_stamps.patch
  for v in 0 1; do
    its "p0_2048_o$v" 2048 0 MK_ATTN_WS_PERSISTENT=0 MK_ATTN_WS_TMA_O=$v
    its "c_p1_2048_o$v" 2048 1 MK_ATTN_WS_PERSISTENT=1 MK_ATTN_WS_TMA_O=$v
  done
  python3 "$REPO/tools/bench/item_stamps.py" "$RES"/its_*.txt | tee "$RES/item_stamps.txt"
  TAIL=4 marked cudnn_burst 60 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 2048,8192 --backend cudnn \
    --warmup 2 --iters 5 --merge "$RES/nc_burst_o1_2.json"
  TAIL=6 marked cudnn_sus 60 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 2048,8192,16384 --backend cudnn \
    --merge "$RES/sus_o1_2.json"
fi
# part k (session 49, after part j; one GPU): the prefetch of a later CTA's Q into L2 (MK_ATTN_WS_Q_PREFETCH=1, the
#   default: one CTA an item in a one-sequence unsplit call, the producer prefetches the Q tile of the CTA an SM count
#   after its own, ws_prefetch_later_q) against none (=0), the TMA store of O on in both. Part j (run 4741ae7) at 2048
#   non-causal: ~5,600 cycles from one CTA's stores to the next one's Q waited on the same SM, of which the Q load
#   took ~2,900 from the producer's issue (32 KB, from HBM: Q is read once). Count: from L2 a 32 KB box takes ~500
#   cycles at ~64 B a cycle plus ~600-800 latency. Prediction: producer Q issued -> Q waited 2,900 -> 1,000-1,500
#   cycles in the waves after the first; 2048 non-causal -2 to -4 % (0.1208 -> 0.116-0.118 ms), 2112 likewise, 4096
#   -1 %, 8192 and up level; causal 16384 (one CTA an item, 128-key tiles) level; persistent calls unchanged.
#   Tests: CTEST_ARGS="-R ^test_flash_attn(_ws0|_bn176|_tma_o0)?$".
if [ "$PART" = k ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  for r in 1 2; do for v in 0 1; do
    attn_burst "nc_burst_pf${v}_$r" 5 2048,2112,4096,8192,16384 0 MK_ATTN_WS_Q_PREFETCH=$v
    attn_burst "c_burst_pf${v}_$r" 3 2048,8192,16384 1 MK_ATTN_WS_Q_PREFETCH=$v
    attn_burst "d64_pf${v}_$r" 2 2048,8192 0 64 MK_ATTN_WS_Q_PREFETCH=$v
  done; done
  stamps_build item_stamps.patch
  for v in 0 1; do its "p0_2048_pf$v" 2048 0 MK_ATTN_WS_PERSISTENT=0 MK_ATTN_WS_Q_PREFETCH=$v; done
  python3 "$REPO/tools/bench/item_stamps.py" "$RES"/its_*.txt | tee "$RES/item_stamps.txt"
fi
# part l (for session 50; one GPU), two things:
#   (1) Session 49 item 5, in turns: this build against 4741ae7's. Set up the old tree first:
#       git archive 4741ae7 | tar x -C .carry/old-4741ae7 --exclude=docs (carried).
#       In 4741ae7 -> fb3e96c, nothing in the consumers' source changed, yet the persistent kernel's tile loop went
#       from 1071 to 974 SASS instructions. Bursts: non-causal 2048-16384, causal 2048-16384, d 64 8192.
#   (2) the item stamps, with the epilogue's and K0's stamps (item_stamps.patch, fields 11-14), at 2048 non-causal
#       one CTA an item and at 2048 causal persistent.
#   Predictions:
#   (1) if the build difference is real: causal 2048 and 8192 -4 to -5 % against old, 2048 non-causal +1 to +2 %,
#       16384 non-causal -1 %; else everything level within 0.5 %.
#   (2) the staged epilogue's ~1,900-2,000 cycles: the first barrier 100-300 after the last P V; the shared stores
#       600-900 (issue shared with consumer 1's softmax); the fence and the second barrier 300-600; the TMA issue < 100.
#       K0 in within 300 cycles of Q waited (the first S needs both, and they arrive together behind the same queue).
#   MKERNEL_BUILD_COMMIT=<sha> MK_CALL_LIMIT=500 CTEST_ARGS="-R ^test_flash_attn(_ws0|_ws1|_bn176|_tma_o0)?$" \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s46.sh l'
l_shapes() { # WHICH R BINDIR: part l's bursts with BINDIR's mk-bench
  PATH=$3:$PATH attn_burst "l_nc_$1_$2" 5 2048,2112,4096,8192,16384 0
  PATH=$3:$PATH attn_burst "l_c_$1_$2" 3 2048,8192,16384 1
  PATH=$3:$PATH attn_burst "l_d64_$1_$2" 2 8192 0 64
}
if [ "$PART" = l ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror'
  OLD_TARGETS=mk-bench old_build 4741ae7
  ab_turns l_shapes
  stamps_build item_stamps.patch
  its l_p0_2048 2048 0 MK_ATTN_WS_PERSISTENT=0
  its l_c_p1_2048 2048 1 MK_ATTN_WS_PERSISTENT=1
  python3 "$REPO/tools/bench/item_stamps.py" "$RES"/its_l_*.txt | tee "$RES/item_stamps.txt"
fi
# part m (for session 50 or later; one GPU): the mask as one compare an element (tools/bench/mask_range.patch:
#   mask_tile keeps the keys [lo, hi_r) of each row, hi_r = min(seqlen_k, row + off + 1), as one unsigned compare of a
#   compile-time offset; was three compares, one of them 64-bit, an element).
#   Only tiles with a tail or a diagonal run it: 1 of ~8.5 an item at 2048 causal, 1 of 12 at 2112 non-causal.
#   SASS (compile-checked): the tile loops drop 974 -> 798 instructions (persistent), 979 -> 799 (128-key), 1269 ->
#   1005 (176-key, whose loop now has 6 local loads, was 4), mostly the mask's own code.
#   The patched tree is built whole into /tmp/stb, and its tests run first. Then main against the patched build, in
#   turns, twice.
#   Prediction: causal 2048 -0.5 to -1.5 %, 4096 -0.5 %, 8192 and 16384 level; 2112 non-causal -0.5 to -1 %; tests pass.
m_shapes() { # WHICH R BINDIR
  PATH=$3:$PATH attn_burst "m_c_$1_$2" 4 2048,4096,8192,16384 1
  PATH=$3:$PATH attn_burst "m_nc_$1_$2" 2 2112,4096 0
  PATH=$3:$PATH attn_burst "m_d64_$1_$2" 1 8192 1 64
}
if [ "$PART" = m ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror|tests passed|Failed'
  STB_TARGETS="mk-bench mk-launch test_flash_attn test_ring_attn" stamps_build mask_range.patch
  TAIL=12 marked m_ctest 150 ctest --test-dir /tmp/stb --output-on-failure --timeout 120 \
    -R '^test_(flash_attn(_ws0|_ws1|_bn176|_bn128|_tma_o0)?|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1)$'
  for r in 1 2; do m_shapes main "$r" "$BIN"; m_shapes mask "$r" /tmp/stb/bin; done
fi
# part n (session 50: early_q.patch merged into main as MK_ATTN_WS_EARLY_Q, measured in part o; this part is
#   kept for the record and no longer runs): the first item's Q and K0 issued by thread 0 before the CTA's barrier
#   (tools/bench/early_q.patch: ws_issue_first, MK_ATTN_WS_EARLY_Q, default 1 in the patched tree). At 2048 keys, one
#   CTA an item, the producer issued Q ~1,100 cycles after the CTA's entry plus ~400 after the consumers' start (barrier
#   init, the CTA barrier, setmaxnreg, the producer's set-up), and Q took ~2,500-2,900 more (runs 4741ae7, fb3e96c).
#   SASS (compile-checked): the consumers' tile loops are as main's (1269 / 977 / 974 instructions; the 176-key loop's
#   4 local loads unchanged). Three builds in turns, twice: main, patched with EARLY_Q=0, patched with =1.
#   Prediction: =1 against =0: 2048 and 2112 non-causal -1.5 to -2.5 %, 4096 -1 %, 8192 -0.5 %, causal persistent 2048
#   (its first item of ~4 gains) -0.5 %; =0 against main level (within 0.5 %). The patched tree's tests run first.
n_shapes() { # WHICH R BINDIR [VAR=VALUE]
  PATH=$3:$PATH attn_burst "n_nc_$1_$2" 4 2048,2112,4096,8192 0 ${4:+"$4"}
  PATH=$3:$PATH attn_burst "n_c_$1_$2" 2 2048,8192 1 ${4:+"$4"}
}
if [ "$PART" = n ]; then
  echo "part n: early_q.patch is merged (MK_ATTN_WS_EARLY_Q); run part p"; exit 1
  STEP_GREP='^attn_prefill fused +b|FAIL|rror|tests passed|Failed'
  STB_TARGETS=all stamps_build early_q.patch
  TAIL=12 marked n_ctest 150 ctest --test-dir /tmp/stb --output-on-failure --timeout 120 \
    -R '^test_(flash_attn(_ws0|_ws1|_bn176|_bn128|_tma_o0)?|mask_tile|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1|model_gpu_prefill)$'
  for r in 1 2; do
    n_shapes main "$r" "$BIN"
    n_shapes eq0 "$r" /tmp/stb/bin MK_ATTN_WS_EARLY_Q=0
    n_shapes eq1 "$r" /tmp/stb/bin MK_ATTN_WS_EARLY_Q=1
  done
fi
# part o (session 50; one GPU): three changes, in turns twice against 1992bb9's build (.carry/old-1992bb9):
#   pf   the persistent producer prefetches its next round's Q tile into L2 once it has issued this round's
#        (ws_prefetch_next_q, under MK_ATTN_WS_Q_PREFETCH, default 1; new_pf0 turns it off). Run 1992bb9 (part l) at
#        2048 causal persistent: Q issued -> Q waited 5,701 cycles (from HBM, queued behind the K/V loads), and the
#        consumers waited 1,781 after their stores for the next item's Q, of ~29,000 an item.
#   desc the producer prefetches O's map descriptor (in both new builds): the staged epilogue took 734-770 cycles from
#        its second barrier to the stores done, where only the TMA store's issue and the LSE lie.
#   eq   MK_ATTN_WS_EARLY_Q (default 0; new_eq1 turns it on): early_q.patch merged, thread 0 issues the first item's Q
#        and K0 before the CTA's barrier.
#   The tests run again with MK_ATTN_WS_EARLY_Q=1 first; item stamps (item_stamps.patch) after the turns.
#   Predictions: pf (new vs new_pf0): causal 2048 -3 to -5 %, 4096 -2 to -3 %, 8192 -1 to -2 %; Q issued -> Q waited
#   5,701 -> 1,500-2,500 and the next item's Q waited - stores done 1,781 -> < 400. desc: if it is the map's fetch,
#   the TMA-issue phase 734 -> < 150 cycles and new vs old -0.5 to -1 % at 2048 non-causal, else level (the build
#   itself may move the 176-key kernel by +-2 %: part l). eq (new_eq1 vs new): 2048 / 2112 non-causal -1.5 to
#   -2.5 %, 4096 -1 %, 8192 -0.5 %; consumer start -> Q waited 3,043 -> ~1,500.
op_shapes() { # PART WHICH R BINDIR [VAR=VALUE]: parts o and p's bursts with BINDIR's mk-bench
  PATH=$4:$PATH attn_burst "$1_nc_$2_$3" 4 2048,2112,4096,8192 0 ${5:+"$5"}
  PATH=$4:$PATH attn_burst "$1_c_$2_$3" 3 2048,4096,8192 1 ${5:+"$5"}
  PATH=$4:$PATH TAIL=1 marked "$1_tp4_$2_$3" 20 env ${5:-MK_NONE=0} mk-bench attn --mode prefill --seq 8192 --hq 8 \
    --hkv 2 --causal 1 --path fused --warmup 2 --iters 5 --json "$RES/$1_tp4_$2_$3.json"
}
o_shapes() { op_shapes o "$@"; }
if [ "$PART" = o ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror|tests passed|Failed'
  TAIL=8 marked o_ctest_eq1 150 env MK_ATTN_WS_EARLY_Q=1 ctest --test-dir "$REPO/build-gpu" --output-on-failure \
    --timeout 120 -R '^test_(flash_attn(_ws0|_ws1|_bn176|_bn128|_tma_o0)?|ring_attn_1(_ws0)?|model_gpu_prefill)$'
  OLD_TARGETS=mk-bench old_build 1992bb9
  for r in 1 2; do
    o_shapes old "$r" "$OB"
    o_shapes new "$r" "$BIN"
    o_shapes new_pf0 "$r" "$BIN" MK_ATTN_WS_Q_PREFETCH=0
    o_shapes new_eq1 "$r" "$BIN" MK_ATTN_WS_EARLY_Q=1
  done
  stamps_build item_stamps.patch
  its o_c_p1_2048_pf1 2048 1 MK_ATTN_WS_PERSISTENT=1
  its o_c_p1_2048_pf0 2048 1 MK_ATTN_WS_PERSISTENT=1 MK_ATTN_WS_Q_PREFETCH=0
  its o_p0_2048_eq0 2048 0 MK_ATTN_WS_PERSISTENT=0
  its o_p0_2048_eq1 2048 0 MK_ATTN_WS_PERSISTENT=0 MK_ATTN_WS_EARLY_Q=1
  python3 "$REPO/tools/bench/item_stamps.py" "$RES"/its_o_*.txt | tee "$RES/item_stamps.txt"
fi
# part p (for session 51; one GPU). Run 1c28130 (part o) measured, in turns in its build: the next round's Q prefetch
#   (pf) -0.9 % at 2048 causal, level beyond, its stamps' Q wait unchanged; EARLY_Q -1.1 % at 2048 / 2112 non-causal,
#   level elsewhere; and its persistent tile loop ran 2,977 cycles a tile against 1992bb9's 2,916 (the same
#   instructions in another order: +3 % causal against 1992bb9's build). Main (session 50's end) keeps EARLY_Q (one
#   CTA an item only) and the persistent kernels' SASS identical to 1992bb9's; tools/bench/persist_next.patch holds
#   pf and ws_item in 32-bit (its three 64-bit divisions run between an item's stores and the next one's start, of the
#   ~1,500 cycles the consumers spend there at 2048 causal). The patched build goes to /tmp/pnb with the flash test,
#   whose tests run first; then main and the patch in turns, twice, each also with its switch off; then the item
#   stamps of both (the patch's through item_stamps_pn.patch).
#   Predictions: main's persistent calls as 1992bb9's in run 1c28130 (0.0682 / 0.2224 / 0.8244 ms causal 2048 / 4096 /
#   8192, within 0.5 %) and its non-causal as 1c28130's EARLY_Q=1 (0.1218 / 0.1452 at 2048 / 2112); eq0 +1 % at
#   2048 / 2112. The patch: next item's Q waited - stores done 1,790 -> 1,000-1,400 cycles; causal 2048 -1 to -3 %
#   against main unless its tile loop's order is slower (the loop is 983 instructions against main's 975).
#   MKERNEL_BUILD_COMMIT=<sha> MK_CALL_LIMIT=520 CTEST_ARGS="-R ^test_(flash_attn(_ws0|_ws1|_bn176|_bn128|_tma_o0)?|\
#     mask_tile|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1|model_gpu_prefill)$" tools/gpu-check.sh -- \
#     'bash ../../tools/bench/next_s46.sh p'
patch_tested() { # NAME DIR PATCH: this tree with tools/bench/PATCH built into DIR (mk-bench, test_flash_attn), and
  # its flash attention tests run
  STB=$2 STB_TARGETS="mk-bench test_flash_attn" stamps_build "$3"
  TAIL=8 marked "$1" 150 ctest --test-dir "$2" --output-on-failure --timeout 120 \
    -R '^test_flash_attn(_ws0|_ws1|_ws1_ctas3|_bn176|_bn128|_tma_o0)?$'
}
p_shapes() { op_shapes p "$@"; }
if [ "$PART" = p ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror|tests passed|Failed'
  patch_tested p_ctest_pn /tmp/pnb persist_next.patch
  for r in 1 2; do
    p_shapes main "$r" "$BIN"
    p_shapes main_eq0 "$r" "$BIN" MK_ATTN_WS_EARLY_Q=0
    p_shapes pn "$r" /tmp/pnb/bin
    p_shapes pn_pf0 "$r" /tmp/pnb/bin MK_ATTN_WS_Q_PREFETCH=0
  done
  stamps_build item_stamps.patch
  its p_c_p1_2048_main 2048 1 MK_ATTN_WS_PERSISTENT=1
  its p_p0_2048_main 2048 0 MK_ATTN_WS_PERSISTENT=0
  stamps_build "persist_next.patch item_stamps_pn.patch"
  its p_c_p1_2048_pn 2048 1 MK_ATTN_WS_PERSISTENT=1
  python3 "$REPO/tools/bench/item_stamps.py" "$RES"/its_p_*.txt | tee "$RES/item_stamps.txt"
fi
# part q (session 51, for the next one-GPU session; run it before part p, whose next-round prefetch it makes moot).
#   tools/bench/persist_q2.patch: the persistent kernel with two Q buffers (the second in 32 KB more shared memory,
#   231,424 bytes at d 128), item j's Q in buffer j & 1, loaded as item j - 1 starts instead of after its last S, and
#   the item itself (its fwd_block) handed from the producer to the consumers in shared memory with that Q (a note
#   written before the arrive on the buffer's full barrier; h < 0 ends), so the consumers no longer run ws_item and
#   fwd_block_setup between one item's stores and the next one's Q wait. Its one-CTA-an-item kernels and the ring
#   kernels are byte-identical to main's (cuobjdump); the persistent tile loop is 981 instructions against 975 (588
#   -> 594 on the path without a mask), in another order. The patched build goes to /tmp/q2b with the flash test,
#   whose tests run first (test_flash_attn_ws1_ctas3, new in main, walks many items a CTA); then main and the patch
#   in turns, twice (op_shapes); then the patch's item stamps (item_stamps_q2.patch on top; main's persistent SASS is
#   1992bb9's, whose stamps run 1992bb9 has).
#   Predictions: the non-causal rows (one CTA an item, identical SASS) level within 0.5 %: the control. Causal
#   (persistent): 2048 -3 to -5 % (0.0682 in run 1c28130), 4096 -2 to -4 %, 8192 -1.5 to -3 %, the TP = 4 shape -0.5
#   to -1 %, unless the loop's new order costs what the schedule has cost before (+-3 %: the stamps' tile period, 2,916
#   cycles in 1992bb9's build, tells). Stamps at 2048 causal: the next item's Q waited - the stores done 1,780 -> <
#   300 cycles, K0 in within 300 of it. The stamps also split the epilogue's last phase (734-770 cycles in run
#   1992bb9, unexplained) at the leader's TMA store issued (f15), persistent and one CTA an item (2048 non-causal):
#   if the UTMASTG issue waits on the TMA unit, most of it lies before f15; the LSE's store alone should take < 100.
#   MKERNEL_BUILD_COMMIT=<sha> MK_CALL_LIMIT=480 CTEST_ARGS="-R ^test_(flash_attn(_ws0|_ws1|_ws1_ctas3|_bn176|\
#     _bn128|_tma_o0)?|mask_tile|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1|model_gpu_prefill)$" tools/gpu-check.sh -- \
#     'bash ../../tools/bench/next_s46.sh q'
if [ "$PART" = q ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror|tests passed|Failed'
  patch_tested q_ctest_q2 /tmp/q2b persist_q2.patch
  for r in 1 2; do
    op_shapes q main "$r" "$BIN"
    op_shapes q q2 "$r" /tmp/q2b/bin
  done
  stamps_build "persist_q2.patch item_stamps_q2.patch"
  its q_c_p1_2048_q2 2048 1 MK_ATTN_WS_PERSISTENT=1
  its q_c_p1_4096_q2 4096 1 MK_ATTN_WS_PERSISTENT=1
  its q_p0_2048_q2 2048 0 MK_ATTN_WS_PERSISTENT=0
  python3 "$REPO/tools/bench/item_stamps.py" "$RES"/its_q_*.txt | tee "$RES/item_stamps.txt"
fi
# part q ran in session 52 (run f932691-h100, on an H100): persist_q2.patch is merged since (ws_items,
#   ws_produce_persistent), and item_stamps_q2.patch is now item_stamps.patch (it applies to main); parts k-q name the
#   patches as they were then.
# part r (session 52; one GPU): the persistent kernel (128-key tiles, two Q buffers since the merge) for non-causal
#   calls, against the default there (one CTA an item, 176-key tiles). Run f932691's stamps at 2048 keys: one CTA an
#   item spends ~45,600 cycles in 12 tiles of 176 keys (3,801 a tile) and ~7,000 more on its start and end (entry ->
#   consumer start 2,206, -> Q waited 696, the epilogue ~1,950 and consumer 1's 650 behind it, exit 304, the next
#   CTA's entry 991); the persistent kernel's tile ran 2,941 cycles a 128-key tile at 2048 causal (16 tiles: ~47,100)
#   with ~750 cycles from one item's stores to the next one's Q. In turns, twice, bursts: non-causal 1024, 2048, 2112,
#   4096, 8192 at d 128 and 2048, 8192 at d 64; then the item stamps of both at 2048 non-causal; then main's defaults
#   beside cuDNN (sdpa_ref.py) on the headline shapes, in bursts and sustained.
#   Prediction: persistent at 2048 / 2112 non-causal -4 to -8 % (0.1211 in run f932691), 1024 -5 to -10 %, 4096 -1 to
#   -3 %, 8192 level to +3 % (the 128-key tile's 23.0 cycles a key against 176's 21.6 weighs more as items grow);
#   d 64 like d 128 or better at 2048. The persistent stamps: a tile period near 2,940 cycles (none of session 44's
#   7 % loss), and ~750 cycles between items.
#   MKERNEL_BUILD_COMMIT=<sha> MK_CALL_LIMIT=560 BUILD_TARGETS="mk-bench mk-launch test_flash_attn test_ring_attn \
#     test_mask_tile test_model_gpu_prefill" CTEST_ARGS="-R ^test_(flash_attn(_ws0|_ws1|_ws1_ctas3|_bn176|_bn128|\
#     _tma_o0)?|mask_tile|ring_attn_1(_ws0)?|ring_attn_[24]_gpu1|model_gpu_prefill)$" CTEST_TIMEOUT=150 CTEST_WALL=200 \
#     tools/gpu-check.sh -- 'bash ../../tools/bench/next_s46.sh r'
if [ "$PART" = r ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror|tests passed|Failed|torch_sdpa_cudnn \{'
  for r in 1 2; do for v in -1 1; do
    attn_burst "r_nc_p${v}_$r" 5 1024,2048,2112,4096,8192 0 MK_ATTN_WS_PERSISTENT=$v
    attn_burst "r_d64_p${v}_$r" 2 2048,8192 0 64 MK_ATTN_WS_PERSISTENT=$v
  done; done
  stamps_build item_stamps.patch
  its r_p1_2048 2048 0 MK_ATTN_WS_PERSISTENT=1
  its r_p0_2048 2048 0 MK_ATTN_WS_PERSISTENT=0
  python3 "$REPO/tools/bench/item_stamps.py" "$RES"/its_r_*.txt | tee "$RES/item_stamps.txt"
  for w in "burst 2 5" "sus 10 50"; do
    set -- $w
    TAIL=6 marked "r_$1" 60 mk-bench attn --mode prefill --seq 2048,8192,16384 --path fused --warmup "$2" \
      --iters "$3" --json "$RES/r_$1.json"
    TAIL=8 marked "r_$1_cudnn" 90 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 2048,8192,16384 --backend cudnn \
      --warmup "$2" --iters "$3" --merge "$RES/r_$1.json"
  done
fi
# part s (session 52, after part r): the default (-1) now runs unsplit non-causal calls of at most 4096 keys
#   persistent where 128-key tiles pad no more keys than 176-key ones (ws_persistent_nc). Default against one CTA an
#   item (0), in turns, twice, bursts: non-causal 1024, 2048, 2112, 3072, 4096, 8192 (d 128), 2048 and 8192 (d 64);
#   then the defaults beside cuDNN, sustained (10 / 50).
#   Prediction: as part r's persistent column at 1024 / 2048 / 4096 (-4 to -8 %) and d 64 2048 (-8 %); 3072 (24 tiles
#   of 128, 18 of 176: not measured before) -3 to -6 %; 2112, 8192 and d 64 8192 level (the default keeps one CTA an
#   item there).
if [ "$PART" = s ]; then
  STEP_GREP='^attn_prefill fused +b|FAIL|rror|tests passed|Failed|torch_sdpa_cudnn \{'
  for r in 1 2; do for v in -1 0; do
    attn_burst "s_nc_p${v}_$r" 6 1024,2048,2112,3072,4096,8192 0 MK_ATTN_WS_PERSISTENT=$v
    attn_burst "s_d64_p${v}_$r" 2 2048,8192 0 64 MK_ATTN_WS_PERSISTENT=$v
  done; done
  TAIL=6 marked s_sus 60 mk-bench attn --mode prefill --seq 2048,8192,16384 --path fused --json "$RES/s_sus.json"
  TAIL=8 marked s_sus_cudnn 90 python3 "$REPO/tools/bench/sdpa_ref.py" --seq 2048,8192,16384 --backend cudnn \
    --merge "$RES/s_sus.json"
fi
