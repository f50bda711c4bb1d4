#!/usr/bin/env bash
# `make bench`: run every benchmark built in BUILD_DIR/bench (Google Benchmark programs), then
# any bench/*.sh scripts (mlp_vs_baselines.sh: the MLP against the FMA peak and its baselines). Quote the ratios they
# print, not absolute times.
set -euo pipefail
build=${1:?usage: bench.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
for exe in "$build"/bench/*_bench; do
  [[ -x "$exe" ]] || continue
  echo "== $(basename "$exe")"
  "$exe" --benchmark_min_time=0.2
done
for script in "$root"/bench/*.sh; do
  [[ -x "$script" ]] || continue
  echo "== $(basename "$script")"
  "$script" "$build"
done
