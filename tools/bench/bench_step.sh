# tools/bench/bench_step.sh — sourced by the GPU bench scripts (run_s5c.sh): the environment
# every GPU run keeps (no NVLink multicast), T0 and the time guard LIMIT (default 250 s; or what is
# left of MK_CALL_LIMIT), and
#   step NAME SECONDS COMMAND...   runs COMMAND under timeout into $RES/NAME.log (skipped when
#                                  fewer than 15 s are left, clipped to what is left), then prints
#                                  its rc and the lines of the log matching $STEP_GREP (last $TAIL).
#   fused_op NAME OP "MS" [VAR=VALUE...]  one `mk-bench OP --interleave --seed 7` at the M list MS under $G ranks with
#                                  the environment VAR=VALUE, JSON into $RES/NAME.json.
#   fold_turns                     GEMM+AR (M 1024, 4096) and GEMM+RS (M 2048, 8192, 16384) with MK_FUSED_FOLD=1 and =0
#                                  in turns, twice (fused_op ar_fold1, rs_fold1, ar_fold0, ..., rs_fold0b).
#   async_tp NAME OP JSON          PyTorch async-TP (tools/bench/torch_async_tp.py) of OP (ag_gemm, gemm_rs) at the
#                                  issue's shapes under $G ranks, its rows merged into the mk-bench results JSON.
#   moe NAME SHAPES [VAR=VALUE...] [-- ARGS...]  one `mk-bench moe --breakdown --seed 7` of SHAPES under $G
#                                  ranks with the environment VAR=VALUE, JSON into $RES/NAME.json.
#   moe_turns PREFIX SHAPES VAR A B [-- ARGS...]  `moe` of SHAPES with VAR=A, VAR=B, then both again (PREFIX_A,
#                                  PREFIX_B, PREFIX_Ab, PREFIX_Bb): an A/B in turns, twice (A and B must not end in b).
#   moe_modes FORMAT SHAPES VAR ENTRY... [-- ARGS...]  `moe` of SHAPES with VAR at each ENTRY (VALUE or LABEL=VALUE), in
#                                  turns, twice; run r of an entry is named printf FORMAT LABEL r (e.g. 'ce_%s%s').
#   layer NAME BIN [ARGS...]       one `mk-bench layer --interleave --warmup 20 --iters 40 --seed 7` of BIN's build
#                                  under $G ranks, JSON into $RES/NAME.json.
#   ar_step NAME ENV... -- ARGS...  one `mk-bench gemm_ar --interleave` under 4 ranks with the
#                                  environment ENV (at least one VAR=VALUE), JSON into $RES/NAME.json.
#   kt_layer NAME [ARGS...]       the layer under the kernel tracer (libmk_ktrace.so), then ktrace_report.py of both
#                                  ranks into $RES/NAME.txt (KT_LIST: also a --list report); the CSVs packed.
#   kt_op NAME OP AROUND ARGS...   `mk-bench OP ARGS --seed 7` under $G ranks and the kernel tracer, then
#                                  ktrace_report.py --around AROUND of both ranks into $RES/NAME.txt (the CSVs packed).
#   kt_ops                         kt_op of GEMM+AR 1024, 4096, GEMM+RS 2048, AG+GEMM 2048, the defaults, fused path.
#   trace_op NAME OP M [VAR=VALUE...]  MK_TRACE of OP's fused path at M (its last call), trace_stats.py of both ranks.
#   old_build COMMIT               builds mk-bench and mk-launch (or the targets OLD_TARGETS) of the tree copied to
#                                  $REPO/.carry/old-COMMIT
#                                  (git archive COMMIT | tar x -C .carry/old-COMMIT --exclude=docs; carried) into
#                                  /tmp/oldb and sets OB to its bin folder, for A/B runs in one call.
#   ab_pair FN R                   FN new R BIN, then FN old R OB: this build, then old_build's.
#   ab_turns FN                    ab_pair FN 1, ab_pair FN 2: the two builds in turns, twice.
#   attn_pers_turns PRE SEQS MODE...  `mk-bench attn --mode prefill` with MK_ATTN_WS_PERSISTENT at each MODE in turns,
#                                  twice: S in SEQS (both masks), then the TP = 2 shape (hq 16, hkv 2) and Qwen3's (hq 32,
#                                  hkv 4) at 8192 causal; JSON into $RES/PRE_pMODE_R.json, PRE_tp2_..., PRE_qwen3_....
# Needs RES (the output folder, set by tools/gpu-check.sh); sets BIN (the working folder), PATH and G (the GPUs).
RES=${RES:?set RES to the output folder}
# BIN: the build's bin folder, where tools/gpu-check.sh runs the scripts, first on PATH; G: the machine's GPUs.
BIN=${BIN:-$PWD}
export PATH=$BIN:$PATH
G=${G:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export MK_BOOTSTRAP_TIMEOUT_MS=${MK_BOOTSTRAP_TIMEOUT_MS:-120000}
T0=$(date +%s)
LIMIT=${LIMIT:-250}
# MK_CALL_LIMIT (s): the whole device call's budget, counted from gpu-check.sh's start (MK_CALL_T0);
# when set, LIMIT is what is left of it after the build and the ctest run.
if [ -n "${MK_CALL_LIMIT:-}" ] && [ -n "${MK_CALL_T0:-}" ]; then LIMIT=$(( MK_CALL_LIMIT - (T0 - MK_CALL_T0) )); fi
STEP_GREP=${STEP_GREP:-'^\[0\] (ag_|gemm_|moe|layer|\{|  T=)|^gemm|fused on|keeps the SM path|FAIL|rror'}
step() {
  local name=$1 t=$2 now
  shift 2
  now=$(( $(date +%s) - T0 ))
  if [ $(( now + 15 )) -gt "$LIMIT" ]; then echo "$name: skipped at $now s"; return; fi
  [ $(( now + t )) -gt "$LIMIT" ] && t=$(( LIMIT - now ))
  timeout "$t" "$@" > "$RES/$name.log" 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "$STEP_GREP" "$RES/$name.log" | grep -v autotune | tail -"${TAIL:-16}"
}
fused_op() { # NAME OP "MS" [VAR=VALUE...]: one mk-bench OP (ag_gemm, gemm_rs, gemm_ar) --interleave --seed 7 at the
  local name=$1 op=$2 ms=$3 args=() # M list MS under $G ranks with the environment VAR=VALUE, JSON into $RES/NAME.json
  shift 3
  for m in $ms; do args+=(--m "$m"); done
  TAIL=8 step "$name" 60 env "$@" mk-launch -n "$G" -- mk-bench "$op" "${args[@]}" --interleave --seed 7 \
    --json "$RES/$name.json"
}
fold_turns() {
  local r
  for r in 1 0 1b 0b; do
    fused_op "ar_fold$r" gemm_ar "1024 4096" MK_FUSED_FOLD="${r%b}"
    fused_op "rs_fold$r" gemm_rs "2048 8192 16384" MK_FUSED_FOLD="${r%b}"
  done
}
async_tp() {
  TAIL=6 step "$1" 90 mk-launch -n "$G" -- python3 "$BIN/../../tools/bench/torch_async_tp.py" --op "$2" \
    --warmup 20 --iters 100 --merge "$3"
}
moe() {
  local name=$1 shapes=$2 envs=() extra=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  [ "${1:-}" = "--" ] && { shift; extra=("$@"); }
  # shellcheck disable=SC2086
  TAIL=14 step "$name" 90 env "${envs[@]}" mk-launch -n "$G" -- mk-bench moe $shapes --iters 20 --seed 7 \
    --breakdown --json "$RES/$name.json" "${extra[@]}"
}
moe_turns() {
  local p=$1 shapes=$2 var=$3 a=$4 b=$5 v
  shift 5
  for v in "$a" "$b" "${a}b" "${b}b"; do moe "${p}_$v" "$shapes" "$var=${v%b}" "$@"; done
}
moe_modes() {
  local fmt=$1 shapes=$2 var=$3 entries=() r e
  shift 3
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do entries+=("$1"); shift; done
  for r in 1 2; do
    # shellcheck disable=SC2059
    for e in "${entries[@]}"; do moe "$(printf "$fmt" "${e%%=*}" "$r")" "$shapes" "$var=${e#*=}" "$@"; done
  done
}
layer() {
  local name=$1 bin=$2
  shift 2
  TAIL=6 step "$name" 120 "$bin/mk-launch" -n "$G" -- "$bin/mk-bench" layer --interleave --warmup 20 --iters 40 \
    --seed 7 "$@" --json "$RES/$name.json"
}
ar_step() {
  local name=$1 envs=()
  shift
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  step "$name" 40 env "${envs[@]}" mk-launch -n 4 -- mk-bench gemm_ar --interleave --json "$RES/$name.json" "$@"
}
old_build() {
  local c=$1
  (export MKERNEL_BUILD_COMMIT=$c
   cmake -S "${REPO:?}/.carry/old-$c" -B /tmp/oldb -G Ninja -DCMAKE_PREFIX_PATH=/tmp/mkprefix/usr > "$RES/old_configure.log" 2>&1 &&
     cmake --build /tmp/oldb -j "$(nproc)" --target ${OLD_TARGETS:-mk-bench mk-launch} > "$RES/old_build.log" 2>&1)
  echo "old build rc=$? at $(( $(date +%s) - T0 )) s"
  OB=/tmp/oldb/bin
}
ab_pair() {
  "$1" new "$2" "$BIN"
  "$1" old "$2" "$OB"
}
ab_turns() {
  ab_pair "$1" 1
  ab_pair "$1" 2
}
KT=$BIN/../lib/libmk_ktrace.so
kt_layer() { # NAME [ARGS...]: the layer under the tracer, then the report of both ranks
  local name=$1
  shift
  [ -f "$KT" ] || { echo "no $KT (CUPTI not found at configure)"; return; }
  mkdir -p "$RES/$name"
  TAIL=6 step "$name" 150 env CUDA_INJECTION64_PATH="$KT" KTRACE_DIR="$RES/$name" mk-launch -n "$G" -- \
    mk-bench layer --interleave --warmup 10 --iters 20 --seed 7 "$@" --json "$RES/$name.json"
  python3 "$BIN/../../tools/bench/ktrace_report.py" "$RES/$name" --files "$G" > "$RES/$name.txt" 2>&1
  [ -n "${KT_LIST:-}" ] && python3 "$BIN/../../tools/bench/ktrace_report.py" "$RES/$name" --files "$G" \
    --list "$KT_LIST" > "$RES/$name.list.txt" 2>&1 && cat "$RES/$name.list.txt"
  echo "$name: $(grep -c '^-- group' "$RES/$name.txt") groups"
  (cd "$RES" && tar czf "$name.csv.tgz" "$name" && rm -rf "$name")
}
kt_op() { # NAME OP AROUND ARGS...: mk-bench OP ARGS under the kernel tracer, then the timeline around the kernels
  local name=$1 op=$2 re=$3 # matching AROUND on both ranks into $RES/NAME.txt
  shift 3
  [ -f "$KT" ] || { echo "no $KT (CUPTI not found at configure)"; return; }
  mkdir -p "$RES/$name"
  TAIL=6 step "$name" 60 env CUDA_INJECTION64_PATH="$KT" KTRACE_DIR="$RES/$name" "$BIN/mk-launch" -n "$G" -- \
    "$BIN/mk-bench" "$op" "$@" --seed 7 --json "$RES/$name.json"
  python3 "$BIN/../../tools/bench/ktrace_report.py" "$RES/$name" --files "$G" --around "$re" --pre 30 --post 40 \
    > "$RES/$name.txt" 2>&1
  cat "$RES/$name.txt"
  tar czf "$RES/$name.csv.tgz" -C "$RES" "$name" && rm -rf "${RES:?}/$name"
}
trace_op() { # NAME OP M [VAR=VALUE...]: MK_TRACE of OP's fused path at M (its last call), trace_stats of both ranks
  local name=$1 op=$2 m=$3
  shift 3
  TAIL=4 step "$name" 40 env MK_TRACE="$RES/$name" "$@" "$BIN/mk-launch" -n "$G" -- "$BIN/mk-bench" "$op" --m "$m" \
    --warmup 5 --iters 3 --path fused --seed 7
  for f in "$RES/$name".rank*.json; do python3 "$BIN/../../tools/bench/trace_stats.py" "$f"; done
}
kt_ops() { # the kernel tracer's timelines (kt_op) of the fused ops at the defaults, fused path only: GEMM+AR 1024 and
  local o # 4096, GEMM+RS 2048, AG+GEMM 2048 (their GEMM kernels: mk_reduce_policy<2>, <1>, mk_ag_policy)
  for o in "ar1024 gemm_ar mk_reduce_policy<2 1024" "ar4096 gemm_ar mk_reduce_policy<2 4096" \
    "rs2048 gemm_rs mk_reduce_policy<1 2048" "ag2048 ag_gemm mk_ag_policy 2048"; do
    set -- $o
    kt_op "kt_$1" "$2" "$3" --m "$4" --path fused --warmup 10 --iters 30
  done
}
attn_pers_turns() {
  local pre=$1 seqs=$2 r v
  shift 2
  for r in 1 2; do
    for v in "$@"; do
      TAIL=6 step "${pre}_p${v}_$r" 80 env MK_ATTN_WS_PERSISTENT=$v mk-bench attn --mode prefill --seq "$seqs" \
        --json "$RES/${pre}_p${v}_$r.json"
      TAIL=1 step "${pre}_tp2_p${v}_$r" 30 env MK_ATTN_WS_PERSISTENT=$v mk-bench attn --mode prefill --seq 8192 --hq 16 \
        --hkv 2 --causal 1 --json "$RES/${pre}_tp2_p${v}_$r.json"
      TAIL=1 step "${pre}_qwen3_p${v}_$r" 30 env MK_ATTN_WS_PERSISTENT=$v mk-bench attn --mode prefill --seq 8192 \
        --hq 32 --hkv 4 --causal 1 --json "$RES/${pre}_qwen3_p${v}_$r.json"
    done
  done
}
