#!/usr/bin/env bash
# End-to-end: `tapestry targets` lists and describes targets (presets and files, bad files exit
# 2 with their located error).
# Usage: targets_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
failures=0
passed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check NAME CONDITION-EXIT-CODE: count a pass or print a failure with the outputs
  if [[ $2 -eq 0 ]]; then passed=$((passed + 1)); else
    echo "FAIL $1"; cat "$tmp/out" "$tmp/err"; failures=$((failures + 1)); fi
}

# expect NAME RC PATTERN -- COMMAND…: COMMAND exits with RC and its stderr matches PATTERN.
expect() {
  local name=$1 want_rc=$2 pattern=$3
  shift 4
  timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [[ $rc -eq $want_rc ]] && grep -qE -- "$pattern" "$tmp/err"
  check "$name (rc=$rc, want $want_rc, stderr /$pattern/)" $?
}

# 1. The presets: listed, each described, each file equal to the compiled copy.
"$tapestry" targets >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -qE "^h100x8 +8 devices" "$tmp/out" && grep -qE "^h100x64 +64 devices" "$tmp/out" &&
  grep -qE "^a100x8 +8 devices" "$tmp/out"
check "targets lists the presets" $?
for preset in "$root"/targets/*.json; do
  name=$(basename "$preset" .json)
  "$tapestry" targets "$name" --json >"$tmp/preset.json" 2>"$tmp/err" &&
    "$tapestry" targets "$preset" --json >"$tmp/file.json" 2>>"$tmp/err" &&
    cmp -s "$tmp/preset.json" "$tmp/file.json"
  check "targets $name --json equals targets $preset --json" $?
done
"$tapestry" targets h100x64 >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -qE "^devices +64 on 8 nodes: gpu:0 … gpu:63" "$tmp/out" &&
  grep -qE "^inter +50 GB/s per direction" "$tmp/out" && grep -qE "^mesh +dp=8 × tp=8" "$tmp/out"
check "targets h100x64 describes it" $?

# 2. Bad targets and arguments: exit 2, the located error.
printf '{"name": "x",\n "name": "y"}' >"$tmp/dup.json"
expect "duplicate key" 2 "dup.json:2:2: duplicate key \"name\"" -- "$tapestry" targets "$tmp/dup.json"
sed 's/"memory_bandwidth_Bps": 3.35e12/"memory_bandwidth_Bps": -1/' "$root/targets/h100x8.json" >"$tmp/neg.json"
expect "negative bandwidth" 2 "neg.json: /device_types/h100-sxm/memory_bandwidth_Bps: must be > 0, got -1" -- \
  "$tapestry" targets "$tmp/neg.json"
sed 's/"count": 1,/"count": 2,/' "$root/targets/h100x8.json" >"$tmp/two.json"
expect "two nodes without inter_node" 2 "two.json: /links: missing member \"inter_node\"" -- \
  "$tapestry" targets "$tmp/two.json"
expect "unknown preset" 2 "unknown target \"h100x9\": no such file, and the presets are a100x8, h100x64, h100x8" -- \
  "$tapestry" targets h100x9
expect "missing file" 2 "nowhere/t.json: cannot open target file" -- "$tapestry" targets nowhere/t.json

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
