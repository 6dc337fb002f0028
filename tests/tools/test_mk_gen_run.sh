#!/usr/bin/env bash
# test_mk_gen_run.sh — mk-gen and mk-run end to end: every family generates, loads and runs;
# the same seed gives the same bytes and the same tokens; one and three shards give the same
# tokens and logits; bad flags exit 2 and a bad model directory exits 1 with a message.
set -u
gen=${1:?usage: test_mk_gen_run.sh MK_GEN MK_RUN}
run=${2:?usage: test_mk_gen_run.sh MK_GEN MK_RUN}
dir=$(mktemp -d /tmp/mk_test_genrun_XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fail=1; fi; }
for f in mixtral qwen2_moe qwen3_moe olmoe; do
  "$gen" --family $f --out "$dir/$f" --seed 7 >/dev/null || { echo "FAIL: mk-gen $f"; fail=1; continue; }
  "$gen" --family $f --out "$dir/${f}_b" --seed 7 >/dev/null
  "$gen" --family $f --out "$dir/${f}_s" --seed 7 --shards 3 >/dev/null
  check "cmp -s '$dir/$f/model.safetensors' '$dir/${f}_b/model.safetensors'" "$f: same seed, different bytes"
  check "[ -f '$dir/${f}_s/model.safetensors.index.json' ]" "$f: --shards 3 wrote no index"
  a=$("$run" --model "$dir/$f" --prompt-ids 1,2,3 --max-tokens 8 --logits-out "$dir/$f.l" 2>&1)
  b=$("$run" --model "$dir/${f}_s" --prompt-ids 1,2,3 --max-tokens 8 --logits-out "$dir/${f}_s.l" 2>&1)
  check "grep -qE '^generated ids:( [0-9]+){8}$' <<<\"\$a\"" "$f: mk-run output lacks 8 generated ids: $a"
  check "[ \"\$(grep '^generated' <<<\"\$a\")\" = \"\$(grep '^generated' <<<\"\$b\")\" ]" "$f: sharded tokens differ"
  check "cmp -s '$dir/$f.l' '$dir/${f}_s.l'" "$f: sharded logits differ"
  check "[ \$(stat -c %s '$dir/$f.l') -eq \$((10 * 256 * 4)) ]" "$f: logits file size"
done
out=$("$gen" --family llama --out "$dir/x" 2>&1); rc=$?
check "[ $rc -eq 2 ] && grep -q 'family must be one of' <<<\"\$out\"" "mk-gen --family llama: rc $rc: $out"
out=$("$gen" --family olmoe --out "$dir/x" --experts zero 2>&1); rc=$?
check "[ $rc -eq 2 ]" "mk-gen --experts zero: rc $rc"
out=$("$run" --model "$dir/none" --prompt-ids 1 2>&1); rc=$?
check "[ $rc -eq 1 ] && grep -q 'cannot load' <<<\"\$out\"" "mk-run on a missing dir: rc $rc: $out"
out=$("$run" --model "$dir/olmoe" --prompt-ids 1,x 2>&1); rc=$?
check "[ $rc -eq 2 ]" "mk-run --prompt-ids 1,x: rc $rc"
out=$("$run" --model "$dir/olmoe" --prompt-ids 1,999 2>&1); rc=$?
check "[ $rc -eq 1 ] && grep -q 'outside the vocabulary' <<<\"\$out\"" "mk-run token 999: rc $rc: $out"
out=$("$run" --model "$dir/olmoe" --prompt-ids 1 --path bogus 2>&1); rc=$?
check "[ $rc -eq 2 ] && grep -q 'fused or unfused' <<<\"\$out\"" "mk-run --path bogus: rc $rc: $out"
out=$("$run" --model "$dir/olmoe" --prompt-ids 1 --max-tokens 2 --cpu --path unfused 2>&1); rc=$?
check "[ $rc -eq 0 ]" "mk-run --cpu --path unfused: rc $rc: $out"
[ $fail -eq 0 ] && echo ok
exit $fail
