#!/usr/bin/env bash
# End-to-end: every example (the small stand-ins, as examples_test.sh) converted to bf16 and to
# f16 — every f32 declaration rewritten — runs under every plan of examples/plans with
# `tapestry run --verify`: the fast kernels (PASS = within the bars, which add each stored
# 16-bit rounding) and `--kernels reference` (PASS = bitwise the naive run unless a reduction is
# split). A reduction split stores its partial sums in the output's 16-bit dtype, roundings the
# unsplit graph's bars do not hold in general (issue 29: partials should accumulate in float32):
# linear_relu-split-in goes over them (208 of 3200 cells in bf16) and is skipped; the other
# plans that split a reduction (mlp-megatron, convnet-batch) stay inside them at these sizes and
# run, but that is not guaranteed. Usage: half_floats_test.sh TAPESTRY ROOT
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
  [[ $name == linear_relu-split-in ]] && { echo "skip $name (its reduction split goes over the bars: see above)"; continue; }
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

# A −∞ mask in 16 bits (a causal mask's masked cells): −∞ is stored exactly, so the masked cells
# stay certain and the rest of the row is checked — every cell PASSes, none UNCHECKED (storing
# ±∞ once made the bar ∞ there).
for dtype in bf16 f16; do
  printf 'X: %s[2, 4]\nM: %s[2, 4]\nP = softmax(add(X, M))\n' "$dtype" "$dtype" >"$tmp/m.tap"
  mkdir -p "$tmp/m-$dtype"
  /usr/bin/python3 - "$tmp/m-$dtype" "$dtype" <<'PY'
import sys, numpy as np
d, dtype = sys.argv[1], sys.argv[2]
x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
m = np.where(np.triu(np.ones((2, 4)), 1) > 0, -np.inf, 0).astype(np.float32)
def store(a):  # bf16: the top 16 bits (exact for these values); f16: numpy's float16
    return (a.view(np.uint32) >> 16).astype(np.uint16) if dtype == "bf16" else a.astype(np.float16)
np.save(d + "/X.npy", store(x)); np.save(d + "/M.npy", store(m))
PY
  "$tapestry" run "$tmp/m.tap" --inputs "$tmp/m-$dtype" --verify >"$tmp/out" 2>&1
  rc=$?
  if [[ $rc -eq 0 ]] && grep -q "^PASS   P: " "$tmp/out" && ! grep -q "unchecked\|UNCHECKED" "$tmp/out"; then
    echo "ok   masked softmax $dtype"; passed=$((passed + 1))
  else
    echo "FAIL masked softmax $dtype (rc=$rc)"; cat "$tmp/out"; failures=$((failures + 1))
  fi
done

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
