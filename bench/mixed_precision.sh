#!/usr/bin/env bash
# mixed_precision: bf16 against f32 on this CPU, in one run per example, rounds interleaved like
# bench/mlp_vs_baselines.sh (every contender once per round; the median over the rounds).
#
#   mlp          examples/mlp.tap (68.7 GFLOP) under examples/plans/mlp-best.json, in f32 and with
#                every declaration bf16; against bench/mlp_onednn in f32 and --dtype bf16 (two
#                oneDNN matmul primitives, bias + ReLU as post-ops: the strongest hand-written
#                baseline), as a share of the FMA peak (f32) and of the bf16 dot-product peak
#                (`fma_peak --op bf16dot`, vdpbf16ps), both measured in the same round
#   transformer  examples/transformer_large.tap under examples/plans/transformer_large-rows.json
#                in f32 and bf16; against PyTorch (bench/transformer_torch.py): f32 eager and
#                jit.trace, and bf16 autocast on the CPU (skipped when this torch cannot)
#   resnet       examples/resnet_bottleneck.tap (3.49 GFLOP of convolutions) under
#                examples/plans/resnet_bottleneck-batch.json in f32 and bf16; against
#                bench/resnet_onednn in f32 and --dtype bf16 (three oneDNN convolution primitives
#                on their blocked layouts, ReLUs and the residual as post-ops)
#
# Tapestry: `tapestry run`, 2 untimed runs, --reps timed ones, their median execution wall time
# (metrics wall_s). Every contender reads the same seeded inputs (bf16 ones rounded to nearest
# even from the f32 draws); in the first round every Y is compared with Tapestry's f32 Y:
# max |diff| / max |Y| at most 1e-4 for f32 contenders and 2^-5 for bf16 ones (a few bf16
# roundings of the activations), else the script fails.
#
#   bench/mixed_precision.sh [--example mlp|transformer|resnet|all] [--build DIR] [--threads 2]
#                            [--rounds 3] [--reps 3]
set -euo pipefail
source "$(dirname "$0")/baselines_common.sh"
example=all
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --example) example="${2:-}"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
case "$example" in
  mlp) examples=(mlp) ;;
  transformer) examples=(transformer) ;;
  resnet) examples=(resnet) ;;
  all) examples=(mlp transformer resnet) ;;
  *) echo "mixed_precision: --example is mlp, transformer, resnet or all, not '$example'" >&2
     exit 2 ;;
esac
baselines_init mixed_precision "${args[@]}"
baselines_require "$tapestry" "$build/bench/fma_peak" "$build/bench/mlp_onednn" \
  "$build/bench/resnet_onednn"

# inputs NAME DIR: the seeded f32 inputs in DIR/f32, the same rounded to bf16 (uint16 bit
# patterns, as `tapestry run` reads a bf16 tensor) in DIR/bf16.
inputs() {
  "$py" - "$1" "$2" <<'PY'
import numpy as np, os, sys
name, d = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7 if name == "mlp" else 11)
if name == "mlp":
    shapes = {"X": (4096, 1024), "W1": (4096, 1024), "b1": (4096,), "W2": (1024, 4096), "b2": (1024,)}
    arrays = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}
elif name == "resnet":  # as bench/resnet_vs_baselines.sh: filters scaled by 1/sqrt(fan-in)
    shapes = {"X": (8, 256, 56, 56), "W1": (64, 256, 1, 1), "W2": (64, 64, 3, 3), "W3": (256, 64, 1, 1)}
    arrays = {n: (rng.uniform(-1, 1, s) / np.sqrt(1 if n == "X" else np.prod(s[1:]))).astype(np.float32)
              for n, s in shapes.items()}
else:  # transformer_large: B 4, S 512, D 1024, MLP 4096; weights scaled by 1/sqrt(fan-in)
    w, mlp = 1024, 4096
    shapes = {"X": (2048, w), "Wq": (w, w), "bq": (w,), "Wk": (w, w), "bk": (w,), "Wv": (w, w),
              "bv": (w,), "Wo": (w, w), "bo": (w,), "W1": (mlp, w), "b1": (mlp,), "W2": (w, mlp),
              "b2": (w,)}
    arrays = {n: (rng.uniform(-1, 1, s) / np.sqrt(s[-1])).astype(np.float32) for n, s in shapes.items()}
    arrays["Scale"] = np.array([0.125], dtype=np.float32)
def bf16_bits(a):  # round to nearest even, as runtime/half_float.h (no NaNs here)
    u = a.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
for sub in ("f32", "bf16"):
    os.makedirs(os.path.join(d, sub))
for n, a in arrays.items():
    np.save(os.path.join(d, "f32", n + ".npy"), a)
    np.save(os.path.join(d, "bf16", n + ".npy"), bf16_bits(a))
PY
}

# run DIR CONTENDER ROUND: prints the contender's median seconds, or "skipped".
run() {
  local dir=$1 log="$1/$2.log" first=$3
  case "$2" in
    tapestry-f32|tapestry-bf16)
      local dtype=${2#tapestry-} y=""
      [[ $first -eq 1 ]] && y="$dir/Y-$2.npy"
      baselines_tapestry "$log" "$dir/$tap.$dtype.tap" "$dir/in/$dtype" \
        "$root/examples/plans/$plan.json" "$dir/m.json" "$y"
      [[ $first -eq 1 && $dtype == f32 ]] && cp "$dir/m.json" "$dir/flops.json"
      true ;;
    onednn-f32|onednn-bf16)
      local out=()
      [[ $first -eq 1 ]] && out=(--out "$dir/Y-$2.npy")
      "$build/bench/${tap%%_*}_onednn" --threads "$threads" --reps "$reps" \
        --inputs "$dir/in/f32" --dtype "${2#onednn-}" "${out[@]}" >"$log"
      awk '/^median_s/ {print $2}' "$log" ;;
    torch-*)
      local out=()
      [[ $first -eq 1 ]] && out=(--out "$dir/Y-$2.npy")
      "$py" "$root/bench/transformer_torch.py" --mode "${2#torch-}" --threads "$threads" \
        --reps "$reps" --inputs "$dir/in/f32" --batch 4 --seq 512 --width 1024 --heads 16 \
        --mlp 4096 "${out[@]}" >"$log" 2>&1 || true
      if grep -q '^median_s' "$log"; then awk '/^median_s/ {print $2}' "$log"; else echo skipped; fi ;;
  esac
}

status=0
for e in "${examples[@]}"; do
  dir="$tmp/$e"
  mkdir -p "$dir"
  if [[ $e == mlp ]]; then
    tap=mlp plan=mlp-best
    contenders=(tapestry-f32 tapestry-bf16 onednn-f32 onednn-bf16)
  elif [[ $e == resnet ]]; then
    tap=resnet_bottleneck plan=resnet_bottleneck-batch
    contenders=(tapestry-f32 tapestry-bf16 onednn-f32 onednn-bf16)
  else
    tap=transformer_large plan=transformer_large-rows
    contenders=(tapestry-f32 tapestry-bf16 torch-eager torch-jit torch-autocast)
  fi
  cp "$root/examples/$tap.tap" "$dir/$tap.f32.tap"
  sed -E 's/\bf32\[/bf16[/g' "$root/examples/$tap.tap" >"$dir/$tap.bf16.tap"
  inputs "$e" "$dir/in"
  echo "examples/$tap.tap in f32 and bf16, $threads threads, $rounds rounds × $reps repetitions ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
  for r in $(seq 1 "$rounds"); do
    "$build/bench/fma_peak" --threads "$threads" | awk '/^gflops/ {print $2}' >>"$dir/fma.times"
    { "$build/bench/fma_peak" --threads "$threads" --op bf16dot || echo "gflops 0"; } |
      awk '/^gflops/ {print $2}' >>"$dir/bf16dot.times"
    for c in "${contenders[@]}"; do run "$dir" "$c" "$r" >>"$dir/$c.times"; done
  done
  "$py" - "$dir" "$e" "${contenders[@]}" <<'PY' || status=1
import json, numpy as np, os, statistics, sys
tmp, example, names = sys.argv[1], sys.argv[2], sys.argv[3:]
flops = float(json.load(open(os.path.join(tmp, "flops.json")))["flops"])
def read(n):
    v = [l.strip() for l in open(os.path.join(tmp, n + ".times"))]
    return None if "skipped" in v else [float(x) for x in v]
fma, dot = statistics.median(read("fma")), statistics.median(read("bf16dot"))
print(f"  {'fma peak (f32)':<24} {fma:7.1f} GFLOP/s   ({flops / 1e9:.2f} GFLOP per run)")
print(f"  {'bf16 dot peak':<24} {dot:7.1f} GFLOP/s   (vdpbf16ps)" if dot > 0 else "  bf16 dot peak            none (no AVX512_BF16)")
labels = {"tapestry-f32": "tapestry f32", "tapestry-bf16": "tapestry bf16",
          "onednn-f32": "oneDNN f32", "onednn-bf16": "oneDNN bf16",
          "torch-eager": "PyTorch f32 eager", "torch-jit": "PyTorch f32 jit.trace",
          "torch-autocast": "PyTorch bf16 autocast"}
med = {}
for n in names:
    t = read(n)
    if t is None:
        print(f"  {labels[n]:<24} skipped"); continue
    m = med[n] = statistics.median(t); g = flops / m / 1e9
    peak, which = (dot, "bf16 peak") if ("bf16" in n or "autocast" in n) and dot > 0 else (fma, "fma peak")
    print(f"  {labels[n]:<24} {m * 1e3:8.1f} ms ({min(t) * 1e3:.1f}-{max(t) * 1e3:.1f}) {g:6.1f} GFLOP/s {100 * g / peak:4.0f}% of {which}")
bf = med["tapestry-bf16"]
print(f"  tapestry bf16 speed-up over tapestry f32: {med['tapestry-f32'] / bf:.2f}x")
for n in names:
    if n in med and not n.startswith("tapestry"):
        print(f"  {labels[n]} / tapestry bf16: {med[n] / bf:.2f}x")
def load(n):
    a = np.load(os.path.join(tmp, f"Y-{n}.npy"))
    if a.dtype == np.uint16:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64)
ref = load("tapestry-f32")
bad, checks = 0, []
for n in names:
    if n == "tapestry-f32" or not os.path.exists(os.path.join(tmp, f"Y-{n}.npy")): continue
    e = np.abs(load(n) - ref).max() / np.abs(ref).max()
    limit = 2.0 ** -5 if ("bf16" in n or "autocast" in n) else 1e-4
    bad += e > limit
    checks.append(f"{n} {e:.1e}{' MISMATCH' if e > limit else ''}")
print("  Y vs tapestry f32 (max |diff| / max |Y|): " + ", ".join(checks))
sys.exit(1 if bad else 0)
PY
done
exit $status
