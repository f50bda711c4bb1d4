#!/usr/bin/env bash
# mlp_vs_baselines: examples/mlp.tap (X 4096×1024, W1 4096×1024, W2 1024×4096; 68.7 GFLOP) against
# the hardware limit and the strongest baselines, in one run, repetitions interleaved:
#
#   fma peak     a register-only AVX-512 (else AVX2) FMA loop per thread (bench/fma_peak.cpp)
#   tapestry     tapestry run --plan examples/plans/mlp-best.json (block executor, fast kernels:
#                oneDNN GEMMs), execution wall time (metrics wall_s) after 2 untimed runs
#   onednn       two oneDNN matmul primitives with bias and ReLU as post-ops (bench/mlp_onednn.cpp):
#                the strongest thing a C++ user could write by hand
#   openblas     two cblas_sgemm calls, bias fill and ReLU split over the threads
#                (bench/mlp_openblas.cpp), with the kernel OpenBLAS picks and, when the CPU has
#                AVX-512, forced onto its AVX-512 kernel (OPENBLAS_CORETYPE=SKYLAKEX)
#   torch-*      PyTorch (Debian's python3-torch): eager, oneDNN via to_mkldnn, jit.trace + freeze
#                (bench/mlp_torch.py; "skipped" when torch is absent — nothing is installed)
#
# All read the same inputs (seeded .npy files written by numpy) and, in the first round, write Y;
# every Y is compared with Tapestry's (max |difference| / max |Y| <= 1e-4), and a mismatch fails
# the script. Each round runs every contender once (--reps timed repetitions each, their median);
# the table gives the median over --rounds rounds and the range. Ratios are baseline time /
# Tapestry time (> 1: Tapestry is faster); "of peak" is GFLOP/s over the FMA peak of the same
# thread count, measured in the same round.
#
#   bench/mlp_vs_baselines.sh [BUILD_DIR | --build DIR] [--threads 2] [--rounds 3] [--reps 3]
set -euo pipefail
source "$(dirname "$0")/baselines_common.sh"
baselines_init mlp_vs_baselines "$@"
baselines_require "$tapestry" "$build/bench/mlp_onednn" "$build/bench/mlp_openblas" "$build/bench/fma_peak"

"$py" - "$tmp/in" <<'PY'
import numpy as np, os, sys
d = sys.argv[1]; os.makedirs(d)
rng = np.random.default_rng(7)
for name, shape in [("X", (4096, 1024)), ("W1", (4096, 1024)), ("b1", (4096,)),
                    ("W2", (1024, 4096)), ("b2", (1024,))]:
    np.save(os.path.join(d, name + ".npy"), rng.uniform(-1, 1, shape).astype(np.float32))
PY

avx512=0
grep -qw avx512f /proc/cpuinfo && avx512=1
contenders=(tapestry onednn openblas)
[[ $avx512 -eq 1 ]] && contenders+=(openblas-avx512)
contenders+=(torch-eager torch-mkldnn torch-jit)

median_of() { awk '/^median_s/ {print $2}' "$1"; }
# run NAME ROUND -> prints the median seconds, or "skipped"
run() {
  local out=() log="$tmp/$1.log"
  [[ $2 -eq 1 ]] && out=(--out "$tmp/Y-$1.npy")
  case "$1" in
    tapestry)
      local y=""
      [[ $2 -eq 1 ]] && y="$tmp/Y-tapestry.npy"
      baselines_tapestry "$log" "$root/examples/mlp.tap" "$tmp/in" \
        "$root/examples/plans/mlp-best.json" "$tmp/m.json" "$y" ;;
    onednn) "$build/bench/mlp_onednn" --threads "$threads" --reps "$reps" --inputs "$tmp/in" "${out[@]}" >"$log"; median_of "$log" ;;
    openblas) "$build/bench/mlp_openblas" --threads "$threads" --reps "$reps" --inputs "$tmp/in" "${out[@]}" >"$log"; median_of "$log" ;;
    openblas-avx512) OPENBLAS_CORETYPE=SKYLAKEX "$build/bench/mlp_openblas" --threads "$threads" --reps "$reps" --inputs "$tmp/in" "${out[@]}" >"$log"; median_of "$log" ;;
    torch-*)
      "$py" "$root/bench/mlp_torch.py" --mode "${1#torch-}" --threads "$threads" --reps "$reps" \
        --inputs "$tmp/in" "${out[@]}" >"$log" 2>&1 || true
      if grep -q '^median_s' "$log"; then median_of "$log"; else echo skipped; fi ;;
  esac
}

echo "examples/mlp.tap, $threads threads, $rounds rounds × $reps repetitions ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
for r in $(seq 1 "$rounds"); do
  "$build/bench/fma_peak" --threads "$threads" >"$tmp/fma.log"
  awk '/^gflops/ {print $2}' "$tmp/fma.log" >>"$tmp/peak.times"
  for c in "${contenders[@]}"; do run "$c" "$r" >>"$tmp/$c.times"; done
done
isa=$(awk '/^isa/ {print $2}' "$tmp/fma.log")
coretype=$(awk '/^coretype/ {print $2}' "$tmp/openblas.log")

"$py" - "$tmp" "$threads" "$isa" "$coretype" "${contenders[@]}" <<'PY'
import numpy as np, os, statistics, sys
tmp, threads, isa, coretype, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
flops = 2.0 * 4096 * 1024 * 4096 * 2
def read(name):
    vals = [l.strip() for l in open(os.path.join(tmp, name + ".times"))]
    return None if "skipped" in vals else [float(v) for v in vals]
peak = read("peak")
print(f"  {'fma peak (' + isa + ')':<24} {'':>22} {statistics.median(peak):7.1f} GFLOP/s (range {min(peak):.1f}-{max(peak):.1f})")
tap = read("tapestry")
labels = {"tapestry": "tapestry (mlp-best)", "onednn": "oneDNN matmul+post-ops",
          "openblas": f"OpenBLAS ({coretype})", "openblas-avx512": "OpenBLAS (SKYLAKEX)",
          "torch-eager": "PyTorch eager", "torch-mkldnn": "PyTorch to_mkldnn", "torch-jit": "PyTorch jit.trace"}
for n in names:
    t = read(n)
    if t is None:
        print(f"  {labels[n]:<24} skipped ({open(os.path.join(tmp, n + '.log')).readline().strip()})")
        continue
    m = statistics.median(t)
    g = flops / m / 1e9
    line = (f"  {labels[n]:<24} {m:8.4f} s ({min(t):.4f}-{max(t):.4f}) {g:7.1f} GFLOP/s"
            f"  {100 * g / statistics.median(peak):4.0f}% of peak")
    if n != "tapestry":
        line += f"  baseline/tapestry = {m / statistics.median(tap):.2f}x"
    print(line)
ref = np.load(os.path.join(tmp, "Y-tapestry.npy")).astype(np.float64)
bad = 0
checks = []
for n in names:
    f = os.path.join(tmp, f"Y-{n}.npy")
    if n == "tapestry" or not os.path.exists(f):
        continue
    err = np.abs(np.load(f).astype(np.float64) - ref).max() / np.abs(ref).max()
    ok = err <= 1e-4
    bad += not ok
    checks.append(f"{n} {err:.1e}{'' if ok else ' MISMATCH'}")
print("  outputs vs tapestry (max |diff| / max |Y|): " + ", ".join(checks))
sys.exit(1 if bad else 0)
PY
