#!/usr/bin/env bash
# transformer_vs_baselines: the transformer layer examples against the FMA peak and PyTorch 1.13
# (eager and jit.trace + freeze, bench/transformer_torch.py), in one run, rounds interleaved like
# bench/mlp_vs_baselines.sh. Per example, Tapestry runs unsharded and under its best plan, 2
# threads, execution wall time (metrics wall_s) after 2 untimed runs:
#
#   block  examples/transformer_block.tap (B 4, S 128, D 512, 8 heads, MLP 2048; 3.36 GFLOP),
#          plan examples/plans/transformer_block-heads.json
#   large  examples/transformer_large.tap (B 4, S 512, D 1024, 16 heads, MLP 4096; 55.9 GFLOP),
#          plan examples/plans/transformer_large-rows.json
#
# All read the same seeded .npy inputs (weights scaled by 1/sqrt(fan-in)); in the first round
# every Y is compared with the plan's (max |diff| / max |Y| <= 1e-4, else the script fails).
# FLOPs are Tapestry's count (metrics "flops": every GEMM, bias, elementwise op and softmax).
#
#   bench/transformer_vs_baselines.sh [--example block|large|all] [--build DIR] [--threads 2]
#                                     [--rounds 3] [--reps 3]
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
  block) examples=(block) ;;
  large) examples=(large) ;;
  all) examples=(block large) ;;
  *) echo "transformer_vs_baselines: --example is block, large or all, not '$example'" >&2; exit 2 ;;
esac
baselines_init transformer_vs_baselines "${args[@]}"
baselines_require "$tapestry" "$build/bench/fma_peak"

# shape NAME: sets tap, plan, label and the layer's sizes (B S D H MLP).
shape() {
  case "$1" in
    block) tap=transformer_block plan=transformer_block-heads label="heads plan" B=4 S=128 D=512 H=8 MLP=2048 ;;
    large) tap=transformer_large plan=transformer_large-rows label="rows plan" B=4 S=512 D=1024 H=16 MLP=4096 ;;
  esac
}

# inputs DIR: the seeded inputs of the current shape.
inputs() {
  "$py" - "$1" "$B" "$S" "$D" "$MLP" <<'PY'
import numpy as np, os, sys
d, (b, s, w, mlp) = sys.argv[1], map(int, sys.argv[2:])
os.makedirs(d)
rng = np.random.default_rng(11)
shapes = {"X": (b * s, w), "Wq": (w, w), "bq": (w,), "Wk": (w, w), "bk": (w,), "Wv": (w, w),
          "bv": (w,), "Wo": (w, w), "bo": (w,), "W1": (mlp, w), "b1": (mlp,), "W2": (w, mlp),
          "b2": (w,)}
for n, s_ in shapes.items():
    np.save(os.path.join(d, n + ".npy"), (rng.uniform(-1, 1, s_) / np.sqrt(s_[-1])).astype(np.float32))
np.save(os.path.join(d, "Scale.npy"), np.array([0.125], dtype=np.float32))  # 1/sqrt(64)
PY
}

contenders=(unsharded plan torch-eager torch-jit)
# run DIR CONTENDER ROUND: prints the contender's median seconds, or "skipped".
run() {
  local dir=$1 log="$1/$2.log"
  case "$2" in
    unsharded|plan)
      local p="" y=""
      [[ $2 == plan ]] && p="$root/examples/plans/$plan.json"
      [[ $3 -eq 1 ]] && y="$dir/Y-$2.npy"
      baselines_tapestry "$log" "$root/examples/$tap.tap" "$dir/in" "$p" "$dir/m.json" "$y"
      if [[ $3 -eq 1 ]]; then cp "$dir/m.json" "$dir/flops.json"; fi ;;
    torch-*)
      local out=()
      [[ $3 -eq 1 ]] && out=(--out "$dir/Y-$2.npy")
      "$py" "$root/bench/transformer_torch.py" --mode "${2#torch-}" --threads "$threads" \
        --reps "$reps" --inputs "$dir/in" --batch "$B" --seq "$S" --width "$D" --heads "$H" \
        --mlp "$MLP" "${out[@]}" >"$log" 2>&1 || true
      if grep -q '^median_s' "$log"; then awk '/^median_s/ {print $2}' "$log"; else echo skipped; fi ;;
  esac
}

status=0
for e in "${examples[@]}"; do
  shape "$e"
  dir="$tmp/$e"
  mkdir -p "$dir"
  inputs "$dir/in"
  echo "examples/$tap.tap, $threads threads, $rounds rounds × $reps repetitions (load $(cut -d' ' -f1 /proc/loadavg))"
  for r in $(seq 1 "$rounds"); do
    "$build/bench/fma_peak" --threads "$threads" | awk '/^gflops/ {print $2}' >>"$dir/peak.times"
    for c in "${contenders[@]}"; do run "$dir" "$c" "$r" >>"$dir/$c.times"; done
  done
  "$py" - "$dir" "$label" "${contenders[@]}" <<'PY' || status=1
import json, numpy as np, os, statistics, sys
tmp, plan_label, names = sys.argv[1], sys.argv[2], sys.argv[3:]
flops = float(json.load(open(os.path.join(tmp, "flops.json")))["flops"])
def read(n):
    v = [l.strip() for l in open(os.path.join(tmp, n + ".times"))]
    return None if "skipped" in v else [float(x) for x in v]
peak = statistics.median(read("peak"))
print(f"  {'fma peak':<22} {peak:7.1f} GFLOP/s   ({flops / 1e9:.2f} GFLOP per run)")
best = statistics.median(read("plan"))
labels = {"unsharded": "tapestry unsharded", "plan": "tapestry " + plan_label,
          "torch-eager": "PyTorch eager", "torch-jit": "PyTorch jit.trace"}
for n in names:
    t = read(n)
    if t is None:
        print(f"  {labels[n]:<22} skipped"); continue
    m = statistics.median(t); g = flops / m / 1e9
    line = f"  {labels[n]:<22} {m * 1e3:7.2f} ms ({min(t) * 1e3:.2f}-{max(t) * 1e3:.2f}) {g:6.1f} GFLOP/s {100 * g / peak:4.0f}% of peak"
    if n != "plan": line += f"  this/plan = {m / best:.2f}x"
    print(line)
ref = np.load(os.path.join(tmp, "Y-plan.npy")).astype(np.float64)
bad, checks = 0, []
for n in names:
    f = os.path.join(tmp, f"Y-{n}.npy")
    if n == "plan" or not os.path.exists(f): continue
    e = np.abs(np.load(f).astype(np.float64) - ref).max() / np.abs(ref).max()
    bad += e > 1e-4
    checks.append(f"{n} {e:.1e}{' MISMATCH' if e > 1e-4 else ''}")
print(f"  outputs vs the {plan_label} (max |diff| / max |Y|): " + ", ".join(checks))
sys.exit(1 if bad else 0)
PY
done
exit "$status"
