# Shared by the end-to-end scripts of tests/cli (sourced, not run): pass/fail counters, a scratch
# directory $tmp removed on exit, and
#   check NAME RC                      count a pass when RC (a condition already run) is 0; else
#                                      print FAIL NAME and the outputs left in $tmp
#   expect NAME RC PATTERN -- CMD…     CMD exits with RC and its stderr matches PATTERN (grep -E);
#                                      each command runs under a timeout ($EXPECT_TIMEOUT, 120 s),
#                                      so a hang fails instead of blocking
#   finish                             print the tally; exit status 0 when nothing failed
#   same_npy DIR_A DIR_B N             every .npy of DIR_A bitwise in DIR_B, and N of them
#   ranks_target N OUT                 a target of N cpu-local ranks that share no memory (an
#                                      MPI run's placement), written to OUT
#   peak_ratios COST METRICS FIRST     each rank's (FIRST on) peak memory in `cost --json` COST
#                                      against `run --metrics` METRICS: prints the ratios; status
#                                      0 when the model is never above the measured peak by >10%
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

# scaled SECONDS: a timeout for a step of a test, times TAPESTRY_TEST_SLOWDOWN (4 in the
# sanitizer builds: tests/CMakeLists.txt), so `timeout "$(scaled 120)" …` fits ASan's pace.
scaled() {
  echo $(($1 * ${TAPESTRY_TEST_SLOWDOWN:-1}))
}

finish() {
  echo "$(basename "$0" .sh): $passed passed, $failures failed"
  [[ $failures -eq 0 ]]
}

same_npy() {
  local n=0
  for f in "$1"/*.npy; do
    cmp -s "$f" "$2/$(basename "$f")" || return 1
    n=$((n + 1))
  done
  [[ $n -eq $3 ]]
}

ranks_target() {
  /usr/bin/python3 - targets/cpu-local.json "$1" "$2" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1])); n = int(sys.argv[2])
t["name"] = f"{n} ranks"
t["nodes"] = {"count": 1, "devices": {"hw-thread": n}}
t["links"]["intra_node"]["shared_memory"] = False
for key in ("calibration", "worker_start_s"):
    t.pop(key, None)
json.dump(t, open(sys.argv[3], "w"))
EOF
}

peak_ratios() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
model = [d["peak_memory_bytes"] for d in json.load(open(sys.argv[1]))["per_device"]]
measured = [r["peak_memory_bytes"] for r in json.load(open(sys.argv[2]))["ranks"]]
ok = True
for rank in range(int(sys.argv[3]), len(measured)):
    ratio = model[rank] / measured[rank]
    print(f"{len(measured)} ranks, rank {rank}: model {model[rank]} B, measured {measured[rank]} B, ratio {ratio:.2f}")
    ok &= ratio <= 1.1
sys.exit(0 if ok else 1)
EOF
}
