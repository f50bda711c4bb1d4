#!/usr/bin/env bash
# End-to-end tests of argmax, argmin, gather and pow (kernels/reductions.yaml, layout.yaml,
# elementwise_binary.yaml) against NumPy in float64, with both kernel sets; sharded runs bitwise
# the naive one; the verifier's bar for an index (rule `index`: a wrong index FAILs, a near-tie
# within the inputs' errors does not); the run-time errors (an index out of range, integer pow
# with a negative exponent). Skipped (exit 77) without /usr/bin/python3 and numpy.
#
#   index_kernels_test.sh TAPESTRY REPO_ROOT
tapestry=$1
root=$2
source "$root/tests/cli/cli_testing.sh"

python=/usr/bin/python3
if ! "$python" -c "import numpy" 2>/dev/null; then
  echo "SKIP: /usr/bin/python3 with numpy is needed"
  exit 77
fi

# ---- the cases: graphs, inputs and NumPy's float64 results -------------------------------------
# Each case is a directory: g.tap, in/*.npy, want/<output>.npy (NumPy) and `splits` (the plan's
# --split flags, one line).
"$python" - "$tmp/cases" <<'EOF'
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(7)


def case(name, tap, inputs, want, splits):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "in"))
    os.makedirs(os.path.join(d, "want"))
    open(os.path.join(d, "g.tap"), "w").write(tap)
    for k, v in inputs.items():
        np.save(os.path.join(d, "in", k + ".npy"), v)
    for k, v in want.items():
        np.save(os.path.join(d, "want", k + ".npy"), v)
    open(os.path.join(d, "splits"), "w").write(" ".join(f"--split {s}" for s in splits))


def decl(name, a):
    kind = {np.float32: "f32", np.float64: "f64", np.int64: "i64", np.int32: "i32"}[a.dtype.type]
    return f"{name}: {kind}[{', '.join(str(s) for s in a.shape)}]\n"


def arg(x, axis, is_min, last, keep):
    """numpy's argmax/argmin (NaN wins, the first), or the last position with `last`."""
    if last:
        r = np.flip(x, axis)
        i = (np.argmin if is_min else np.argmax)(r, axis=axis)
        i = x.shape[axis] - 1 - i
    else:
        i = (np.argmin if is_min else np.argmax)(x, axis=axis)
    return np.expand_dims(i, axis) if keep else i


# Rows with ties (small integers), NaN (first / several), ±inf; every axis, negative too.
x = rng.integers(-3, 4, size=(4, 5, 6)).astype(np.float32)
x[0, 1, 2] = np.nan
x[1, :, 3] = np.nan
x[2, 2, :] = np.inf
x[3, 0, 0] = -np.inf
for kernel in ("argmax", "argmin"):
    for axis in (0, 1, -1):
        for keep in (False, True):
            for last in (False, True):
                name = f"{kernel}_a{axis}_k{int(keep)}_l{int(last)}"
                params = f"axis={axis}, keepdims={'true' if keep else 'false'}, " \
                         f"select_last_index={'true' if last else 'false'}"
                want = arg(x.astype(np.float64), axis, kernel == "argmin", last, keep)
                a = axis % 3
                others = [d for d in range(3) if d != a]
                # The first remaining index dim: pre0/pre or post0/post (docs/metakernels.md).
                split = ("pre0" if a == 2 else "pre") if others[0] < a else ("post0" if a == 0 else "post")
                case(name, decl("X", x) + f"I = {kernel}(X, {params})\noutput I\n", {"X": x},
                     {"I": want.astype(np.int64)}, [f"I.{split}=2"])
# f64 and an integer input, the .tap default (axis −1, keepdims false).
x64 = rng.standard_normal((3, 7))
case("argmax_f64_default", decl("X", x64) + "I = argmax(X)\noutput I\n", {"X": x64},
     {"I": np.argmax(x64, axis=-1)}, ["I.pre=3"])
xi = rng.integers(-5, 5, size=(6, 4)).astype(np.int32)
case("argmin_i32", decl("X", xi) + "I = argmin(X, axis=0)\noutput I\n", {"X": xi},
     {"I": np.argmin(xi, axis=0)}, ["I.post=2"])

# gather: an embedding lookup (int64 ids, negative ones wrap), a middle axis with int32 indices
# of rank 2, rank-0 indices.
table = rng.standard_normal((11, 5)).astype(np.float32)
ids = rng.integers(-11, 11, size=(3, 4)).astype(np.int64)
case("gather_embedding", decl("T", table) + decl("ids", ids) + "E = gather(T, ids)\noutput E\n",
     {"T": table, "ids": ids}, {"E": np.take(table, ids, axis=0)}, ["E.i0=3", "E.post=5"])
x3 = rng.standard_normal((2, 6, 3))
i32 = rng.integers(-6, 6, size=(2, 2)).astype(np.int32)
case("gather_axis1", decl("X", x3) + decl("J", i32) + "G = gather(X, J, axis=1)\noutput G\n",
     {"X": x3, "J": i32}, {"G": np.take(x3, i32, axis=1)}, ["G.pre=2", "G.i1=2"])
i0 = np.array(-2, np.int64)
case("gather_scalar", decl("X", x3) + "J: i64[]\nG = gather(X, J, axis=2)\noutput G\n",
     {"X": x3, "J": i0}, {"G": np.take(x3, i0, axis=2)}, ["G.pre0=2"])

# pow: broadcasting, negative bases with integer exponents, 0^0, a fractional power of a
# negative base (NaN), f64; integers with a non-negative exponent.
a = rng.uniform(0.2, 3, size=(4, 6)).astype(np.float32)
a[0, :3] = [-2.0, -1.5, 0.0]
b = rng.uniform(-3, 3, size=(6,)).astype(np.float32)
b[:3] = [3.0, 2.0, 0.0]
with np.errstate(all="ignore"):
    want = np.power(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
case("pow_broadcast", decl("A", a) + decl("B", b) + "P = pow(A, B)\noutput P\n", {"A": a, "B": b},
     {"P": want}, ["P.d0=2", "P.d1=3"])
a64 = rng.uniform(0.5, 2, size=(3, 1, 4))
b64 = rng.uniform(-2, 2, size=(5, 1))
case("pow_f64", decl("A", a64) + decl("B", b64) + "P = pow(A, B)\noutput P\n",
     {"A": a64, "B": b64}, {"P": np.power(a64, b64)}, ["P.d1=5"])
ai = rng.integers(-4, 5, size=(8,)).astype(np.int64)
bi = rng.integers(0, 6, size=(8,)).astype(np.int64)
case("pow_i64", decl("A", ai) + decl("B", bi) + "P = pow(A, B)\noutput P\n", {"A": ai, "B": bi},
     {"P": np.power(ai, bi)}, ["P.d=2"])
EOF
[[ $? -eq 0 ]] || { echo "FAIL: writing the cases"; exit 1; }

# same DIR RESULT_DIR: every output equals NumPy's (integers exactly, floats within 4 ulp of the
# result's dtype, NaN where NumPy has NaN).
same() {
  "$python" - "$1/want" "$2" <<'EOF'
import os
import sys

import numpy as np

want_dir, got_dir = sys.argv[1], sys.argv[2]
for f in sorted(os.listdir(want_dir)):
    w, g = np.load(os.path.join(want_dir, f)), np.load(os.path.join(got_dir, f))
    assert g.shape == w.shape and g.dtype == w.dtype, (f, g.shape, w.shape, g.dtype, w.dtype)
    if np.issubdtype(w.dtype, np.integer):
        assert (g == w).all(), (f, np.argwhere(g != w)[:5], g, w)
    else:
        eps = np.finfo(w.dtype).eps
        ok = (np.isnan(w) & np.isnan(g)) | (g == w) | (np.abs(g - w) <= 4 * eps * np.abs(w))
        assert ok.all(), (f, np.argwhere(~ok)[:5], g[~ok][:5], w[~ok][:5])
EOF
}

for d in "$tmp"/cases/*/; do
  name=$(basename "$d")
  read -r -a splits <"$d/splits"
  for kernels in fast reference; do
    "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/$kernels" --kernels "$kernels" \
      --quiet >"$tmp/out" 2>"$tmp/err" && same "$d" "$d/$kernels" >"$tmp/log" 2>&1
    check "$name: $kernels kernels equal NumPy" $?
  done
  # Sharded: bitwise the naive run with the reference kernels; within the bars with the fast.
  "$tapestry" run "$d/g.tap" --inputs "$d/in" "${splits[@]}" --kernels reference --verify \
    --quiet >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^PASS .*bitwise equal to the naive run" "$tmp/out" &&
    ! grep -q "^ran \([0-9]*\) applications of \1 operations" "$tmp/out"
  check "$name: sharded ${splits[*]}: bitwise the naive run, PASS" $?
  [[ $name == arg*_a* ]] && continue  # the many argmax variants: the fast sharded run once below
  "$tapestry" run "$d/g.tap" --inputs "$d/in" "${splits[@]}" --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
    ! grep -q "^FAIL\|^UNCHECKED" "$tmp/out"
  check "$name: sharded, fast kernels: --verify PASSes" $?
done

d=$tmp/cases/argmax_a1_k1_l1
"$tapestry" run "$d/g.tap" --inputs "$d/in" --split I.pre=2 --split I.post=3 --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
  grep -q "^PASS   I: " "$tmp/out"
check "argmax_a1_k1_l1: split along both other dims, fast kernels: --verify PASSes" $?

# ---- the verifier's bar for an index --------------------------------------------------------------
# argmax(relu(X) + Y): the maximum of each row stands apart (a gap of 1), so the bar is 0 and an
# index moved by one FAILs; NumPy's own result PASSes.
"$python" - "$tmp/bar" <<'EOF'
import os
import sys

import numpy as np

d = sys.argv[1]
os.makedirs(d + "/in")
os.makedirs(d + "/want")
os.makedirs(d + "/wrong")
rng = np.random.default_rng(3)
x = rng.integers(-20, 20, size=(8, 16)).astype(np.float32) * 0.25
y = rng.standard_normal((8, 16)).astype(np.float32) * 1e-3
rows = np.arange(8)
x[rows, rng.integers(0, 16, 8)] = 10.0          # one clear maximum per row
open(d + "/g.tap", "w").write("X: f32[8, 16]\nY: f32[8, 16]\nS = add(exp(X), Y)\n"
                              "I = argmax(S, axis=1)\noutput I\n")
np.save(d + "/in/X.npy", x)
np.save(d + "/in/Y.npy", y)
i = np.argmax(np.exp(x.astype(np.float64)) + y, axis=1)
np.save(d + "/want/I.npy", i)
i[3] = (i[3] + 1) % 16
np.save(d + "/wrong/I.npy", i)
# A near tie: two cells of a row within float32 rounding of each other after exp, so either may
# be the computed argmax — the bar covers both, neither result FAILs.
t = np.zeros((1, 4), np.float32)
t[0, 1] = 1.0
t[0, 3] = np.nextafter(np.float32(1.0), np.float32(2.0))
os.makedirs(d + "/tie/in")
os.makedirs(d + "/tie/a")
os.makedirs(d + "/tie/b")
open(d + "/tie/g.tap", "w").write("X: f32[1, 4]\nI = argmax(exp(X), axis=1)\noutput I\n")
np.save(d + "/tie/in/X.npy", t)
np.save(d + "/tie/a/I.npy", np.array([1], np.int64))
np.save(d + "/tie/b/I.npy", np.array([3], np.int64))
np.save(d + "/tie/far.npy", np.array([0], np.int64))
EOF
b=$tmp/bar
"$tapestry" verify "$b/g.tap" --inputs "$b/in" --outputs "$b/want" >"$tmp/out" 2>"$tmp/err" &&
  grep -q "^PASS   I: " "$tmp/out"
check "index bar: NumPy's argmax PASSes verify" $?
"$tapestry" verify "$b/g.tap" --inputs "$b/in" --outputs "$b/wrong" >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 ]] && grep -q "^FAIL   I: " "$tmp/out"
check "index bar: one index moved by one FAILs verify (rc=$rc)" $?
"$tapestry" run "$b/g.tap" --inputs "$b/in" --split I.pre=4 --verify >"$tmp/out" 2>"$tmp/err" &&
  grep -q "^PASS   I: max |Δ| 0.00e+00 vs float64 .*bar per cell [0-9.]*e-1[0-9]…[0-9.]*e-1[0-9]" "$tmp/out"
check "index bar: a sharded run PASSes with bars of ~0 (the maxima stand apart)" $?
for which in a b; do
  "$tapestry" verify "$b/tie/g.tap" --inputs "$b/tie/in" --outputs "$b/tie/$which" >"$tmp/out" 2>"$tmp/err"
  check "index bar: a near tie, either index ($which) PASSes" $?
done
mkdir -p "$b/tie/far" && cp "$b/tie/far.npy" "$b/tie/far/I.npy"
"$tapestry" verify "$b/tie/g.tap" --inputs "$b/tie/in" --outputs "$b/tie/far" >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 ]] && grep -q "^FAIL   I: " "$tmp/out"
check "index bar: a near tie, an index outside it FAILs (rc=$rc)" $?

# ---- run-time errors ------------------------------------------------------------------------------
d=$tmp/cases/gather_embedding
mkdir -p "$tmp/bad"
cp "$d/in/T.npy" "$tmp/bad/"
"$python" -c "
import numpy as np
i = np.zeros((3, 4), np.int64); i[2, 1] = 11; np.save('$tmp/bad/ids.npy', i)"
expect "gather: an index out of range names the operation and the index" 2 \
  "operation 'E' \(kernel gather\): index 11 \(the indices' cell \(2, 1\)\) is out of range: axis 0 of x has 11 cells, so an index is in −11 … 10" \
  -- "$tapestry" run "$d/g.tap" --inputs "$tmp/bad" --split E.i0=3
"$python" -c "
import numpy as np
i = np.full((3, 4), -12, np.int64); np.save('$tmp/bad/ids.npy', i)"
expect "gather: an index below −n, fast kernels" 2 "index -12 \(the indices' cell \(0, 0\)\) is out of range" \
  -- "$tapestry" run "$d/g.tap" --inputs "$tmp/bad"
# Generated inputs: integers in −8 … 8, valid for an axis of 9 cells or more, not for fewer.
printf 'T: f32[9, 4]\nids: i64[5]\nE = gather(T, ids)\noutput E\n' >"$tmp/gen9.tap"
"$tapestry" run "$tmp/gen9.tap" --verify --quiet >"$tmp/out" 2>"$tmp/err" && grep -q "^PASS   E" "$tmp/out"
check "gather: generated ids index an axis of 9 cells" $?
printf 'T: f32[4, 4]\nids: i64[64]\nE = gather(T, ids)\noutput E\n' >"$tmp/gen4.tap"
expect "gather: generated ids out of range of 4 cells: a clear error" 2 "operation 'E' \(kernel gather\): index -?[0-9]+ .* is out of range" \
  -- "$tapestry" run "$tmp/gen4.tap"
printf 'A: i64[4]\nB: i64[4]\nP = pow(A, B)\noutput P\n' >"$tmp/ipow.tap"
"$python" -c "
import numpy as np, os
os.makedirs('$tmp/ipow', exist_ok=True)
np.save('$tmp/ipow/A.npy', np.array([2, 3, 4, 5])); np.save('$tmp/ipow/B.npy', np.array([1, 0, -1, 2]))"
expect "pow: an integer negative exponent is an error" 2 \
  "operation 'P' \(kernel pow\): integer pow with a negative exponent" -- "$tapestry" run "$tmp/ipow.tap" --inputs "$tmp/ipow"
printf 'X: f32[]\nI = argmax(X)\noutput I\n' >"$tmp/scalar.tap"
expect "argmax of a scalar: an error naming the kernel" 2 "argmax: parameter axis=-1 is out of range for X of rank 0" \
  -- "$tapestry" run "$tmp/scalar.tap"
printf 'X: f32[4, 2]\nJ: f32[3]\nG = gather(X, J)\noutput G\n' >"$tmp/float_ids.tap"
expect "gather with float indices: refused by the signature" 2 "gather: .*J" \
  -- "$tapestry" run "$tmp/float_ids.tap"

finish
