#!/usr/bin/env bash
# End-to-end checks of the mask kernels (kernels/masks.yaml: equal, less, less_equal, greater,
# greater_equal, logical_and/or/xor/not, where) and their error rules (decision, choice):
#   * every kernel, with both kernel sets, against NumPy float64 — broadcasting, ties, ±0, ±inf
#     and NaN operands, where with ±inf/NaN in the branch not taken, an i64 mask choosing f32;
#   * sharded runs bitwise equal to the naive run (--verify, reference kernels);
#   * the verifier's faults: a comparison computed as another (less as less_equal on exact ties),
#     a where with its branches swapped, a flipped mask cell with a margin — each FAILs; a near-tie
#     within the operands' bars flipped — PASSes (its bar is 1), and nothing is UNCHECKED;
#   * call errors (dtype mismatch, shapes that do not broadcast), exit 2 with the location.
# Usage: masks_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"
python=/usr/bin/python3  # Debian's, with numpy

# ---- every kernel against NumPy float64 --------------------------------------------------------
mkdir -p "$tmp/in"
"$python" - "$tmp/in" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(5)
a = rng.integers(-3, 4, size=(6, 8)).astype(np.float32)       # small integers: many exact ties
a[0, :6] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 2.5]
b = rng.integers(-3, 4, size=(8,)).astype(np.float32)          # broadcasts along dim 0
b[:6] = [np.inf, 1.0, np.nan, -0.0, 0.0, 2.5]
x = rng.standard_normal((6, 8)).astype(np.float32)
x[1, :3] = [np.inf, -np.inf, np.nan]                           # in cells where's cond may drop
y = rng.standard_normal((6, 1)).astype(np.float32)
y[2, 0] = -np.inf
c64 = rng.integers(0, 2, size=(6, 8)).astype(np.int64)
for name, v in dict(A=a, B=b, X=x, Y=y, C=c64).items():
    np.save(f"{d}/{name}.npy", v)
EOF
cat >"$tmp/all.tap" <<'EOF'
A: f32[6, 8]
B: f32[8]
X: f32[6, 8]
Y: f32[6, 1]
C: i64[6, 8]
EQ = equal(A, B)
LT = less(A, B)
LE = less_equal(A, B)
GT = greater(A, B)
GE = greater_equal(A, B)
AND = logical_and(A, B)
OR = logical_or(A, B)
XOR = logical_xor(A, B)
NOT = logical_not(A)
W = where(LT, X, Y)
WA = where(A, X, Y)
WC = where(C, X, Y)
CI = less(C, C)
output EQ, LT, LE, GT, GE, AND, OR, XOR, NOT, W, WA, WC, CI
EOF
cat >"$tmp/check.py" <<'EOF'
import sys, numpy as np
i, o = sys.argv[1], sys.argv[2]
A, B, X, Y, C = (np.load(f"{i}/{n}.npy") for n in "ABXYC")
a, b, x, y = (v.astype(np.float64) for v in (A, B, X, Y))
lt = (a < b)
want = dict(EQ=a == b, LT=lt, LE=a <= b, GT=a > b, GE=a >= b,
            AND=(a != 0) & (b != 0), OR=(a != 0) | (b != 0), XOR=(a != 0) ^ (b != 0), NOT=a == 0,
            W=np.where(lt, x, y), WA=np.where(a != 0, x, y), WC=np.where(C != 0, x, y),
            CI=np.zeros(C.shape, bool))
bad = []
for name, w in want.items():
    got = np.load(f"{o}/{name}.npy")
    w = np.asarray(w)
    if w.dtype == bool:
        w = w.astype(got.dtype)
    dtype_ok = got.dtype == (np.int64 if name == "CI" else np.float32)
    if not dtype_ok or got.shape != w.shape or not np.array_equal(got.astype(np.float64), w.astype(np.float64), equal_nan=True):
        bad.append(name)
print("mismatch: " + " ".join(bad) if bad else "all equal")
sys.exit(1 if bad else 0)
EOF
for kernels in fast reference; do
  "$tapestry" run "$tmp/all.tap" --inputs "$tmp/in" --outputs "$tmp/out_$kernels" --kernels "$kernels" >"$tmp/log" 2>"$tmp/err"
  "$python" "$tmp/check.py" "$tmp/in" "$tmp/out_$kernels" >"$tmp/log" 2>&1
  check "every mask kernel equals NumPy float64 ($kernels kernels)" $?
done
# The same graph verified: masks of exact inputs are exact, where's chosen ±inf certain.
"$tapestry" run "$tmp/all.tap" --inputs "$tmp/in" --verify >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && [[ $(grep -c '^PASS ' "$tmp/log") -eq 13 ]] && ! grep -q -i unchecked "$tmp/log"
check "run --verify: all 13 outputs PASS, none unchecked" $?

# ---- sharded == naive, bitwise ---------------------------------------------------------------
cat >"$tmp/masked.tap" <<'EOF'
X: f32[64, 48]
T: f32[48]
Fill: f32[]
M = greater(X, T)
N = logical_not(logical_or(M, less(X, neg(T))))
Z = where(logical_xor(M, N), X, Fill)
output Z
EOF
"$tapestry" run "$tmp/masked.tap" --split Z.d0=4 --kernels reference --verify >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q "^PASS   Z: bitwise equal to the naive run" "$tmp/log"
check "a mask chain split 4 ways: bitwise the naive run" $?
"$tapestry" run "$tmp/masked.tap" --split Z.d1=3 --split M.d0=2 --verify >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q "^PASS   Z: " "$tmp/log"; check "fast kernels, two splits: PASS" $?

# ---- the verifier's faults -------------------------------------------------------------------
# Outputs of a wrong graph judged against the right one (tapestry verify --outputs): exact ties
# compared by less_equal instead of less; where's branches swapped (mask with margins).
printf 'A: f32[6, 8]\nB: f32[8]\nLT = less(A, B)\noutput LT\n' >"$tmp/lt.tap"
sed 's/less(/less_equal(/' "$tmp/lt.tap" >"$tmp/le.tap"
"$tapestry" run "$tmp/le.tap" --inputs "$tmp/in" --outputs "$tmp/le_out" >/dev/null 2>&1
"$tapestry" verify "$tmp/lt.tap" --inputs "$tmp/in" --outputs "$tmp/le_out" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 1 ]] && grep -q "^FAIL   LT: " "$tmp/log"; check "less computed as less_equal on exact ties FAILs" $?
printf 'X: f32[6, 8]\nY: f32[6, 1]\nH: f32[]\nW = where(greater(X, H), X, Y)\noutput W\n' >"$tmp/w.tap"
sed 's/where(greater(X, H), X, Y)/where(greater(X, H), Y, X)/' "$tmp/w.tap" >"$tmp/w_swapped.tap"
"$python" -c "import numpy as np; np.save('$tmp/in/H.npy', np.float32(0.5))"
"$tapestry" run "$tmp/w_swapped.tap" --inputs "$tmp/in" --outputs "$tmp/w_out" >/dev/null 2>&1
"$tapestry" verify "$tmp/w.tap" --inputs "$tmp/in" --outputs "$tmp/w_out" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 1 ]] && grep -q "^FAIL   W: " "$tmp/log"; check "where with its branches swapped FAILs" $?
"$tapestry" run "$tmp/w.tap" --inputs "$tmp/in" --outputs "$tmp/w_ok" >/dev/null 2>&1
"$tapestry" verify "$tmp/w.tap" --inputs "$tmp/in" --outputs "$tmp/w_ok" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q "^PASS   W: " "$tmp/log"; check "the right where PASSes (±inf and NaN in X)" $?

# Near-ties: M = less(matmul(P, Q), R) where R is the float64 product rounded to f32 in its first
# half (a tie within matmul's bars: either answer is right) and the product + 1 in the second (a
# margin: the answer is certain). Flipping a near-tie cell PASSes; flipping a margin cell FAILs.
"$python" - "$tmp/in" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(11)
p = rng.standard_normal((16, 64)).astype(np.float32)
q = rng.standard_normal((64, 8)).astype(np.float32)
r = (p.astype(np.float64) @ q.astype(np.float64)).astype(np.float32)
r[8:] += 1
np.save(f"{d}/P.npy", p); np.save(f"{d}/Q.npy", q); np.save(f"{d}/R.npy", r)
EOF
printf 'P: f32[16, 64]\nQ: f32[64, 8]\nR: f32[16, 8]\nM = less(matmul(P, Q), R)\noutput M\n' >"$tmp/tie.tap"
"$tapestry" run "$tmp/tie.tap" --inputs "$tmp/in" --outputs "$tmp/tie" --split M/matmul.k=4 --verify >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q "^PASS   M: " "$tmp/log" && ! grep -q -i unchecked "$tmp/log"
check "near-ties under a split reduction: PASS, nothing unchecked" $?
"$python" -c "import numpy as np; m = np.load('$tmp/tie/M.npy'); m[:8] = 1 - m[:8]; np.save('$tmp/tie/M.npy', m)"
"$tapestry" verify "$tmp/tie.tap" --inputs "$tmp/in" --outputs "$tmp/tie" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q "^PASS   M: " "$tmp/log"; check "every near-tie flipped: still PASS (bar 1)" $?
"$python" -c "import numpy as np; m = np.load('$tmp/tie/M.npy'); m[8, 0] = 1 - m[8, 0]; np.save('$tmp/tie/M.npy', m)"
"$tapestry" verify "$tmp/tie.tap" --inputs "$tmp/in" --outputs "$tmp/tie" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 1 ]] && grep -q "^FAIL   M: 1 of 128 cells outside their bar" "$tmp/log"
check "one flipped cell with a margin FAILs" $?
# A where downstream of the near-ties takes a bar covering both branches: choosing the other
# one there PASSes, a branch swapped where the mask is certain FAILs.
printf 'P: f32[16, 64]\nQ: f32[64, 8]\nR: f32[16, 8]\nW = where(less(matmul(P, Q), R), R, neg(R))\noutput W\n' >"$tmp/tiew.tap"
"$tapestry" run "$tmp/tiew.tap" --inputs "$tmp/in" --outputs "$tmp/tiew" >/dev/null 2>&1
"$python" -c "import numpy as np; w = np.load('$tmp/tiew/W.npy'); w[:8] = -w[:8]; np.save('$tmp/tiew/W.npy', w)"
"$tapestry" verify "$tmp/tiew.tap" --inputs "$tmp/in" --outputs "$tmp/tiew" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q "^PASS   W: " "$tmp/log"; check "where after a near-tie: the other branch PASSes" $?
"$python" -c "import numpy as np; w = np.load('$tmp/tiew/W.npy'); w[8, 0] = -w[8, 0]; np.save('$tmp/tiew/W.npy', w)"
"$tapestry" verify "$tmp/tiew.tap" --inputs "$tmp/in" --outputs "$tmp/tiew" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 1 ]] && grep -q "^FAIL   W: 1 of 128 cells" "$tmp/log"; check "where with a certain mask: the other branch FAILs" $?

# ---- errors ----------------------------------------------------------------------------------
printf 'A: f32[4]\nB: f64[4]\nM = less(A, B)\noutput M\n' >"$tmp/e1.tap"
expect "less of f32 and f64" 2 "e1.tap:3:.*less: B is f64 but A is f32" -- "$tapestry" run "$tmp/e1.tap"
printf 'A: f32[4, 3]\nB: f32[5]\nM = equal(A, B)\noutput M\n' >"$tmp/e2.tap"
expect "shapes that do not broadcast" 2 "e2.tap:3:.*equal" -- "$tapestry" run "$tmp/e2.tap"
printf 'C: f32[4]\nA: f32[4]\nB: i64[4]\nW = where(C, A, B)\noutput W\n' >"$tmp/e3.tap"
expect "where's branches of two dtypes" 2 "e3.tap:4:.*where: B is i64 but A is f32" -- "$tapestry" run "$tmp/e3.tap"

finish
