#!/usr/bin/env bash
# mlp_vs_baselines: examples/mlp.tap (X 4096×1024, W1 4096×1024, W2 1024×4096; 68.7 GFLOP) on
# 2 threads, in one run of this script:
#
#   tapestry   `tapestry run --plan examples/plans/mlp-best.json --threads 2` (block executor,
#              fast kernels), wall time of execution alone (metrics wall_s), median of --reps
#              after 2 untimed warm-up runs (each of the three discards 2 warm-up runs)
#   (a)        two direct OpenBLAS cblas_sgemm calls + bias/ReLU loops, 2 threads (mlp_openblas)
#   (b)        PyTorch CPU, torch.set_num_threads(2), F.linear/relu (bench/mlp_torch.py with
#              Debian's python3-torch; "skipped" when torch is absent — nothing is installed)
#
# and prints throughput ratios (baseline time / Tapestry time; targets: >= 0.95 vs (a), >= 1.1
# vs (b)). Then the scaling at 1 and 2 threads and, with --sweep, a batch-size sweep (64 … 8192)
# comparing no sharding, a batch split and an out split.
#
#   bench/mlp_vs_baselines.sh [BUILD_DIR | --build DIR] [--reps N] [--sweep]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/release"
reps=5
sweep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --sweep) sweep=1; shift ;;
    -*) echo "usage: $0 [BUILD_DIR | --build DIR] [--reps N] [--sweep]" >&2; exit 2 ;;
    *) build="$1"; shift ;;  # scripts/bench.sh passes the build dir
  esac
done
tapestry="$build/src/cli/tapestry"
openblas="$build/bench/mlp_openblas"
for f in "$tapestry" "$openblas"; do
  [[ -x "$f" ]] || { echo "mlp_vs_baselines: $f is missing; build the release preset first" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

json_field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# tapestry_time GRAPH PLAN THREADS -> median execution wall time in seconds
tapestry_time() {
  local plan_args=()
  [[ -n "$2" ]] && plan_args=(--plan "$2")
  "$tapestry" run "$1" "${plan_args[@]}" --threads "$3" --warmup 2 --repeat "$reps" --quiet \
    --metrics "$tmp/m.json" >"$tmp/run.log"
  json_field "$tmp/m.json" wall_s
}
openblas_time() { "$openblas" --threads "$1" --reps "$reps" --batch "$2" | awk '/^median_s/ {print $2}'; }
torch_time() {
  /usr/bin/python3 "$root/bench/mlp_torch.py" --threads "$1" --reps "$reps" --batch "$2" >"$tmp/torch.log" 2>&1 || true
  if grep -q '^median_s' "$tmp/torch.log"; then awk '/^median_s/ {print $2}' "$tmp/torch.log"; else echo skipped; fi
}
gflops() { python3 -c "import sys; print(f'{$1 / float(sys.argv[1]) / 1e9:.1f}')" "$2"; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$1" "$2"; }

flops=$((2 * 4096 * 1024 * 4096 * 2))
echo "examples/mlp.tap, 2 threads, median of $reps runs ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
t_tap=$(tapestry_time "$root/examples/mlp.tap" "$root/examples/plans/mlp-best.json" 2)
t_ob=$(openblas_time 2 4096)
t_torch=$(torch_time 2 4096)
printf '  %-34s %8.4f s  %6s GFLOP/s\n' "tapestry (mlp-best.json)" "$t_tap" "$(gflops $flops "$t_tap")"
printf '  %-34s %8.4f s  %6s GFLOP/s   tapestry/openblas = %sx (target >= 0.95)\n' \
  "(a) OpenBLAS sgemm + loops" "$t_ob" "$(gflops $flops "$t_ob")" "$(ratio "$t_ob" "$t_tap")"
if [[ "$t_torch" == skipped ]]; then
  echo "  (b) PyTorch: skipped ($(head -1 "$tmp/torch.log"))"
else
  printf '  %-34s %8.4f s  %6s GFLOP/s   tapestry/torch = %sx (target >= 1.1)\n' \
    "(b) PyTorch F.linear/relu" "$t_torch" "$(gflops $flops "$t_torch")" "$(ratio "$t_torch" "$t_tap")"
fi

echo
echo "scaling (mlp-best.json):"
t1=$(tapestry_time "$root/examples/mlp.tap" "$root/examples/plans/mlp-best.json" 1)
printf '  1 thread  %8.4f s  %6s GFLOP/s\n' "$t1" "$(gflops $flops "$t1")"
printf '  2 threads %8.4f s  %6s GFLOP/s  speed-up %sx\n' "$t_tap" "$(gflops $flops "$t_tap")" "$(ratio "$t1" "$t_tap")"

[[ $sweep -eq 1 ]] || exit 0
echo
echo "batch sweep, 2 threads: no sharding (one application per operation), split on batch in 4,"
echo "split on the output features (out) in 2, and the OpenBLAS baseline (a)"
printf '  %6s %12s %12s %12s %12s\n' batch "unsharded" "batch/4" "out/2" "openblas"
for batch in 64 256 1024 4096 8192; do
  sed "s/X:  f32\[4096, 1024\]/X:  f32[$batch, 1024]/" "$root/examples/mlp.tap" >"$tmp/mlp.tap"
  cat >"$tmp/batch.json" <<JSON
{"ops": {"H/linear": {"split": {"batch": 4}}, "Y": {"split": {"batch": 4}}}, "fuse": "auto"}
JSON
  cat >"$tmp/out.json" <<JSON
{"ops": {"H/linear": {"split": {"out": 2}}, "Y": {"split": {"out": 2}}}, "fuse": "auto"}
JSON
  f=$((2 * batch * 1024 * 4096 * 2))
  t_one=$(tapestry_time "$tmp/mlp.tap" "" 2)
  t_batch=$(tapestry_time "$tmp/mlp.tap" "$tmp/batch.json" 2)
  t_out=$(tapestry_time "$tmp/mlp.tap" "$tmp/out.json" 2)
  t_b=$(openblas_time 2 "$batch")
  printf '  %6d %7s GF/s %7s GF/s %7s GF/s %7s GF/s\n' "$batch" "$(gflops $f "$t_one")" \
    "$(gflops $f "$t_batch")" "$(gflops $f "$t_out")" "$(gflops $f "$t_b")"
done
