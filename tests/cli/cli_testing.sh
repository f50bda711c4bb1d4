# Shared by the end-to-end scripts of tests/cli (sourced, not run): pass/fail counters, a scratch
# directory $tmp removed on exit, and
#   check NAME RC                      count a pass when RC (a condition already run) is 0; else
#                                      print FAIL NAME and the outputs left in $tmp
#   expect NAME RC PATTERN -- CMD…     CMD exits with RC and its stderr matches PATTERN (grep -E);
#                                      each command runs under a timeout ($EXPECT_TIMEOUT, 120 s),
#                                      so a hang fails instead of blocking
#   finish                             print the tally; exit status 0 when nothing failed
failures=0
passed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {
  if [[ $2 -eq 0 ]]; then
    passed=$((passed + 1))
  else
    echo "FAIL $1"
    cat "$tmp/out" "$tmp/log" "$tmp/err" 2>/dev/null | head -40
    failures=$((failures + 1))
  fi
}

expect() {
  local name=$1 want_rc=$2 pattern=$3
  shift 4
  timeout "${EXPECT_TIMEOUT:-120}" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [[ $rc -eq $want_rc ]] && grep -qE -- "$pattern" "$tmp/err"
  check "$name (rc=$rc, want $want_rc, stderr /$pattern/)" $?
}

finish() {
  echo "$(basename "$0" .sh): $passed passed, $failures failed"
  [[ $failures -eq 0 ]]
}
