#!/usr/bin/env bash
# The plan `tapestry optimize` picks for time on cpu-local against the hand-written plans of
# examples/plans, run for real: for examples/mlp.tap and examples/transformer_block.tap, optimize
# (objective time, seed 0, a time budget), then `tapestry run` every plan (the unsharded one too)
# with a warm-up and the median of REPEAT timed runs, all in this one script run.
#
#   bench/optimize_vs_plans.sh path/to/tapestry|BUILD_DIR [BUDGET_S] [REPEAT]
# (scripts/bench.sh passes the build directory and --sweep, which is ignored.)
set -euo pipefail
tapestry=${1:?usage: optimize_vs_plans.sh path/to/tapestry|BUILD_DIR [BUDGET_S] [REPEAT]}
[[ -d $tapestry ]] && tapestry=$tapestry/src/cli/tapestry
budget=10
repeat=5
[[ ${2:-} =~ ^[0-9.]+$ ]] && budget=$2
[[ ${3:-} =~ ^[0-9]+$ ]] && repeat=$3
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

wall() {  # wall GRAPH PLAN: the median wall time of the timed runs, in ms
  "$tapestry" run "$1" --plan "$2" --threads 2 --warmup 1 --repeat "$repeat" --quiet \
    --metrics "$tmp/m.json" >/dev/null
  python3 -c "import json,sys; print(f\"{json.load(open(sys.argv[1]))['wall_s'] * 1e3:.1f}\")" "$tmp/m.json"
}

for name in mlp transformer_block; do
  graph=$root/examples/$name.tap
  "$tapestry" optimize "$graph" --target cpu-local --objectives time --time-budget "$budget" \
    --quiet --plan-out "$tmp/optimized.json" >"$tmp/log"
  echo "== $name: $(head -1 "$tmp/log")"
  echo '{}' >"$tmp/unsharded.json"
  printf '  %-36s %10s\n' plan "wall (ms)"
  for plan in "$tmp/unsharded.json" "$root"/examples/plans/"$name"-*.json "$tmp/optimized.json"; do
    printf '  %-36s %10s\n' "$(basename "$plan" .json)" "$(wall "$graph" "$plan")"
  done
  echo "  optimized plan: $(python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))" "$tmp/optimized.json")"
done
