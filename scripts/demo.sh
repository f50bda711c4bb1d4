#!/usr/bin/env bash
# `make demo`: the main job on the bundled examples — build a graph, shard it under a plan, draw
# it, run it in parallel and prove the sharded result equals the naive one; then run the MLP of
# examples/mlp.tap at full size on the block executor with the fast kernels; then let the optimizer
# choose the plans: the MLP for this machine (front, chosen plan explained, run verified) and the
# transformer MLP for an 8-GPU node, against the Megatron plan.
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

echo
echo "== The optimizer chooses the plan: examples/mlp.tap on this machine (cpu-local)"
run build "$root/examples/mlp.tap" -o "$out/mlp.json"
run render "$out/mlp.json" -o "$out/mlp-graph.svg"
run optimize "$root/examples/mlp.tap" --target cpu-local --objectives time,memory --time-budget 3 \
  --quiet -o "$out/mlp-front.json" --best time --plan-out "$out/mlp-optimized.json" --plot "$out/mlp-front.svg"
run explain "$root/examples/mlp.tap" --target cpu-local --plan "$out/mlp-optimized.json"
run render "$root/examples/mlp.tap" --target cpu-local --plan "$out/mlp-optimized.json" -o "$out/mlp-sharded.svg"
run run "$root/examples/mlp.tap" --plan "$out/mlp-optimized.json" --threads 2 --verify --quiet

echo "== The transformer MLP (8192 tokens, hidden 4096, ffn 16384, bf16) on h100x8, weights capped"
mlp16=$root/tests/data/search/transformer_mlp_bf16.tap
echo "The Megatron plan (first linear on out, second on its reduction in):"
run cost "$mlp16" --target h100x8 --plan "$root/tests/data/search/transformer_mlp-megatron.json"
run optimize "$mlp16" --target h100x8 --objectives time,memory --max-memory-per-device 200M \
  --max-evals 1500 --seed 1 --quiet -o "$out/transformer_mlp-front.json" --plan-out "$out/transformer_mlp-optimized.json" \
  --plot "$out/transformer_mlp-front.svg"
run explain "$mlp16" --target h100x8 --plan "$out/transformer_mlp-optimized.json"
echo "pictures: $out/mlp-graph.svg (graph), $out/mlp-sharded.svg (sharded, by device), $out/mlp-front.svg and $out/transformer_mlp-front.svg (fronts)"
