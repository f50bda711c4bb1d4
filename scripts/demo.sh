#!/usr/bin/env bash
# `make demo`: the main job on the bundled examples — build a graph, shard it under a plan, draw
# it, run it in parallel and prove the sharded result equals the naive one; then run the MLP of
# examples/mlp.tap at full size on the block executor with the fast kernels.
#
#   scripts/demo.sh path/to/tapestry [OUT_DIR]
set -euo pipefail
tapestry=${1:?usage: demo.sh path/to/tapestry [OUT_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/build/demo}
mkdir -p "$out"
run() { echo "\$ tapestry $*"; "$tapestry" "$@"; echo; }

echo "== The running example: Y = relu(linear(X, W, b)), X at zr[-40:60, 20:32]"
run build "$root/examples/linear_relu.tap" -o "$out/linear_relu.json"
run shard "$root/examples/linear_relu.tap" --plan "$root/examples/plans/linear_relu-batch2-fused.json" \
  --explain -o "$out/linear_relu-sharded.json"
run render "$out/linear_relu-sharded.json" -o "$out/linear_relu-sharded.svg"
run run "$root/examples/linear_relu.tap" --plan "$root/examples/plans/linear_relu-batch2-fused.json" \
  --kernels reference --verify --quiet

echo "== Megatron-style MLP (small stand-in): the second linear's reduction split, fast kernels"
run run "$root/tests/data/cli/mlp_small.tap" --plan "$root/examples/plans/mlp-megatron.json" --verify --quiet

echo "== The MLP of examples/mlp.tap at full size (X 4096×1024, 68.7 GFLOP) on 2 threads"
run run "$root/examples/mlp.tap" --plan "$root/examples/plans/mlp-best.json" --threads 2 --quiet \
  --metrics "$out/mlp-metrics.json" --trace "$out/mlp-trace.json"
echo "open $out/mlp-trace.json in https://ui.perfetto.dev to see the shards on each thread"
