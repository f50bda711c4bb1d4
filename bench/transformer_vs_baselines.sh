#!/usr/bin/env bash
# transformer_vs_baselines: examples/transformer_block.tap (3.36 GFLOP) against the FMA peak and
# PyTorch 1.13 (eager and jit.trace + freeze, bench/transformer_torch.py), in one run, rounds
# interleaved like bench/mlp_vs_baselines.sh: Tapestry unsharded and under
# examples/plans/transformer_block-heads.json, 2 threads, execution wall time (metrics wall_s)
# after 2 untimed runs. All read the same seeded .npy inputs; in the first round every Y is
# compared with Tapestry's (max |diff| / max |Y| <= 1e-4, else the script fails).
#
#   bench/transformer_vs_baselines.sh [--build DIR] [--threads 2] [--rounds 3] [--reps 3]
set -euo pipefail
source "$(dirname "$0")/baselines_common.sh"
baselines_init transformer_vs_baselines "$@"
baselines_require "$tapestry" "$build/bench/fma_peak"
"$py" - "$tmp/in" <<'PY'
import numpy as np, os, sys
d = sys.argv[1]; os.makedirs(d)
rng = np.random.default_rng(11)
shapes = {"X": (512, 512), "Wq": (512, 512), "bq": (512,), "Wk": (512, 512), "bk": (512,),
          "Wv": (512, 512), "bv": (512,), "Wo": (512, 512), "bo": (512,), "W1": (2048, 512),
          "b1": (2048,), "W2": (512, 2048), "b2": (512,)}
for n, s in shapes.items():
    np.save(os.path.join(d, n + ".npy"), (rng.uniform(-1, 1, s) / np.sqrt(s[-1])).astype(np.float32))
np.save(os.path.join(d, "Scale.npy"), np.array([0.125], dtype=np.float32))
PY
contenders=(unsharded heads torch-eager torch-jit)
run() {
  local log="$tmp/$1.log"
  case "$1" in
    unsharded|heads)
      local plan=() o=()
      [[ $1 == heads ]] && plan=(--plan "$root/examples/plans/transformer_block-heads.json")
      [[ $2 -eq 1 ]] && o=(--outputs "$tmp/out-$1")
      "$tapestry" run "$root/examples/transformer_block.tap" "${plan[@]}" --inputs "$tmp/in" \
        --threads "$threads" --warmup 2 --repeat "$reps" --quiet --metrics "$tmp/m.json" "${o[@]}" >"$log"
      [[ $2 -eq 1 ]] && cp "$tmp/out-$1/Y.npy" "$tmp/Y-$1.npy"
      "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_s'])" "$tmp/m.json" ;;
    torch-*)
      local out=()
      [[ $2 -eq 1 ]] && out=(--out "$tmp/Y-$1.npy")
      "$py" "$root/bench/transformer_torch.py" --mode "${1#torch-}" --threads "$threads" \
        --reps "$reps" --inputs "$tmp/in" "${out[@]}" >"$log" 2>&1 || true
      if grep -q '^median_s' "$log"; then awk '/^median_s/ {print $2}' "$log"; else echo skipped; fi ;;
  esac
}
echo "examples/transformer_block.tap, $threads threads, $rounds rounds × $reps repetitions (load $(cut -d' ' -f1 /proc/loadavg))"
for r in $(seq 1 "$rounds"); do
  "$build/bench/fma_peak" --threads "$threads" | awk '/^gflops/ {print $2}' >>"$tmp/peak.times"
  for c in "${contenders[@]}"; do run "$c" "$r" >>"$tmp/$c.times"; done
done
"$py" - "$tmp" "${contenders[@]}" <<'PY'
import numpy as np, os, statistics, sys
tmp, names = sys.argv[1], sys.argv[2:]
flops = 3358064640.0
def read(n):
    v = [l.strip() for l in open(os.path.join(tmp, n + ".times"))]
    return None if "skipped" in v else [float(x) for x in v]
peak = statistics.median(read("peak"))
print(f"  {'fma peak':<22} {peak:7.1f} GFLOP/s")
heads = statistics.median(read("heads"))
labels = {"unsharded": "tapestry unsharded", "heads": "tapestry heads plan",
          "torch-eager": "PyTorch eager", "torch-jit": "PyTorch jit.trace"}
for n in names:
    t = read(n)
    if t is None:
        print(f"  {labels[n]:<22} skipped"); continue
    m = statistics.median(t); g = flops / m / 1e9
    line = f"  {labels[n]:<22} {m * 1e3:7.2f} ms ({min(t) * 1e3:.2f}-{max(t) * 1e3:.2f}) {g:6.1f} GFLOP/s {100 * g / peak:4.0f}% of peak"
    if n != "heads": line += f"  this/heads = {m / heads:.2f}x"
    print(line)
ref = np.load(os.path.join(tmp, "Y-heads.npy")).astype(np.float64)
bad, checks = 0, []
for n in names:
    f = os.path.join(tmp, f"Y-{n}.npy")
    if n == "heads" or not os.path.exists(f): continue
    e = np.abs(np.load(f).astype(np.float64) - ref).max() / np.abs(ref).max()
    bad += e > 1e-4
    checks.append(f"{n} {e:.1e}{' MISMATCH' if e > 1e-4 else ''}")
print("  outputs vs the heads plan (max |diff| / max |Y|): " + ", ".join(checks))
sys.exit(1 if bad else 0)
PY
