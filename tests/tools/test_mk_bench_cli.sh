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
expect 0 'ran [0-9]+ op benchmark' # the default suite
[ $fail -eq 0 ] && echo "ok"
exit $fail
