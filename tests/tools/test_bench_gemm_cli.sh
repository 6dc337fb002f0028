#!/usr/bin/env bash
# test_bench_gemm_cli.sh — `mk-bench gemm` (and `mk-bench comm --per-cta`'s options) argument validation: impossible shapes (zero,
# negative, not a multiple of 8, malformed), bad layouts, group counts, group row lists and unknown flags are
# refused with a message and exit 2 before any GPU work; --help succeeds. Without a GPU a
# valid run says it is skipped and succeeds.
set -u
bench=${1:?usage: test_bench_gemm_cli.sh MK_BENCH}
fail=0
sub=gemm
expect() { # expect CODE PATTERN ARGS...   (of `mk-bench $sub`)
  local code=$1 pat=$2; shift 2
  out=$("$bench" $sub "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$code" ]; then echo "FAIL: mk-bench $sub $* exited $rc, want $code"; echo "$out"; fail=1; return; fi
  if ! grep -qE -- "$pat" <<<"$out"; then echo "FAIL: mk-bench $sub $* output lacks /$pat/"; echo "$out"; fail=1; fi
}
expect 0 'usage: mk-bench gemm' --help
expect 2 'M 0 is out of range' --shape 0x8x8
expect 2 'M -1 is out of range' --shape -1x8x8
expect 2 'N and K must be multiples of 8' --shape 8x12x8
expect 2 'N and K must be multiples of 8' --shape 8x8x20
expect 2 'N 0 is out of range' --shape 8x0x8
expect 2 "'8x8' is not MxNxK" --shape 8x8
expect 2 "is not MxNxK" --shape 8x8x8x8
expect 2 "is not MxNxK" --shape 8xx8x8
expect 2 "'a' is not an integer" --shape ax8x8
expect 2 'out of range' --shape 99999999999x8x8
expect 2 '--shape needs a value' --shape
expect 2 "--layout 'tn' is not nk or kn" --layout tn
expect 2 '--groups 0 is out of range' --groups 0
expect 2 '--groups 513 is out of range' --groups 513
expect 2 'is not the sum of --group-rows \(272\)' --group-rows 136,136 --shape 270x128x128
expect 2 'is not the sum of --group-rows' --group-rows 8,8
expect 2 'has an empty entry' --group-rows 8,,8 --shape 16x128x128
expect 2 "'x' is not an integer" --group-rows 8,x --shape 16x128x128
expect 2 'out of range' --group-rows 8,-1 --shape 7x128x128
expect 2 '--group-rows needs a value' --group-rows
expect 2 'give --groups or --group-rows, once' --group-rows 8,8 --groups 2 --shape 16x128x128
expect 2 'give --groups or --group-rows, once' --groups 2 --group-rows 8,8 --shape 16x128x128
expect 2 "unknown flag '--frobnicate'" --frobnicate
expect 2 'iters' --iters 0
expect 2 '--samples needs a file name' --samples
expect 0 'interleave' --help
if ! "$bench" --info 2>/dev/null | grep -qE '^GPUs +[1-9]'; then
  expect 0 'skipped: no GPU' --shape 128x128x128
  expect 0 'skipped: no GPU' --shape 272x128x128 --group-rows 136,0,136
  expect 0 'skipped: no GPU' --shape 128x128x128 --interleave --samples /dev/null
fi
# mk-bench comm: the --per-cta options are refused without --per-cta, and out of range.
sub=comm
expect 0 'smem-kb' --help
expect 2 'apply to --per-cta only' --smem-kb 200
expect 2 'apply to --per-cta only' --ldcg
expect 2 'out of range' --per-cta --smem-kb 300
[ $fail -eq 0 ] && echo "ok"
exit $fail
