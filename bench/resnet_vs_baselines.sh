#!/usr/bin/env bash
# resnet_vs_baselines: examples/resnet_bottleneck.tap (a ResNet-50 bottleneck block, X [8, 256,
# 56, 56], 3.49 GFLOP of convolutions) against the FMA peak and PyTorch 1.13 (eager, its oneDNN
# path through torch.utils.mkldnn.to_mkldnn, and jit.trace + freeze + optimize_for_inference;
# bench/resnet_torch.py), in one run, rounds interleaved like bench/mlp_vs_baselines.sh:
# a direct oneDNN convolution-primitive chain (bench/resnet_onednn.cpp: blocked layouts, ReLUs
# and the residual as post-ops, 2 OpenMP threads), Tapestry unsharded and under
# examples/plans/resnet_bottleneck-batch.json, 2 threads, execution wall time (metrics wall_s)
# after 2 untimed runs. All read the same seeded .npy inputs; in the
# first round every Y is compared with Tapestry's (max |diff| / max |Y| <= 1e-4, else the script
# fails).
#
#   bench/resnet_vs_baselines.sh [--build DIR] [--threads 2] [--rounds 3] [--reps 3]
set -euo pipefail
source "$(dirname "$0")/baselines_common.sh"
baselines_init resnet_vs_baselines "$@"
baselines_require "$tapestry" "$build/bench/fma_peak" "$build/bench/resnet_onednn"
"$py" - "$tmp/in" <<'PY'
import numpy as np, os, sys
d = sys.argv[1]; os.makedirs(d)
rng = np.random.default_rng(11)
shapes = {"X": (8, 256, 56, 56), "W1": (64, 256, 1, 1), "W2": (64, 64, 3, 3), "W3": (256, 64, 1, 1)}
for n, s in shapes.items():
    fan = 1 if n == "X" else int(np.prod(s[1:]))
    np.save(os.path.join(d, n + ".npy"), (rng.uniform(-1, 1, s) / np.sqrt(fan)).astype(np.float32))
PY
contenders=(unsharded batch onednn torch-eager torch-mkldnn torch-jit)
run() {
  local log="$tmp/$1.log"
  case "$1" in
    unsharded|batch)
      local plan="" y=""
      [[ $1 == batch ]] && plan="$root/examples/plans/resnet_bottleneck-batch.json"
      [[ $2 -eq 1 ]] && y="$tmp/Y-$1.npy"
      baselines_tapestry "$log" "$root/examples/resnet_bottleneck.tap" "$tmp/in" "$plan" \
        "$tmp/m.json" "$y" ;;
    onednn)
      local out=()
      [[ $2 -eq 1 ]] && out=(--out "$tmp/Y-$1.npy")
      "$build/bench/resnet_onednn" --threads "$threads" --reps "$reps" --inputs "$tmp/in" "${out[@]}" >"$log"
      awk '/^median_s/ {print $2}' "$log" ;;
    torch-*)
      local out=()
      [[ $2 -eq 1 ]] && out=(--out "$tmp/Y-$1.npy")
      "$py" "$root/bench/resnet_torch.py" --mode "${1#torch-}" --threads "$threads" \
        --reps "$reps" --inputs "$tmp/in" "${out[@]}" >"$log" 2>&1 || true
      if grep -q '^median_s' "$log"; then awk '/^median_s/ {print $2}' "$log"; else echo skipped; fi ;;
  esac
}
echo "examples/resnet_bottleneck.tap, $threads threads, $rounds rounds × $reps repetitions (load $(cut -d' ' -f1 /proc/loadavg))"
for r in $(seq 1 "$rounds"); do
  "$build/bench/fma_peak" --threads "$threads" | awk '/^gflops/ {print $2}' >>"$tmp/peak.times"
  for c in "${contenders[@]}"; do run "$c" "$r" >>"$tmp/$c.times"; done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$tmp" "${contenders[@]}" <<'PY'
import numpy as np, os, statistics, sys
tmp, names = sys.argv[1], sys.argv[2:]
flops = 3493855232.0  # the three convolutions: 2·8·56·56·(256·64 + 64·64·9 + 64·256)
def read(n):
    v = [l.strip() for l in open(os.path.join(tmp, n + ".times"))]
    return None if "skipped" in v else [float(x) for x in v]
peak = statistics.median(read("peak"))
print(f"  {'fma peak':<22} {peak:7.1f} GFLOP/s")
batch = statistics.median(read("batch"))
mkldnn = read("torch-mkldnn")
labels = {"unsharded": "tapestry unsharded", "batch": "tapestry batch plan",
          "onednn": "oneDNN conv chain", "torch-eager": "PyTorch eager", "torch-mkldnn": "PyTorch to_mkldnn",
          "torch-jit": "PyTorch jit (oneDNN)"}
for n in names:
    t = read(n)
    if t is None:
        print(f"  {labels[n]:<22} skipped"); continue
    m = statistics.median(t); g = flops / m / 1e9
    line = f"  {labels[n]:<22} {m * 1e3:7.2f} ms ({min(t) * 1e3:.2f}-{max(t) * 1e3:.2f}) {g:6.1f} GFLOP/s {100 * g / peak:4.0f}% of peak"
    if n != "batch": line += f"  this/batch = {m / batch:.2f}x"
    print(line)
if mkldnn is not None:
    print(f"  batch plan vs PyTorch's oneDNN path (to_mkldnn): {statistics.median(mkldnn) / batch:.2f}x")
ref = np.load(os.path.join(tmp, "Y-batch.npy")).astype(np.float64)
bad, checks = 0, []
for n in names:
    f = os.path.join(tmp, f"Y-{n}.npy")
    if n == "batch" or not os.path.exists(f): continue
    e = np.abs(np.load(f).astype(np.float64) - ref).max() / np.abs(ref).max()
    bad += e > 1e-4
    checks.append(f"{n} {e:.1e}{' MISMATCH' if e > 1e-4 else ''}")
print("  outputs vs the batch plan (max |diff| / max |Y|): " + ", ".join(checks))
sys.exit(1 if bad else 0)
PY
