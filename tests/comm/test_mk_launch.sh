#!/usr/bin/env bash
# test_mk_launch.sh MK_LAUNCH — environment, output prefixes, --nodes, exit codes, stopping.
set -u
L=$1
fail() { echo "FAIL: $*"; exit 1; }
out=$("$L" -n 4 --nodes 2 -- sh -c 'echo "env $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MK_DEVICE $MASTER_ADDR $NCCL_NVLS_ENABLE"; echo err >&2' 2>&1) || fail "exit $?"
echo "$out"
for r in 0 1 2 3; do
  echo "$out" | grep -q "^\[$r\] env $r 4 $((r % 2)) 2 $r 127.0.0.1 0$" || fail "rank $r environment"
  echo "$out" | grep -q "^\[$r\] err$" || fail "rank $r stderr prefix"
done
ports=$(echo "$out" | wc -l); [ "$ports" -eq 8 ] || fail "expected 8 lines"
# 8 ranks (issue 11): one node of 8, and 2 emulated nodes x 4 (LOCAL_RANK = rank mod 4, every
# rank its own GPU, module loading eager for the loopback proxy).
out=$("$L" -n 8 -- sh -c 'echo "env $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MK_DEVICE"' 2>&1) || fail "-n 8: exit $?"
for r in 0 1 2 3 4 5 6 7; do
  echo "$out" | grep -q "^\[$r\] env $r 8 $r 8 $r$" || fail "-n 8: rank $r environment"
done
out=$("$L" -n 8 --nodes 2 -- sh -c 'echo "env $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MK_DEVICE ${CUDA_MODULE_LOADING:-}"' 2>&1) ||
  fail "-n 8 --nodes 2: exit $?"
for r in 0 1 2 3 4 5 6 7; do
  echo "$out" | grep -q "^\[$r\] env $r 8 $((r % 4)) 4 $r EAGER$" || fail "-n 8 --nodes 2: rank $r environment"
done
# --gpus G: rank r on GPU r % G, and MK_GPU_SHARE=1 only where ranks share (G < N).
out=$("$L" -n 4 --gpus 2 -- sh -c 'echo "env $RANK $MK_DEVICE ${MK_GPU_SHARE:-}"' 2>&1) || fail "--gpus 2: exit $?"
for r in 0 1 2 3; do
  echo "$out" | grep -q "^\[$r\] env $r $((r % 2)) 1$" || fail "--gpus 2: rank $r environment"
done
out=$("$L" -n 2 --gpus 2 -- sh -c 'echo "env $RANK $MK_DEVICE ${MK_GPU_SHARE:-none}"' 2>&1) || fail "--gpus 2: exit $?"
echo "$out" | grep -q "^\[1\] env 1 1 none$" || fail "--gpus N: no sharing"
"$L" -n 2 --gpus 0 -- true 2>/dev/null; [ $? -eq 2 ] || fail "--gpus 0 accepted"
# A GPU test under -n 8 on a 4-GPU host: ranks 4..7 skip (77) while 0..3 wait in the
# bootstrap; mk-launch stops those and passes 77 on, so ctest reports the test skipped.
"$L" -n 8 -- sh -c '[ "$MK_DEVICE" -ge 4 ] && exit 77; sleep 60' >/dev/null 2>&1; rc=$?
[ $rc -eq 77 ] || fail "-n 8 with ranks 4..7 skipping: exit $rc, want 77"
# One rank fails: the others (sleeping) are stopped, the exit code is the failing rank's.
t0=$(date +%s)
"$L" -n 3 -- sh -c '[ "$RANK" = 1 ] && exit 7; sleep 60' >/dev/null 2>&1; rc=$?
dt=$(( $(date +%s) - t0 ))
[ $rc -eq 7 ] || fail "exit code $rc, want 7"
[ $dt -le 8 ] || fail "took $dt s to stop the other ranks"
# A rank that ignores SIGTERM is killed after the grace period.
t0=$(date +%s)
"$L" -n 2 --grace 1 -- sh -c 'trap "" TERM; [ "$RANK" = 0 ] && exit 3; sleep 60' >/dev/null 2>&1; rc=$?
dt=$(( $(date +%s) - t0 ))
[ $rc -eq 3 ] && [ $dt -le 8 ] || fail "SIGKILL escalation: rc $rc after $dt s"
# SIGTERM to mk-launch is forwarded.
"$L" -n 2 -- sleep 60 >/dev/null 2>&1 & pid=$!
sleep 1; kill -TERM $pid; wait $pid; rc=$?
[ $rc -ne 0 ] || fail "SIGTERM: exit 0"
# Bad usage.
"$L" -n 3 --nodes 2 -- true 2>/dev/null; [ $? -eq 2 ] || fail "-n 3 --nodes 2 accepted"
"$L" -n 0 -- true 2>/dev/null; [ $? -eq 2 ] || fail "-n 0 accepted"
"$L" -n 1 -- /nonexistent/prog 2>/dev/null; [ $? -ne 0 ] || fail "missing program: exit 0"
echo ok
