#!/usr/bin/env bash
# Issue 15's target, checked: every float kernel of every example under examples/ takes a fast
# path. Each example runs on the block executor with the fast kernels, unsharded and under each
# of its bundled plans (examples/plans/<example>-*.json), with --metrics; every operation's
# "paths" must hold no "reference" applications, its "fallbacks" must be 0, and the summary must
# say "0 fallbacks". Then a forced fallback (an integer conv2d: the fast set runs the reference)
# must be reported by name.
# Usage: fast_paths_test.sh TAPESTRY ROOT [full]
#   default: the examples at their real sizes except mlp, resnet_bottleneck and
#            transformer_large, which run as the small stand-ins of tests/data/cli (same operation
#            names, so the plans apply)
#   full:    every example at its real size
set -uo pipefail
tapestry=$1
root=$2
mode=${3:-small}
# shellcheck source=cli_testing.sh
source "$(dirname "$0")/cli_testing.sh"

check_metrics() {  # metrics.json: exit 0 when no operation took the reference path
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
bad = [(o["operation"], o["paths"], o["fallbacks"]) for o in m["operations"]
       if "reference" in o["paths"] or o["fallbacks"] != 0]
assert not bad and m["fallbacks"] == 0 and "reference" not in m["paths"], bad
assert sum(m["paths"].values()) == m["applications"], m["paths"]
PY
}

for example in "$root"/examples/*.tap; do
  name=$(basename "$example" .tap)
  graph=$example
  if [[ $mode == small && -f "$root/tests/data/cli/${name}_small.tap" &&
        ($name == mlp || $name == resnet_bottleneck || $name == transformer_large) ]]; then
    graph="$root/tests/data/cli/${name}_small.tap"
  fi
  for plan in none "$root"/examples/plans/"$name"-*.json; do
    [[ -e $plan || $plan == none ]] || continue
    args=()
    [[ $plan != none ]] && args=(--plan "$plan")
    label="$name $([[ $plan == none ]] && echo unsharded || basename "$plan" .json)"
    "$tapestry" run "$graph" "${args[@]}" --threads 2 --quiet --metrics "$tmp/m.json" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [[ $rc -eq 0 ]] && grep -qE "^kernel paths: .* applications; 0 fallbacks$" "$tmp/out" &&
      ! grep -q "reference" "$tmp/out" && check_metrics "$tmp/m.json" >"$tmp/log" 2>&1
    check "fast paths of $label (rc=$rc)" $?
  done
done

# A forced fallback: integer conv2d has no fast path; the run names the operation.
printf 'X: i32[2, 3, 6, 6]\nK: i32[4, 3, 3, 3]\nY = conv2d(X, K)\noutput Y\n' >"$tmp/int.tap"
"$tapestry" run "$tmp/int.tap" --split Y.n=2 --threads 2 --quiet --metrics "$tmp/int.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 0 ]] && grep -qxF "kernel paths: reference 2 applications; fallbacks in Y (2 calls)" "$tmp/out" &&
  ! check_metrics "$tmp/int.json" >/dev/null 2>&1
check "a forced fallback is reported (rc=$rc)" $?
finish
