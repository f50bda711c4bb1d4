#!/usr/bin/env bash
# End-to-end: `tapestry cost` and `tapestry explain` on every example under every bundled plan of
# that example and the unsharded plan, on every preset target; unsharded plans move nothing on
# one device; the Megatron MLP moves exactly its partial sum; bad plans and targets exit 2 with
# the located error. Usage: cost_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"
cd "$root" || exit 1

json_field() {  # json_field FILE KEY: prints the top-level number KEY of a JSON file
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"
}

echo '{}' >"$tmp/unsharded.json"
targets=$(cd targets && ls *.json | sed 's/\.json$//')
for graph in examples/*.tap; do
  name=$(basename "$graph" .tap)
  for plan in "$tmp/unsharded.json" examples/plans/"$name"-*.json; do
    [[ -f $plan ]] || continue
    for target in $targets; do
      what="$name $(basename "$plan") on $target"
      "$tapestry" cost "$graph" --plan "$plan" --target "$target" --json >"$tmp/cost.json" 2>"$tmp/err"
      check "cost $what" $?
      "$tapestry" explain "$graph" --plan "$plan" --target "$target" --format json >"$tmp/out" 2>"$tmp/err" &&
        python3 -c "import json,sys; e=json.load(open(sys.argv[1])); assert e['operations'] and 'critical_path' in e" "$tmp/out"
      check "explain $what" $?
      if [[ $plan == "$tmp/unsharded.json" ]]; then
        # Nothing moves; one device — except on cpu-local, whose cores share memory: there
        # independent operations run side by side on whichever core is free, as the thread pool
        # runs them.
        [[ $(json_field "$tmp/cost.json" bytes_moved) == 0 ]] &&
          { [[ $target == cpu-local ]] || [[ $(json_field "$tmp/cost.json" devices_used) == 1 ]]; }
        check "unsharded $name on $target: 0 bytes moved, 1 device" $?
      fi
    done
  done
done

# The Megatron MLP: the second linear's partial sums are reduce-scattered (nothing reads Y, so
# the combine is cut by rows where the blocks are) — each GPU sends the other half of its
# partial: tokens × hidden float32 values (4096 × 1024 × 4 bytes) in all, nothing else moves.
"$tapestry" cost examples/mlp.tap --plan examples/plans/mlp-megatron.json --target h100x8 --json >"$tmp/cost.json" 2>"$tmp/err"
[[ $(json_field "$tmp/cost.json" bytes_moved) == $((4096 * 1024 * 4)) ]]
check "megatron moves 4096*1024*4 bytes" $?
"$tapestry" explain examples/mlp.tap --plan examples/plans/mlp-megatron.json --target h100x8 >"$tmp/out" 2>"$tmp/err"
grep -qE "^  reduce-scatter \(ring\)  Y/matmul/partial of Y/matmul → Y/matmul/reduce: 16.0 MiB over 2 devices \(gpu:0, gpu:1\), 2 transfers" "$tmp/out" &&
  grep -qE "→ result Y/matmul +\[Partial\(sum\)\]" "$tmp/out" && grep -qE "← s0_x X +\[Replicate\(\)\]" "$tmp/out"
check "megatron explained: Partial(sum), Replicate(), one reduce-scatter" $?
# The combine named unsplit: the old reduce onto gpu:0.
echo '{"ops": {"H/linear": {"split": {"out": 2}}, "H": {"split": {"d1": 2}}, "Y": {"split": {"in": 2}},
  "Y/matmul/reduce": {}}, "fuse": [["H/linear", "H"]]}' >"$tmp/megatron-reduce.json"
"$tapestry" explain examples/mlp.tap --plan "$tmp/megatron-reduce.json" --target h100x8 >"$tmp/out" 2>"$tmp/err"
grep -qE "^  reduce +Y/matmul/partial of Y/matmul → Y/matmul/reduce: 1 transfer, 16.0 MiB, gpu:1 → gpu:0" "$tmp/out"
check "megatron with the combine named unsplit: one reduce onto gpu:0" $?
# The transformer MLP on 8 GPUs (issue 26): Megatron's combine reduce-scattered (860.3 µs and
# 232 MiB on gpu:0 when the combine ran there alone); with Y replicated, the ring all-reduce. The
# bf16 graph's partial sums are float32 (rewrite/mixed_precision.h): 128 MiB, not 64.
"$tapestry" explain tests/data/search/transformer_mlp_bf16.tap --target h100x8 \
  --plan tests/data/search/transformer_mlp-megatron.json >"$tmp/out" 2>"$tmp/err" &&
  grep -qE "^  reduce-scatter \(ring\)  Y/matmul/partial of Y/matmul → Y: 128.0 MiB over 8 devices \(gpu:0 … gpu:7\), 56 transfers, 341.2 µs$" "$tmp/out" &&
  grep -qE "^  makespan 806.8 µs, peak memory 256.0 MiB" "$tmp/out"
check "transformer MLP, Megatron: one reduce-scatter, 806.8 µs, 256 MiB" $?
python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['outputs']={'Y': {'replicate': 'all'}}; print(json.dumps(p))" \
  tests/data/search/transformer_mlp-megatron.json >"$tmp/megatron-ar.json"
"$tapestry" explain tests/data/search/transformer_mlp_bf16.tap --target h100x8 --plan "$tmp/megatron-ar.json" >"$tmp/out" 2>"$tmp/err" &&
  grep -qE "^  all-reduce \(ring: reduce-scatter \+ all-gather\)  Y/matmul/partial of Y/matmul → output: 128.0 MiB over 8 devices \(gpu:0 … gpu:7\), 112 transfers, .* \(reduce-scatter 341.2 µs, all-gather 182.5 µs\)$" "$tmp/out"
check "transformer MLP, Megatron with Y replicated: one ring all-reduce" $?
echo '{"ops": {"Y": {"split": {"in": 8}}}, "outputs": {"Y": {"replicate": "tp"}}}' >"$tmp/bad-axis.json"
expect "replicate along a mesh axis the target lacks" 2 \
  "bad-axis.json: /outputs/Y/replicate: target 'h100x8' has no mesh axis 'tp' \\(its mesh: d; or \"all\"\\)" -- \
  "$tapestry" cost tests/data/search/transformer_mlp_bf16.tap --plan "$tmp/bad-axis.json" --target h100x8
echo '{"ops": {"Y/matmul/reduce": {"split": {"d0": 8}}}}' >"$tmp/underived.json"
expect "a derived operation the plan's rewrites do not make, located in the plan file" 2 \
  "underived.json: the plan does not fit the graph:" -- \
  "$tapestry" cost tests/data/search/transformer_mlp_bf16.tap --plan "$tmp/underived.json" --target h100x8
echo '{"outputs": {"Y": {"replicate": 8}}}' >"$tmp/bad-replicate.json"
expect "replicate is not a string" 2 "bad-replicate.json: /outputs/Y/replicate: expected a string, got number" -- \
  "$tapestry" cost tests/data/search/transformer_mlp_bf16.tap --plan "$tmp/bad-replicate.json" --target h100x8
echo '{"outputs": {"H": {"replicate": "all"}}}' >"$tmp/not-output.json"
expect "replicate a tensor that is not an output" 2 "/outputs/H: no graph output named 'H' \\(outputs: Y\\)" -- \
  "$tapestry" cost tests/data/search/transformer_mlp_bf16.tap --plan "$tmp/not-output.json" --target h100x8
"$tapestry" cost examples/mlp.tap --plan examples/plans/mlp-megatron.json --target h100x8 >"$tmp/out" 2>"$tmp/err"
grep -qE "^  makespan .* 2 devices" "$tmp/out" && grep -qE "^  gpu:1 " "$tmp/out"
check "cost table" $?

# Collectives: the partial sums of a row-parallel product reduce-scattered into the combine, the
# combine's output all-gathered by the next projection — one all-reduce of 64 MiB on 8 GPUs whose
# halves each take the ring's 7 · (3.4 µs + 8 MiB / 370 GB/s) = 182.5 µs; with the combine unsplit,
# a reduce and a broadcast (chains). A plan holds all 8 GPUs of the node.
"$tapestry" explain tests/data/cost/megatron_partials_bf16.tap --target h100x8 \
  --plan tests/data/cost/megatron_partials-allreduce.json >"$tmp/out" 2>"$tmp/err" &&
  grep -qE "^  all-reduce \(ring: reduce-scatter \+ all-gather\)  P of P → O: 64.0 MiB over 8 devices \(gpu:0 … gpu:7\), 112 transfers, .* \(reduce-scatter 182.5 µs, all-gather 182.5 µs\)$" "$tmp/out"
check "explain names the all-reduce with both halves' times" $?
"$tapestry" explain tests/data/cost/megatron_partials_bf16.tap --target h100x8 \
  --plan tests/data/cost/megatron_partials-reduce.json --format json >"$tmp/out" 2>"$tmp/err" &&
  python3 - "$tmp/out" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["communication"]
assert [(x["pattern"], x["algorithm"], x["size_bytes"], len(x["devices"])) for x in c] == \
    [("reduce", "chain", 64 << 20, 8), ("broadcast", "chain", 64 << 20, 8)], c
assert all(abs(x["seconds"] - ((64 << 20) / 370e9 + 7 * 3.4e-6)) < 1e-9 for x in c), c
PY
check "explain --format json: a reduce and a broadcast, each a chain" $?
"$tapestry" cost examples/mlp.tap --plan examples/plans/mlp-megatron.json --target h100x8 --json >"$tmp/cost.json" 2>"$tmp/err"
[[ $(json_field "$tmp/cost.json" devices_held) == 8 && $(json_field "$tmp/cost.json" devices_used) == 2 ]]
check "cost --json: 2 devices used, the node's 8 held" $?

# render --target: every shard drawn in its device's colour, naming its device.
"$tapestry" render examples/mlp.tap --plan examples/plans/mlp-megatron.json --target h100x8 -o "$tmp/placed.dot" >"$tmp/out" 2>"$tmp/err" &&
  [[ $(grep -c "on gpu:0" "$tmp/placed.dot") -eq 4 && $(grep -c "on gpu:1" "$tmp/placed.dot") -eq 4 ]]
check "render --target colours shards by device" $?
expect "render --plan without --target" 2 "--plan and --split need --target" -- \
  "$tapestry" render examples/mlp.tap --plan examples/plans/mlp-megatron.json -o "$tmp/x.dot"

# shard --target writes a graph in the placement dialect: valid against its target, invalid
# against a target lacking its devices, invalid when a transfer is removed.
"$tapestry" shard examples/mlp.tap --plan examples/plans/mlp-megatron.json --target h100x8 -o "$tmp/placed.json" >"$tmp/out" 2>"$tmp/err" &&
  "$tapestry" validate "$tmp/placed.json" --dialect placement --target h100x8 >"$tmp/out" 2>"$tmp/err" &&
  grep -q "valid: no issues" "$tmp/out"
check "shard --target validates in the placement dialect" $?
"$tapestry" validate "$tmp/placed.json" --dialect placement --target cpu-local >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 1 ]] && grep -q "is placed on \"gpu:1\", which target 'cpu-local' lacks" "$tmp/out"
check "placement against a target lacking its devices" $?
python3 - "$tmp/placed.json" "$tmp/tampered.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
for n in g["nodes"]:
    for url, tag in n.get("tags", {}).items():
        if url.endswith("/Placement"):
            tag.pop("receives", None)
json.dump(g, open(sys.argv[2], "w"))
PY
"$tapestry" validate "$tmp/tampered.json" --dialect placement >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 1 ]] && grep -q "error\[application-placement\]: Cross-device read without a transfer" "$tmp/out"
check "a removed transfer is reported" $?
"$tapestry" validate "$tmp/placed.json" --dialect application >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]]
check "the placed graph is a valid application graph too" $?

# Bad placements: exit 2 naming the plan file and JSON path.
cat >"$tmp/place.json" <<'JSON'
{"ops": {"Y": {"split": {"d0": 2}, "place": ["gpu:0", "gpu:9"]}}}
JSON
expect "place on a device the target lacks" 2 "place.json: /ops/Y/place/1: operation 'Y': target 'h100x8' has no device 'gpu:9' \(it has gpu:0 … gpu:7\); --ignore-placement" -- \
  "$tapestry" cost examples/linear_relu.tap --plan "$tmp/place.json" --target h100x8
cat >"$tmp/mesh.json" <<'JSON'
{"ops": {"Y": {"split": {"d0": 2}, "mesh": {"d0": "pp"}}}}
JSON
expect "mesh axis the target lacks" 2 "mesh.json: /ops/Y/mesh/d0: operation 'Y': target 'h100x64' has no mesh axis 'pp'" -- \
  "$tapestry" explain examples/linear_relu.tap --plan "$tmp/mesh.json" --target h100x64
cat >"$tmp/both.json" <<'JSON'
{"ops": {"Y": {"mesh": {"d0": "dp"}, "place": ["gpu:0"]}}}
JSON
expect "place and mesh together" 2 "both.json: /ops/Y: \"place\" and \"mesh\" both say where the shards run" -- \
  "$tapestry" cost examples/linear_relu.tap --plan "$tmp/both.json" --target h100x8
sed 's/"bandwidth_Bps": 4.5e+11/"bandwidth_Bps": -1/; s/"bandwidth_Bps": 450e9/"bandwidth_Bps": -1/' targets/h100x8.json >"$tmp/bad-target.json"
expect "negative bandwidth" 2 "bad-target.json: /links/intra_node/bandwidth_Bps: must be" -- \
  "$tapestry" cost examples/linear_relu.tap --target "$tmp/bad-target.json"
expect "unknown preset" 2 "h100x9" -- "$tapestry" cost examples/linear_relu.tap --target h100x9
expect "target is required" 2 "target" -- "$tapestry" cost examples/linear_relu.tap

# --trace: the predicted schedule as a Chrome trace, one event per application and transfer;
# an unwritable path fails before any work and leaves nothing behind.
"$tapestry" cost examples/mlp.tap --plan examples/plans/mlp-megatron.json --target h100x8 \
  --trace "$tmp/predicted.json" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -q "wrote $tmp/predicted.json" "$tmp/err" &&
  /usr/bin/env python3 - "$tmp/predicted.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
apps = [e for e in events if e["ph"] == "X" and e["cat"] != "transfer"]
moves = [e for e in events if e["ph"] == "X" and e["cat"] == "transfer"]
tracks = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
assert len(apps) == 8 and len(moves) >= 1, (len(apps), len(moves))
assert {"gpu:0", "gpu:1"} <= tracks, tracks
assert max(e["ts"] + e["dur"] for e in apps + moves) > 790, "816.0 µs makespan"
PY
check "cost --trace writes the predicted schedule" $?
"$tapestry" explain examples/linear_relu.tap --target cpu-local --trace "$tmp/explained.json" \
  >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 && -s "$tmp/explained.json" ]]
check "explain --trace too" $?
expect "unwritable --trace" 2 "--trace" -- \
  "$tapestry" cost examples/linear_relu.tap --target h100x8 --trace "$tmp/no/such/dir/t.json"
[[ ! -e "$tmp/no/such/dir/t.json" ]]
check "nothing written for an unwritable --trace" $?

finish
