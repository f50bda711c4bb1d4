#!/usr/bin/env bash
# End-to-end: `tapestry plan GRAPH --standard NAME --target T` on every example and the search
# test graphs. `--standard all` lists each standard plan or why it does not apply; each plan that
# applies is valid JSON that `tapestry cost` prices exactly as it prices the same plan written by
# hand; the small examples run it with --verify; a plan that does not apply exits 1 with its
# reason; bad names and a missing --target exit 2. Usage: standard_plans_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"
cd "$root" || exit 1

# A plan that does not apply is refused alone with the reason `--standard all` lists for it; each
# distinct reason of each plan is checked alone once (the training plans' "not a training step"
# on every forward graph and target is one check, not eighteen).
declare -A refusal_checked
for graph in examples/*.tap tests/data/search/*.tap; do
  name=$(basename "$graph" .tap)
  for target in h100x8 h100x64; do
    "$tapestry" plan "$graph" --standard all --target "$target" >"$tmp/all" 2>"$tmp/err"
    [[ $? -eq 0 && $(wc -l <"$tmp/all") -eq 7 ]]
    check "plan $name --standard all on $target" $?
    for plan in data-parallel megatron megatron-rs 2d zero3 megatron-3d-full megatron-3d-selective; do
      reason=$(sed -nE "s/^$plan +does not apply: //p" "$tmp/all")
      if [[ -n $reason ]]; then
        [[ -n ${refusal_checked["$plan: $reason"]:-} ]] && continue
        refusal_checked["$plan: $reason"]=1
        "$tapestry" plan "$graph" --standard "$plan" --target "$target" >"$tmp/out" 2>"$tmp/err"
        [[ $? -eq 1 ]] &&
          grep -qxF "tapestry plan: $plan does not apply to $graph on $target: $reason" "$tmp/err"
        check "$name $plan on $target does not apply, alone as in the listing" $?
        continue
      fi
      "$tapestry" plan "$graph" --standard "$plan" --target "$target" >"$tmp/p.json" 2>"$tmp/err" &&
        "$tapestry" cost "$graph" --plan "$tmp/p.json" --target "$target" --json >"$tmp/a.json" 2>>"$tmp/err"
      check "$name $plan on $target prices" $?
    done
  done
done

# The standard Megatron plan is the expert tests' hand-written one with Y replicated (the
# all-gather that makes the combine's reduce-scatter an all-reduce): the same JSON, the same
# price; megatron-rs, which leaves outputs cut, is the hand-written one as it is.
python3 -c "
import json, sys
p = json.load(open(sys.argv[1])); p['outputs'] = {'Y': {'replicate': 'all'}}
json.dump(p, open(sys.argv[2], 'w'))" tests/data/search/transformer_mlp-megatron.json "$tmp/hand.json"
"$tapestry" plan tests/data/search/transformer_mlp_bf16.tap --standard megatron --target h100x8 >"$tmp/p.json" 2>"$tmp/err" &&
  python3 -c "import json,sys; assert json.load(open(sys.argv[1])) == json.load(open(sys.argv[2]))" \
    "$tmp/p.json" "$tmp/hand.json" &&
  "$tapestry" cost tests/data/search/transformer_mlp_bf16.tap --plan "$tmp/p.json" --target h100x8 --json >"$tmp/a.json" &&
  "$tapestry" cost tests/data/search/transformer_mlp_bf16.tap --plan "$tmp/hand.json" \
    --target h100x8 --json >"$tmp/b.json" && cmp -s "$tmp/a.json" "$tmp/b.json" &&
  "$tapestry" plan tests/data/search/transformer_mlp_bf16.tap --standard megatron-rs --target h100x8 >"$tmp/rs.json" &&
  python3 -c "import json,sys; assert json.load(open(sys.argv[1])) == json.load(open(sys.argv[2]))" \
    "$tmp/rs.json" tests/data/search/transformer_mlp-megatron.json
check "megatron is transformer_mlp-megatron.json, priced the same" $?

# The small examples run their standard plans, results within --verify's bars.
for graph in examples/linear_relu.tap examples/convnet.tap; do
  "$tapestry" plan "$graph" --standard data-parallel --target h100x8 >"$tmp/p.json" 2>"$tmp/err" &&
    "$tapestry" run "$graph" --plan "$tmp/p.json" --verify --quiet >"$tmp/out" 2>>"$tmp/err"
  check "$(basename "$graph") data-parallel runs with --verify" $?
done

# The strategy line and the gains in explain.
"$tapestry" plan examples/mlp.tap --standard data-parallel --target h100x8 >"$tmp/p.json" 2>"$tmp/err" &&
  "$tapestry" explain examples/mlp.tap --plan "$tmp/p.json" --target h100x8 >"$tmp/out" 2>>"$tmp/err" &&
  head -1 "$tmp/out" | grep -qx "Strategy  data parallel ×8" &&
  sed -n 2p "$tmp/out" | grep -qE "^Gain      [0-9.]+× against one device \(.*\); 1\.00× against data parallel ×8 \("
check "explain names data parallelism and its gains" $?
"$tapestry" explain examples/mlp.tap --plan "$tmp/p.json" --target h100x8 --format json >"$tmp/out" 2>"$tmp/err" &&
  python3 -c "
import json, sys
e = json.load(open(sys.argv[1]))
assert e['strategy']['summary'] == 'data parallel ×8' and e['strategy']['data'] == 8, e['strategy']
assert [g['baseline'] for g in e['gains']] == ['one device', 'data parallel ×8'], e['gains']
assert e['gains'][1]['ratio'] == 1.0 and e['gains'][0]['ratio'] > 1, e['gains']" "$tmp/out"
check "explain --format json carries the strategy and the gains" $?

# The Megatron training plans on tests/data/training/gpt_step.tap (2 layers, Adam) on a dp 2 × tp 2
# mesh: both run on the block executor and --verify PASSes every output (the loss, 24 new weights
# and their 48 moments); selective recomputation recomputes its 6 operations (none refused) and
# the step equals the same plan without recomputation bitwise (reference kernels).
py=/usr/bin/python3
"$py" - "$tmp" <<'EOF'
import json, os, re, sys
import numpy as np
tmp = sys.argv[1]
t = json.load(open("targets/h100x8.json"))
t["name"], t["nodes"]["devices"], t["mesh"] = "h100x4-mesh", {"h100-sxm": 4}, {"dp": 2, "tp": 2}
json.dump(t, open(f"{tmp}/mesh.json", "w"))
rng = np.random.default_rng(5)
os.makedirs(f"{tmp}/in", exist_ok=True)
for line in open("tests/data/training/gpt_step.tap"):
    m = re.match(r"^(\w+):\s*(\w+)\[(.*)\]\s*$", line)
    if not m:
        continue
    name, dtype, dims = m.groups()
    shape = [int(x) for x in dims.split(",") if x.strip()]
    if dtype == "i64":
        a = np.array(1, dtype=np.int64)  # Adam's step counts from 1
    elif name.endswith("_v"):
        a = (0.001 * rng.random(shape)).astype(np.float32)  # a second moment is >= 0
    else:
        a = (0.1 * rng.standard_normal(shape)).astype(np.float32)
    np.save(f"{tmp}/in/{name}.npy", a)
EOF
step=tests/data/training/gpt_step.tap
for plan in megatron-3d-full megatron-3d-selective; do
  "$tapestry" plan $step --standard $plan --target "$tmp/mesh.json" >"$tmp/$plan.json" 2>"$tmp/err" &&
    "$tapestry" run $step --inputs "$tmp/in" --plan "$tmp/$plan.json" --verify --quiet >"$tmp/out" 2>>"$tmp/err" &&
    [[ $(grep -c '^PASS' "$tmp/out") -eq 73 ]] && ! grep -qE '^(FAIL|UNCHECKED)' "$tmp/out"
  check "gpt_step $plan on dp 2 × tp 2 runs and verifies" $?
done
"$tapestry" shard $step --plan "$tmp/megatron-3d-selective.json" --explain -o "$tmp/sharded.json" >"$tmp/out" 2>&1 &&
  [[ $(grep -c '^applied  recompute' "$tmp/out") -eq 6 ]] && ! grep -q '^refused  recompute' "$tmp/out" &&
  grep -q '^applied  recompute on P0: copy P0/recompute for dWv0/transpose, dWq0/softmax_grad$' "$tmp/out"
check "selective recomputation: its 6 operations recomputed, none refused" $?
"$py" -c "
import json, sys
p = json.load(open(sys.argv[1])); del p['recompute']; json.dump(p, open(sys.argv[2], 'w'))" \
  "$tmp/megatron-3d-selective.json" "$tmp/kept.json"
"$tapestry" run $step --inputs "$tmp/in" --plan "$tmp/megatron-3d-selective.json" --kernels reference \
  --outputs "$tmp/recomputed" --quiet >/dev/null 2>"$tmp/err" &&
  "$tapestry" run $step --inputs "$tmp/in" --plan "$tmp/kept.json" --kernels reference \
    --outputs "$tmp/kept" --quiet >/dev/null 2>>"$tmp/err" &&
  [[ $(ls "$tmp/kept" | wc -l) -eq 73 ]] && diff -r "$tmp/kept" "$tmp/recomputed" >/dev/null
check "the selectively recomputed step equals the kept one bitwise" $?

expect "unknown standard plan" 2 "unknown standard plan 'fsdp' \(expected one of data-parallel, megatron, megatron-rs, 2d, zero3, megatron-3d-full, megatron-3d-selective\)" -- \
  "$tapestry" plan examples/mlp.tap --standard fsdp --target h100x8
expect "--standard without --target" 2 "--standard needs --target" -- \
  "$tapestry" plan examples/mlp.tap --standard megatron
expect "2d on a one-axis mesh" 1 "2d does not apply to examples/mlp.tap on h100x8: the target's mesh has 1 axis \(d=8\)" -- \
  "$tapestry" plan examples/mlp.tap --standard 2d --target h100x8

finish
