#!/usr/bin/env bash
# check_docs.sh — the README stays true to the code:
#  1. every MK_* parameter declared with MK_PARAM_INT/MK_PARAM_STR is in the README's table;
#  2. no code reads an MK_* variable around the loader (getenv("MK_...") directly);
#  3. the README's test command exists, runs ctest, and is what .ci/run executes.
set -u
root=${1:?usage: check_docs.sh REPO_ROOT}
cd "$root" || exit 1
fail=0
srcs=$(find core comm kernels layers models engine tools tests -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null)
# Declarations outside comments; MK_TESTONLY_* are knobs of the loader's own test.
params=$(grep -h 'MK_PARAM_\(INT\|STR\)(' $srcs | grep -v '^ *\(\*\|//\)' |
         grep -o 'MK_PARAM_\(INT\|STR\)([a-z0-9_]*, *"[A-Z0-9_]*"' | sed 's/.*"\([A-Z0-9_]*\)"/MK_\1/' |
         grep -v '^MK_TESTONLY_' | sort -u)
[ -n "$params" ] || { echo "FAIL: found no MK_PARAM declarations (the scan is broken)"; exit 1; }
for p in $params; do
  if ! grep -q "^| \`$p\` |" README.md; then
    echo "FAIL: $p is declared in the code but missing from the README's environment table"
    fail=1
  fi
done
direct=$(grep -n 'getenv("MK_' $srcs || true)
if [ -n "$direct" ]; then
  echo "FAIL: MK_* variables read around the loader (use MK_PARAM_*):"
  echo "$direct"
  fail=1
fi
cmd=$(awk '/<!-- mk:test-command -->/ { getline; getline; print; exit }' README.md)
case "$cmd" in
  *ctest*) ;;
  *) echo "FAIL: README test command missing or not running ctest: '$cmd'"; fail=1 ;;
esac
grep -q 'mk:test-command' .ci/run || { echo "FAIL: .ci/run does not read the README's test command"; fail=1; }
[ $fail -eq 0 ] && echo "ok: $(echo "$params" | wc -w) parameters documented; test command: $cmd"
exit $fail
