# tools/bench/step.sh — sourced by the time-guarded GPU run scripts (run_s4d.sh, next_laymoe.sh):
#   step NAME SECONDS COMMAND...   runs COMMAND into $RES/NAME.log, bounded by SECONDS and by what is
#   left of LIMIT seconds since T0 (skipped when under 15 s are left), then prints its rc and the
#   last TAIL (default 14) lines of the log that match STEP_GREP (an extended regex).
# Needs RES, T0, LIMIT set by the caller.
STEP_GREP=${STEP_GREP:-'^\[0\] (ag_|gemm_|moe|layer|\{|  T=)|^gemm|fused on|keeps the SM path|FAIL|rror'}
step() {
  local name=$1 t=$2 now
  shift 2
  now=$(( $(date +%s) - T0 ))
  if [ $(( now + 15 )) -gt "$LIMIT" ]; then echo "$name: skipped at $now s"; return; fi
  [ $(( now + t )) -gt "$LIMIT" ] && t=$(( LIMIT - now ))
  timeout "$t" "$@" > "$RES/$name.log" 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "$STEP_GREP" "$RES/$name.log" | grep -v autotune | tail -"${TAIL:-14}"
}
