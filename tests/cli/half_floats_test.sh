#!/usr/bin/env bash
# End-to-end: every example (the small stand-ins, as examples_test.sh) converted to bf16 and to
# f16 — every f32 declaration rewritten — runs under every plan of examples/plans with
# `tapestry run --verify`: the fast kernels (PASS = within the bars, which add each stored
# 16-bit rounding) and `--kernels reference` (PASS = bitwise the naive run unless a reduction is
# split). Plans that split a reduction are skipped: the split stores its partial sums in the
# output's 16-bit dtype, roundings the unsplit graph's bars do not hold (issue 29: partials
# should accumulate in float32). Usage: half_floats_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
failures=0
passed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for plan in "$root"/examples/plans/*.json; do
  name=$(basename "$plan" .json)
  example=${name%%-*}
  [[ $example == transformer_block || $example == digits ]] && continue  # as examples_test.sh
  [[ $name == linear_relu-split-in ]] && { echo "skip $name (a reduction split: see above)"; continue; }
  graph="$root/tests/data/cli/${example}_small.tap"
  [[ -f $graph ]] || graph="$root/examples/$example.tap"
  for dtype in bf16 f16; do
    sed -E "s/\bf32\[/$dtype[/g" "$graph" >"$tmp/g.tap"
    if ! grep -q "$dtype\[" "$tmp/g.tap"; then
      echo "FAIL $name $dtype: no f32 declaration to convert"; failures=$((failures + 1)); continue
    fi
    if ! "$tapestry" run "$tmp/g.tap" --plan "$plan" --verify --seed 3 --threads 2 >"$tmp/out" 2>&1; then
      echo "FAIL $name $dtype: run --verify"; cat "$tmp/out"; failures=$((failures + 1))
    elif ! "$tapestry" run "$tmp/g.tap" --plan "$plan" --verify --seed 3 --kernels reference >"$tmp/ref" 2>&1; then
      echo "FAIL $name $dtype: run --verify --kernels reference"; cat "$tmp/ref"; failures=$((failures + 1))
    else
      echo "ok   $name $dtype ($(grep -c '^PASS' "$tmp/out") outputs verified)"; passed=$((passed + 1))
    fi
  done
done

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
