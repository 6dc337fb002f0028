#!/usr/bin/env bash
# test_bootstrap_fail.sh MK_LAUNCH TEST_BOOTSTRAP MODE — a killed (MODE=kill, rank 2) or
# absent (MODE=late, rank 3) rank makes every other rank fail with an error naming it, within
# the bootstrap timeout; mk-launch exits non-zero and nothing hangs.
set -u
launch=$1 prog=$2 mode=$3
victim=2; [ "$mode" = late ] && victim=3
out=$(MK_BOOTSTRAP_TIMEOUT_MS=3000 timeout 40 "$launch" -n 4 --grace 2 -- "$prog" "$mode" 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: mk-launch exited $rc (want non-zero, not a hang)"; exit 1; }
n=$(echo "$out" | grep -c "detected the failure of rank $victim")
[ "$n" -eq 3 ] || { echo "FAIL: $n of 3 surviving ranks reported the failure of rank $victim"; exit 1; }
echo "$out" | grep -q "rank $victim" || exit 1
echo "ok: mk-launch exit $rc, 3 ranks named rank $victim"
