#!/usr/bin/env bash
# test_mk_bench_cli.sh — mk-bench's command line: --info and --help succeed and say what they
# must (with or without a GPU); bad flags and unbuilt ops fail with a message and exit 2.
set -u
bench=${1:?usage: test_mk_bench_cli.sh MK_BENCH}
fail=0
expect() { # expect CODE PATTERN ARGS...
  local code=$1 pat=$2; shift 2
  out=$("$bench" "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$code" ]; then echo "FAIL: mk-bench $* exited $rc, want $code"; echo "$out"; fail=1; return; fi
  if ! grep -qE -- "$pat" <<<"$out"; then echo "FAIL: mk-bench $* output lacks /$pat/"; echo "$out"; fail=1; fi
}
expect 0 '^GPUs +[0-9]+' --info
expect 0 '^  loopback +built: yes' --info
expect 0 '^  ib +built: (yes|no) +usable: (yes|no)' --info
expect 0 '^  efa +built: (yes|no) +usable: (yes|no)' --info
expect 0 'CUDA runtime +[0-9]+\.[0-9]+' --info
expect 0 'ops:' --help
expect 0 '^mk-bench [0-9.]+ \(commit ' --version
expect 2 "unknown op or flag '--frobnicate'" --frobnicate
expect 2 "--info takes no arguments" --info extra
if "$bench" --info | grep -qE '^GPUs +0'; then expect 0 'olmoe .*generated 16 tokens'; else expect 0 'ran [0-9]+ op benchmark'; fi # the default suite
expect 0 'usage: mk-bench attn' attn --help
expect 2 "unknown flag '--frobnicate'" attn --frobnicate
expect 2 '--mode needs prefill, decode or all' attn --mode sideways
expect 2 "--seq 'x' is not an integer" attn --seq 1,x
expect 2 '--d must be 64 or 128' attn --d 96
expect 0 'usage: mk-launch .* mk-bench layer' layer --help
expect 2 "--preset wants mixtral or qwen3, got 'llama'" layer --preset llama
expect 2 'give one of --preset, --config, --model' layer --preset mixtral --preset qwen3
expect 2 'cannot read a MoE model config from /nonexistent/config.json' layer --model /nonexistent
expect 2 "--tokens" layer --tokens 0
expect 2 "--batch" layer --batch x
expect 2 "--batch" layer --batch 0
expect 2 "--decode wants one or batch, got 'many'" layer --decode many
expect 2 "'--decode' needs a value" layer --decode
expect 0 '\[--decode one\|batch \(one\)\]' layer --help
expect 2 "unknown flag '--frobnicate'" layer --frobnicate 1
expect 2 "'--tp' needs a value" layer --tp
expect 2 'cannot read /nonexistent.json' plot /nonexistent.json -o /tmp/x.png
expect 2 'usage: mk-bench plot' plot onlyone

# plot: a results file with two paths and a bound draws a PNG.
tmp=$(mktemp -d)
cat > "$tmp/r.json" <<JSON
{"gpu":"test","gpus":1,"commit":"c","date":"d","results":[
 {"op":"gemm","path":"fused","shape":{"m":$RANDOM,"n":8},"ranks":1,"nodes":1,"median_ms":1.5,"bound_ms":1.2},
 {"op":"gemm","path":"unfused","shape":{"m":64,"n":8},"ranks":1,"nodes":1,"median_ms":2.0,"bound_ms":null}]}
JSON
expect 0 'wrote' plot "$tmp/r.json" -o "$tmp/r.png"
if [ "$(head -c 4 "$tmp/r.png" | od -An -tx1 | tr -d ' ')" != "89504e47" ]; then echo "FAIL: plot did not write a PNG"; fail=1; fi
echo '{"results": 5}' > "$tmp/bad.json"
expect 1 'not an mk-bench results file' plot "$tmp/bad.json" -o "$tmp/bad.png"
rm -rf "$tmp"
[ $fail -eq 0 ] && echo "ok"
exit $fail
