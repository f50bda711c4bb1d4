#!/usr/bin/env bash
# End-to-end: `tapestry run --optimize --verify` on every example and on issue 25's slice repro
# (tests/data/cli/slice_of_add.tap) runs the plan the search chooses, and it verifies: a plan that
# prices is a plan that runs. Each graph is searched for h100x8 and for cpu-local with a fixed
# evaluation budget (deterministic: the same plan on every machine), then run on the block
# executor with the fast kernels; the slice repro also with the reference kernels, and under
# {"fuse": "auto"} by cost, explain, shard and run.
# Usage: optimize_examples_test.sh TAPESTRY ROOT [full]
#   default: the small stand-ins of tests/data/cli (same operation names), 300 plans per search
#            (~20 s);
#   full:    examples/*.tap at their real sizes, h100x8 only (slow: --verify runs the float64
#            oracle over each whole model, minutes for the MLP and transformer_large).
set -uo pipefail
tapestry=$1
root=$2
mode=${3:-small}
source "$(dirname "$0")/cli_testing.sh"
cd "$root" || exit 1

graph_for() {  # example file → the graph this mode runs
  local small=tests/data/cli/$(basename "$1" .tap)_small.tap
  if [[ $mode == small && -f $small ]]; then echo "$small"; else echo "$1"; fi
}

targets=(h100x8 cpu-local)
[[ $mode == full ]] && targets=(h100x8)
for example in examples/*.tap tests/data/cli/slice_of_add.tap; do
  graph=$(graph_for "$example")
  for target in "${targets[@]}"; do
    "$tapestry" run "$graph" --optimize --target "$target" --max-evals 300 --verify --seed 2 \
      --threads 2 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    outputs=$(grep -c '^PASS' "$tmp/out")
    [[ $rc -eq 0 && $outputs -ge 1 ]] && ! grep -q '^FAIL' "$tmp/out" &&
      grep -q "^optimized for time on $target" "$tmp/out"
    check "run --optimize --target $target --verify: $graph ($outputs outputs PASS)" $?
  done
done

# The repro under its plan, by every command that lowers it; and the fusion asked for by name
# is refused with the reason instead of an internal error.
repro=tests/data/cli/slice_of_add.tap
echo '{"fuse": "auto"}' >"$tmp/auto.json"
"$tapestry" run $repro --plan "$tmp/auto.json" --verify --kernels reference >"$tmp/out" 2>"$tmp/err" &&
  grep -q '^PASS   y: .*bitwise' "$tmp/out"
check "run the repro under fuse auto, reference kernels: bitwise" $?
for cmd in "cost $repro --target h100x8" "explain $repro --target h100x8" \
            "shard $repro -o $tmp/sharded.json"; do
  # shellcheck disable=SC2086
  "$tapestry" $cmd --plan "$tmp/auto.json" >"$tmp/out" 2>"$tmp/err"
  check "${cmd%% *} the repro under fuse auto" $?
done
echo '{"fuse": [["h", "s"]]}' >"$tmp/group.json"
"$tapestry" shard $repro --plan "$tmp/group.json" --explain -o "$tmp/sharded.json" >"$tmp/out" 2>"$tmp/err" &&
  grep -q "refused  fuse-elementwise on h: s reads only zr\[0:2, 0:1, 0:8\] of h" "$tmp/err"
check "the fusion asked for by name: refused with the reason" $?

finish
