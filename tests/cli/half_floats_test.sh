#!/usr/bin/env bash
# End-to-end: every example (the small stand-ins, as examples_test.sh) converted to bf16 and to
# f16 — every f32 declaration rewritten — runs under every plan of examples/plans with
# `tapestry run --verify`: the fast kernels (PASS = within the bars, which add each stored
# 16-bit rounding) and `--kernels reference` (PASS = bitwise the naive run unless a reduction is
# split). A split reduction keeps its partial sums, and decompose-linear its product, in float32
# (src/rewrite/mixed_precision.h): stored in 16 bits they rounded once more than the unsplit
# graph, and linear_relu-split-in went over its bars (208 of 3200 cells in bf16). Every plan
# runs. Usage: half_floats_test.sh TAPESTRY ROOT
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

# cast in .tap: f32 → bf16 → f16 → f64 and back to f32, every dtype a kernel reads, under a
# split: --verify PASSes with both kernel sets.
printf '%s\n' 'X: f32[6, 8]' 'B = cast(X, to=bf16)' 'H = cast(gelu(B), to=f16)' \
  'D = cast(add(H, H), to=f64)' 'Y = cast(mul(D, D), to=f32)' 'output Y' >"$tmp/c.tap"
if "$tapestry" run "$tmp/c.tap" --split Y.d0=2 --split B.d1=2 --verify --seed 4 >"$tmp/out" 2>&1 &&
  "$tapestry" run "$tmp/c.tap" --split Y.d0=3 --verify --seed 4 --kernels reference >"$tmp/ref" 2>&1 &&
  grep -q "^PASS   Y: " "$tmp/out" && grep -q "^PASS   Y: " "$tmp/ref"; then
  echo "ok   cast chain"; passed=$((passed + 1))
else
  echo "FAIL cast chain"; cat "$tmp/out" "$tmp/ref"; failures=$((failures + 1))
fi

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
