#!/usr/bin/env bash
# End-to-end: every example under every plan of examples/plans lowers, validates, and runs with
# `tapestry run --verify` twice: on the block executor with the fast kernels (PASS = within the
# documented bound, docs/runtime.md) and with `--kernels reference` (PASS = bitwise equal to the
# naive run, hence to the sequential application executor, unless a reduction is split). Then
# the run options: metrics, trace, memory limit, threads, bad input; and a graph that contradicts
# its kernels (validate, run, shard, --trust-ipfs).
# Usage: examples_test.sh TAPESTRY ROOT [full]
#   default: examples/linear_relu.tap and small stand-ins of mlp, convnet and transformer_large
#            (same op names);
#   full:    the examples at their real sizes (slow: the naive reference run alone takes ~7 min
#            for the MLP, ~3 min for transformer_large). There the `--kernels reference` rerun is
#            skipped for those two, whose reference-kernel runs the default mode already checks
#            on the small stand-ins.
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
  [[ $example == digits ]] && continue  # examples/digits/ needs real labels: tests/python/test_digits.py
  graph=$(graph_for "$name")
  tmp=$(mktemp -d)
  if ! "$tapestry" shard "$graph" --plan "$plan" -o "$tmp/sharded.json" 2>"$tmp/err" ||
     ! "$tapestry" validate "$tmp/sharded.json" --dialect application >/dev/null; then
    echo "FAIL $name: shard/validate"; cat "$tmp/err"; failures=$((failures + 1))
  elif ! "$tapestry" run "$graph" --plan "$plan" --verify --seed 3 --threads 2 >"$tmp/out" 2>&1; then
    echo "FAIL $name: run --verify"; cat "$tmp/out"; failures=$((failures + 1))
  elif ! [[ $mode == full && ($example == mlp || $example == transformer_large) ]] &&
       ! "$tapestry" run "$graph" --plan "$plan" --verify --seed 3 --kernels reference >"$tmp/ref" 2>&1; then
    echo "FAIL $name: run --verify --kernels reference"; cat "$tmp/ref"; failures=$((failures + 1))
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
if [[ $rc -eq 2 && ! -e "$tmp/out.json" ]] && grep -q "cannot read .*missing.json: no such file" "$tmp/err"; then passed=$((passed + 1)); else
  echo "FAIL missing plan: rc=$rc"; failures=$((failures + 1)); fi
# Plans that cannot be carried out (docs/rewrites.md, "Plan checks"): exit 2, the operation the
# plan named and the real reason, nothing written.
plan_fails() {  # name graph-text plan-text expected-substring
  printf '%s' "$2" >"$tmp/g.tap"; printf '%s' "$3" >"$tmp/p.json"
  "$tapestry" shard "$tmp/g.tap" --plan "$tmp/p.json" --explain -o "$tmp/out.json" 2>"$tmp/err"; rc=$?
  if [[ $rc -eq 2 && ! -e "$tmp/out.json" ]] && grep -qF -- "$4" "$tmp/err"; then passed=$((passed + 1)); else
    echo "FAIL plan $1: rc=$rc"; cat "$tmp/err"; failures=$((failures + 1)); fi
}
plan_fails duplicate-key 'X: f32[4, 4]
Y = relu(X)
output Y
' '{"ops": {"Y": {"split": {"d0": 2},
        "split": {"d1": 2}}}}' 'p.json:2:9: duplicate key "split"'
plan_fails uneven-min 'X: f32[10, 4]
Y = relu(reduce(X, op="min"))
output Y
' '{"ops": {"Y/reduce": {"split": {"block": 4}}}, "fuse": "auto"}' \
  "operation 'Y/reduce' (as 'Y' after the rewrites): cannot split reduction dim 'block' into 4: split-reduction refused: no elementwise kernel combines 'min' partials"
# A linear without batch dims (x: [in]) splits its `in` like any other (decompose-linear makes x
# the one-row matrix [1, in]; issue 25): even and uneven, with `out` cut and fused, on inputs
# from NumPy, every run PASSes --verify and its output agrees with NumPy's float64 result.
# (Without NumPy: --verify's float64 oracle alone.)
printf 'X: f32[-3:7]\nW: f32[3, 10]\nb: f32[3]\nY = relu(linear(X, W, b))\noutput Y\n' >"$tmp/lin1.tap"
mkdir -p "$tmp/lin1-in"
numpy=0
/usr/bin/python3 - "$tmp/lin1-in" <<'PY' 2>/dev/null && numpy=1
import sys
import numpy as np
r = np.random.default_rng(4)
for name, shape in (("X", (10,)), ("W", (3, 10)), ("b", (3,))):
    np.save(f"{sys.argv[1]}/{name}.npy", r.uniform(-1, 1, shape).astype(np.float32))
PY
for split in "--split Y/linear.in=2" "--split Y/linear.in=4 --split Y/linear.out=3" \
             "--split Y/linear.in=10 --split Y/linear.out=2 --split Y.d=2"; do
  rm -rf "$tmp/lin1-out"
  inputs=(--seed 4); [[ $numpy -eq 1 ]] && inputs=(--inputs "$tmp/lin1-in")
  # shellcheck disable=SC2086
  "$tapestry" run "$tmp/lin1.tap" $split "${inputs[@]}" --verify --outputs "$tmp/lin1-out" \
    >"$tmp/log" 2>&1; rc=$?
  if [[ $rc -eq 0 ]] && grep -q '^PASS   Y' "$tmp/log" &&
     { [[ $numpy -eq 0 ]] || /usr/bin/python3 - "$tmp/lin1-in" "$tmp/lin1-out" <<'PY'
import sys
import numpy as np
x, w, b = (np.load(f"{sys.argv[1]}/{n}.npy").astype(np.float64) for n in ("X", "W", "b"))
y = np.load(f"{sys.argv[2]}/Y.npy")
expected = np.maximum(w @ x + b, 0)
assert y.shape == (3,) and y.dtype == np.float32, (y.shape, y.dtype)
assert np.allclose(y, expected, rtol=1e-5, atol=1e-6), (y, expected)
PY
     }; then passed=$((passed + 1)); else
    echo "FAIL rank-1 linear $split: rc=$rc"; cat "$tmp/log"; failures=$((failures + 1)); fi
done
plan_fails substitute-on-relu 'X: f32[4]
Y = relu(X)
output Y
' '{"ops": {"Y": {"substitute": ["decompose-linear"]}}}' \
  "/ops/Y/substitute/0: decompose-linear rewrites a linear, but operation 'Y' is a relu"
# The issue's collision: V1's new matmul is V1/matmul.2, the user's V1/matmul keeps its plan.
printf 'X: f32[8, 6]\nA: f32[6, 12]\nW: f32[4, 12]\nb: f32[4]\nV1 = linear(matmul(X, A), W, b)\noutput V1\n' >"$tmp/v1.tap"
"$tapestry" run "$tmp/v1.tap" --split V1.in=2 --split V1.out=3 --split V1/matmul.m=2 --verify --kernels reference >"$tmp/log" 2>&1; rc=$?
"$tapestry" shard "$tmp/v1.tap" --split V1.in=2 --split V1/matmul.m=2 --explain -o /dev/null 2>"$tmp/err"
if [[ $rc -eq 0 ]] && grep -q '^PASS' "$tmp/log" && grep -q 'shard-grid on V1/matmul: 2 shards' "$tmp/err" &&
   grep -q 'split-reduction on V1/matmul.2 (from V1 in the plan)' "$tmp/err"; then passed=$((passed + 1)); else
  echo "FAIL V1/matmul collision: rc=$rc"; cat "$tmp/log" "$tmp/err"; failures=$((failures + 1)); fi
mkdir "$tmp/in"
"$tapestry" run "$root/examples/linear_relu.tap" --inputs "$tmp/in" 2>"$tmp/err"; rc=$?
if [[ $rc -eq 2 ]] && grep -q "missing input file" "$tmp/err"; then passed=$((passed + 1)); else
  echo "FAIL missing input: rc=$rc"; failures=$((failures + 1)); fi
# Round trip through .npy: write outputs, feed them back as inputs of an identity-ish graph.
"$tapestry" run "$root/examples/linear_relu.tap" --outputs "$tmp/out" --seed 5 >/dev/null 2>"$tmp/err"; rc=$?
if [[ $rc -eq 0 && -s "$tmp/out/Y.npy" ]]; then passed=$((passed + 1)); else
  echo "FAIL --outputs: rc=$rc"; cat "$tmp/err"; failures=$((failures + 1)); fi
# An .npy of the wrong shape (Y is [100, 32], X is [100, 12]) or dtype: an error naming the file.
mkdir -p "$tmp/bad"
cp "$tmp/out/Y.npy" "$tmp/bad/X.npy"; cp "$tmp/out/Y.npy" "$tmp/bad/W.npy"; cp "$tmp/out/Y.npy" "$tmp/bad/b.npy"
"$tapestry" run "$root/examples/linear_relu.tap" --inputs "$tmp/bad" >/dev/null 2>"$tmp/err"; rc=$?
if [[ $rc -eq 2 ]] && grep -q "X.npy" "$tmp/err"; then passed=$((passed + 1)); else
  echo "FAIL wrong-shape input: rc=$rc"; cat "$tmp/err"; failures=$((failures + 1)); fi
/usr/bin/python3 - "$tmp/bad" <<'PY' 2>/dev/null || true
import sys
try:
    import numpy as np
except ImportError:
    raise SystemExit(0)
np.save(sys.argv[1] + "/X.npy", np.zeros((100, 12), dtype=np.float64))
np.save(sys.argv[1] + "/W.npy", np.zeros((32, 12), dtype=np.float32))
np.save(sys.argv[1] + "/b.npy", np.zeros((32,), dtype=np.float32))
PY
if [[ -s "$tmp/bad/W.npy" ]] && /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  "$tapestry" run "$root/examples/linear_relu.tap" --inputs "$tmp/bad" >/dev/null 2>"$tmp/err"; rc=$?
  if [[ $rc -eq 2 ]] && grep -q "X.npy: dtype float64" "$tmp/err"; then passed=$((passed + 1)); else
    echo "FAIL wrong-dtype input: rc=$rc"; cat "$tmp/err"; failures=$((failures + 1)); fi
fi

# Metrics and trace: the documented top-level keys, one trace event per application.
lr="$root/examples/linear_relu.tap"
"$tapestry" run "$lr" --split Y/linear.batch=4 --threads 2 --metrics "$tmp/m.json" --trace "$tmp/t.json" >"$tmp/log" 2>&1; rc=$?
if [[ $rc -eq 0 ]] && python3 - "$tmp/m.json" "$tmp/t.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
assert all(k in m for k in ("wall_s", "flops", "gflops", "peak_memory_bytes", "threads")), m.keys()
assert m["threads"] == 2 and m["flops"] == 2 * 100 * 32 * 12 + 100 * 32, m["flops"]
assert sum(1 for e in t["traceEvents"] if e["ph"] == "X") == m["applications"] == 5
PY
then passed=$((passed + 1)); else echo "FAIL --metrics/--trace: rc=$rc"; cat "$tmp/log"; failures=$((failures + 1)); fi
# The sequential application executor agrees bitwise with the naive run.
"$tapestry" run "$lr" --split Y/linear.out=4 --executor application --kernels reference --verify >"$tmp/log" 2>&1; rc=$?
if [[ $rc -eq 0 ]] && grep -q "bar: bitwise" "$tmp/log"; then passed=$((passed + 1)); else
  echo "FAIL --executor application: rc=$rc"; cat "$tmp/log"; failures=$((failures + 1)); fi
# A memory limit below the estimate fails before running, naming the estimate; nothing written.
"$tapestry" run "$lr" --memory-limit 1K --outputs "$tmp/lim" --metrics "$tmp/lim.json" >/dev/null 2>"$tmp/err"; rc=$?
if [[ $rc -eq 2 && ! -e "$tmp/lim/Y.npy" && ! -e "$tmp/lim.json" ]] && grep -q "memory limit 1.00 KiB exceeded" "$tmp/err"; then
  passed=$((passed + 1)); else echo "FAIL --memory-limit: rc=$rc"; cat "$tmp/err"; failures=$((failures + 1)); fi
for bad in "--memory-limit lots" "--threads 0" "--executor gpu" "--metrics $tmp/no/such/dir/m.json" \
           "--executor application --threads 2"; do
  # shellcheck disable=SC2086
  "$tapestry" run "$lr" $bad >/dev/null 2>"$tmp/err"; rc=$?
  if [[ $rc -eq 2 && -s "$tmp/err" ]]; then passed=$((passed + 1)); else
    echo "FAIL bad option '$bad': rc=$rc"; cat "$tmp/err"; failures=$((failures + 1)); fi
done

# A graph whose IPFs contradict its kernel (tests/data/cli/linear_relu_bad_bias.json: Y/linear's
# bias read at b[0] for every column). validate: the exact issue, exit 1; run and shard refuse
# it (exit 2, naming the operation and the port, nothing written) unless --trust-ipfs.
bad="$root/tests/data/cli/linear_relu_bad_bias.json"
"$tapestry" validate "$bad" >"$tmp/issues"; rc=$?
if [[ $rc -eq 1 ]] && diff "$tmp/issues" "$root/tests/data/cli/linear_relu_bad_bias.issues.txt"; then
  passed=$((passed + 1)); else echo "FAIL validate bad bias: rc=$rc"; cat "$tmp/issues"; failures=$((failures + 1)); fi
"$tapestry" validate "$bad" --format json >"$tmp/issues.json"; rc=$?
if [[ $rc -eq 1 ]] && python3 - "$tmp/issues.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["valid"] and r["errors"] == 1, r
i = r["issues"][0]
assert i["type"] == "operation-kernel-agreement" and i["params"]["field"] == "inputs.bias", i
assert i["params"]["graph"]["affineMap"]["projection"] == [[0, 0, 0]], i
assert i["params"]["derived"]["affineMap"]["projection"] == [[0, 1, 0]], i
PY
then passed=$((passed + 1)); else echo "FAIL validate --format json bad bias: rc=$rc"; failures=$((failures + 1)); fi
for cmd in "run $bad --verify --quiet" "shard $bad -o $tmp/bad_sharded.json"; do
  # shellcheck disable=SC2086
  "$tapestry" $cmd >/dev/null 2>"$tmp/err"; rc=$?
  if [[ $rc -eq 2 && ! -e "$tmp/bad_sharded.json" ]] &&
     grep -q "Operation IPF differs from its kernel's" "$tmp/err" && grep -q "inputs.bias" "$tmp/err" &&
     grep -q "Operation: Y/linear" "$tmp/err"; then passed=$((passed + 1)); else
    echo "FAIL ${cmd%% *} of bad bias: rc=$rc"; cat "$tmp/err"; failures=$((failures + 1)); fi
  # shellcheck disable=SC2086
  "$tapestry" $cmd --trust-ipfs >/dev/null 2>"$tmp/err"; rc=$?
  if [[ $rc -eq 0 ]]; then passed=$((passed + 1)); else
    echo "FAIL ${cmd%% *} --trust-ipfs of bad bias: rc=$rc"; cat "$tmp/err"; failures=$((failures + 1)); fi
done
rm -rf "$tmp"

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
