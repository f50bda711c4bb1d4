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

# softmax of bf16 logits ~3·10^6 whose bars (~10^4) reach far enough to swap the row's largest
# terms: every computation still gives a value in [0, 1], so each cell is checked against a bar of
# at most max(y, 1 − y) (+ its storage rounding) — not UNCHECKED (the rewrite properties' bf16 run
# found it: "bar not finite").
printf 'A: bf16[1, 2]\nB: bf16[1, 2]\nL = exp(exp(exp(mul(A, B))))\nP = softmax(L)\noutput P\n' >"$tmp/sm.tap"
mkdir -p "$tmp/sm"
/usr/bin/python3 - "$tmp/sm" <<'PY'
import sys, numpy as np
def store(a): return (np.asarray(a, np.float32).view(np.uint32) >> 16).astype(np.uint16)
np.save(sys.argv[1] + "/A.npy", store([[1.0, 1.0]])); np.save(sys.argv[1] + "/B.npy", store([[0.9921875, 1.0]]))
PY
if "$tapestry" run "$tmp/sm.tap" --inputs "$tmp/sm" --verify >"$tmp/out" 2>&1 && grep -q "^PASS   P: " "$tmp/out"; then
  echo "ok   softmax of bf16 logits with wide bars"; passed=$((passed + 1))
else
  echo "FAIL softmax of bf16 logits with wide bars"; cat "$tmp/out"; failures=$((failures + 1))
fi

# A training step in 16 bits: the convnet's gradients (conv2d_grad_input/weight, relu_grad, the
# linear grads) in bf16 and f16, with both kernel sets and three input seeds. relu_grad's x (a
# bf16 convolution's result) lies within its bar of 0 on some cells, where either route is
# right: the `gate` rule's bar covers it (the `selection` rule before made dK1/dK2 FAIL).
for dtype in bf16 f16; do
  { sed -E "s/\bf32\[/$dtype[/g" "$root/examples/convnet.tap"; echo "Dl: $dtype[8, 10]"; } >"$tmp/cn.tap"
  if ! "$tapestry" grad "$tmp/cn.tap" --loss Logits --seed Dl --wrt K1,K2,Wh,bh -o "$tmp/cng.json" >"$tmp/out" 2>&1; then
    echo "FAIL convnet grad $dtype: grad"; cat "$tmp/out"; failures=$((failures + 1)); continue
  fi
  ok=1
  for seed in 1 2 3; do
    for kernels in fast reference; do
      if ! "$tapestry" run "$tmp/cng.json" --verify --seed $seed --kernels $kernels --threads 2 >"$tmp/out" 2>&1 ||
        [[ $(grep -c '^PASS' "$tmp/out") -ne 5 ]]; then
        echo "FAIL convnet grad $dtype seed $seed $kernels"; cat "$tmp/out"; ok=0
      fi
    done
  done
  if [[ $ok -eq 1 ]]; then
    echo "ok   convnet grad $dtype (5 outputs, 3 seeds, both kernel sets)"; passed=$((passed + 1))
  else
    failures=$((failures + 1))
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

# bf16 and f16 convolutions against NumPy in float64: resnet_bottleneck_small (conv 1×1, 3×3
# with padding, 1×1 + residual, each with a ReLU; batch plan, fused) on 16-bit inputs, every cell
# within one float32 dot product plus the 16-bit roundings the graph stores (three per layer at
# most) of the float64 value computed from the same 16-bit inputs. With bf16 on a CPU with
# AVX512_BF16, ONEDNN_VERBOSE shows the convolutions ran on oneDNN's bf16 primitive.
for dtype in bf16 f16; do
  sed -E "s/\bf32\[/$dtype[/g" "$root/tests/data/cli/resnet_bottleneck_small.tap" >"$tmp/r.tap"
  rm -rf "$tmp/r-in" "$tmp/r-out"
  mkdir -p "$tmp/r-in"
  /usr/bin/python3 - "$tmp/r-in" "$dtype" <<'PY'
import sys, numpy as np
d, dtype = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(5)
shapes = {"X": (2, 32, 10, 10), "W1": (16, 32, 1, 1), "W2": (16, 16, 3, 3), "W3": (32, 16, 1, 1)}
for n, s in shapes.items():
    a = (rng.uniform(-1, 1, s) / np.sqrt(1 if n == "X" else np.prod(s[1:]))).astype(np.float32)
    if dtype == "bf16":  # round to nearest even, kept as the uint16 bit pattern
        u = a.view(np.uint32).astype(np.uint64)
        np.save(f"{d}/{n}.npy", ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16))
    else:
        np.save(f"{d}/{n}.npy", a.astype(np.float16))
PY
  if ! ONEDNN_VERBOSE=1 "$tapestry" run "$tmp/r.tap" --plan "$root/examples/plans/resnet_bottleneck-batch.json" \
      --inputs "$tmp/r-in" --outputs "$tmp/r-out" --threads 2 >"$tmp/out" 2>&1; then
    echo "FAIL conv oracle $dtype: run"; cat "$tmp/out"; failures=$((failures + 1)); continue
  fi
  native=""
  if [[ $dtype == bf16 ]] && grep -q avx512_bf16 /proc/cpuinfo && [[ -z ${ONEDNN_MAX_CPU_ISA:-} ]]; then
    native=" (oneDNN bf16 convolution)"
    if ! grep "exec,cpu,convolution" "$tmp/out" | grep -q "src_bf16"; then
      echo "FAIL conv oracle $dtype: no bf16 convolution in ONEDNN_VERBOSE"
      grep "convolution" "$tmp/out" | head -3; failures=$((failures + 1)); continue
    fi
  fi
  if /usr/bin/python3 - "$tmp/r-in" "$tmp/r-out/Y.npy" "$dtype" <<'PY'
import sys, numpy as np
d, y, dtype = sys.argv[1], sys.argv[2], sys.argv[3]
u = 2.0 ** -8 if dtype == "bf16" else 2.0 ** -11
def load(p):
    a = np.load(p)
    return ((a.astype(np.uint32) << 16).view(np.float32) if a.dtype == np.uint16 else a).astype(np.float64)
def conv(x, w, pad):  # float64 cross-correlation, NCHW / OIHW, stride 1; also Σ|x·w|
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = w.shape[2]; h = x.shape[2] - k + 1
    cols = np.stack([x[:, :, i:i + h, j:j + h] for i in range(k) for j in range(k)], 2)  # n c kk h h
    wk = w.reshape(w.shape[0], w.shape[1], k * k)
    return np.einsum("ncqhw,ocq->nohw", cols, wk), np.einsum("ncqhw,ocq->nohw", np.abs(cols), np.abs(wk))
def err(mag, terms):  # one float32 dot product, then one 16-bit rounding
    return (terms + 1) * 2.0 ** -24 * mag + u * mag
X, W1, W2, W3 = (load(f"{d}/{n}.npy") for n in ("X", "W1", "W2", "W3"))
a, ma = conv(X, W1, 0); A = np.maximum(a, 0); eA = err(ma, 32)
b, mb = conv(A, W2, 1); B = np.maximum(b, 0)
_, mbe = conv(eA, np.abs(W2), 1); eB = err(mb, 144) + mbe * (1 + u)
c, mc = conv(B, W3, 0); Y = np.maximum(c + X, 0)
_, mce = conv(eB, np.abs(W3), 0); eY = err(mc, 16) + mce * (1 + u) + u * (mc + np.abs(X))
got = load(y)
bad = np.abs(got - Y) > eY + 1e-30
print(f"{bad.sum()} of {Y.size} cells outside, max |diff| / bound {np.max(np.abs(got - Y) / (eY + 1e-30)):.3f}")
sys.exit(1 if bad.any() else 0)
PY
  then
    echo "ok   conv oracle $dtype$native"; passed=$((passed + 1))
  else
    echo "FAIL conv oracle $dtype"; failures=$((failures + 1))
  fi
done

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
