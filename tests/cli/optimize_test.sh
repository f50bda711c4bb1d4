#!/usr/bin/env bash
# End-to-end: `tapestry optimize` writes the front (JSON), the best plan (which cost, explain and
# run accept) and the plot; the same seed and evaluation budget give the same front on 1 and 2
# threads; a search killed with SIGKILL resumes from its checkpoint without losing its front;
# `run --optimize --verify` runs the plan it chooses; bad arguments exit 2.
# Usage: optimize_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"
cd "$root" || exit 1

mlp=examples/mlp.tap

# The front, the best plan, the plot.
"$tapestry" optimize $mlp --target h100x8 --objectives time,memory --max-evals 400 --seed 1 \
  -o "$tmp/front.json" --best time --plan-out "$tmp/best.json" --plot "$tmp/front.svg" >"$tmp/out" 2>"$tmp/err"
check "optimize writes its files" $?
python3 - "$tmp/front.json" "$tmp/best.json" <<'PY'
import json, sys
front = json.load(open(sys.argv[1]))
best = json.load(open(sys.argv[2]))
assert front["objectives"] == ["time", "memory"] and front["evaluations"] == 400
members = front["front"]
assert members and [m["name"] for m in members] == [f"p{i}" for i in range(len(members))]
for m in members:
    assert set(m["cost"]) >= {"makespan_s", "peak_memory_bytes", "devices_used", "energy_j"}
    assert m["score"]["time"] == m["cost"]["makespan_s"]
# No member dominates another; the best plan for time is the fastest member's plan.
for a in members:
    for b in members:
        if a is not b:
            sa, sb = a["score"], b["score"]
            assert not (sa["time"] <= sb["time"] and sa["memory"] <= sb["memory"] and sa != sb)
fastest = min(members, key=lambda m: (m["score"]["time"], m["score"]["memory"]))
assert fastest["plan"] == best, (fastest["plan"], best)
PY
check "front.json: named, undominated members; best.json is the fastest's plan" $?
grep -q '<svg' "$tmp/front.svg" && grep -q 'time (µs)' "$tmp/front.svg" && grep -q '>p0<' "$tmp/front.svg"
check "front.svg: axes with units, points named" $?
"$tapestry" cost $mlp --target h100x8 --plan "$tmp/best.json" --json >"$tmp/cost.json" 2>"$tmp/err" &&
  python3 -c "import json,sys; c=json.load(open(sys.argv[1])); f=json.load(open(sys.argv[2])); \
assert abs(c['makespan_s'] - min(m['score']['time'] for m in f['front'])) < 1e-12" "$tmp/cost.json" "$tmp/front.json"
check "tapestry cost prices best.json as the front says" $?
"$tapestry" explain $mlp --target h100x8 --plan "$tmp/best.json" >"$tmp/out" 2>"$tmp/err"
check "tapestry explain accepts best.json" $?

# --trace: a header, then the best values as they improved — each line better on some objective
# and worse on none than the line before (a front's best only improves) —, and the search's end:
# every plan counted, the front's own best values.
"$tapestry" optimize $mlp --target h100x8 --objectives time,memory --max-evals 400 --seed 1 \
  --trace "$tmp/trace.csv" -o "$tmp/front-t.json" >/dev/null 2>"$tmp/err" &&
  python3 - "$tmp/trace.csv" "$tmp/front-t.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
front = json.load(open(sys.argv[2]))["front"]
assert list(rows[0]) == ["seconds", "evaluations", "front", "time_s", "memory_B"], list(rows[0])
assert len(rows) >= 2, rows
for i, (a, b) in enumerate(zip(rows, rows[1:])):
    ta, ma, tb, mb = (float(x) for x in (a["time_s"], a["memory_B"], b["time_s"], b["memory_B"]))
    assert tb <= ta and mb <= ma and ((tb, mb) != (ta, ma) or i == len(rows) - 2), (a, b)
    assert float(b["seconds"]) >= float(a["seconds"]) and int(b["evaluations"]) >= int(a["evaluations"])
last = rows[-1]
assert int(last["evaluations"]) == 400 and int(last["front"]) == len(front), last
assert abs(float(last["time_s"]) - min(m["score"]["time"] for m in front)) <= 1e-9 * float(last["time_s"])
assert float(last["memory_B"]) == min(m["score"]["memory"] for m in front)
PY
check "--trace: the best values as they improved, the last the front's" $?
expect "unwritable trace" 2 "cannot write the trace" -- "$tapestry" optimize $mlp --target h100x8 --max-evals 10 --trace "$tmp/no/such/dir/t.csv"
"$tapestry" optimize $mlp --target h100x8 --max-evals 10 --resume "$tmp/nothing.json" --trace "$tmp/t-err.csv" >/dev/null 2>&1
[[ $? -eq 2 && ! -e "$tmp/t-err.csv" ]]
check "--trace: a search that ends in an error leaves no trace file" $?

# Determinism: the same seed and budget, 1 or 2 threads.
for threads in 1 2; do
  "$tapestry" optimize $mlp --target h100x8 --max-evals 300 --seed 4 --threads $threads \
    -o "$tmp/t$threads.json" >/dev/null 2>"$tmp/err"
done
python3 -c "import json,sys; a,b=(json.load(open(f))['front'] for f in sys.argv[1:]); assert a==b" \
  "$tmp/t1.json" "$tmp/t2.json"
check "the same front on 1 and 2 threads" $?

# Kill a search (SIGKILL), resume it from its checkpoint: the front is kept, the search goes on.
"$tapestry" optimize examples/transformer_block.tap --target h100x8 --objectives time,memory \
  --time-budget 60 --checkpoint "$tmp/ck.json" --checkpoint-every 0.2 --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [[ -s $tmp/ck.json ]] && break; sleep 0.1; done
sleep 0.5
kill -9 $pid
wait $pid 2>/dev/null
[[ -s $tmp/ck.json ]]
check "a checkpoint was written before the kill" $?
cp "$tmp/ck.json" "$tmp/ck-at-kill.json"
# A budget of plans, not seconds: under ASan at load 9, 0.5 s priced no new plan.
ck_evals=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['evaluations'])" "$tmp/ck-at-kill.json")
"$tapestry" optimize examples/transformer_block.tap --target h100x8 --objectives time,memory \
  --max-evals $((ck_evals + 128)) --resume "$tmp/ck.json" --checkpoint "$tmp/ck.json" \
  -o "$tmp/resumed.json" >"$tmp/out" 2>"$tmp/err"
check "resume a killed search" $?
python3 - "$tmp/ck-at-kill.json" "$tmp/resumed.json" "$tapestry" "$tmp" <<'PY'
import json, subprocess, sys
ck = json.load(open(sys.argv[1]))
resumed = json.load(open(sys.argv[2]))
assert resumed["evaluations"] > ck["evaluations"], (resumed["evaluations"], ck["evaluations"])
assert ck["front"]
members = [(m["score"]["time"], m["score"]["memory"]) for m in resumed["front"]]
# Every plan of the front at the kill is still in the front, or a member is at least as good.
for entry in ck["front"]:
    path = sys.argv[4] + "/ck-plan.json"
    json.dump(entry["genome"], open(path, "w"))
    cost = json.loads(subprocess.run(
        [sys.argv[3], "cost", "examples/transformer_block.tap", "--target", "h100x8", "--plan",
         path, "--json"], check=True, capture_output=True, text=True).stdout)
    t, m = cost["makespan_s"], cost["peak_memory_bytes"]
    assert any(a <= t and b <= m for a, b in members), (entry["genome"], t, m)
PY
check "the resumed search went on from the checkpoint" $?

# run --optimize: optimizes for this machine and runs the chosen plan, verified.
"$tapestry" run tests/data/cli/mlp_small.tap --optimize --target cpu-local --time-budget 0.5 \
  --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
  grep -q '^optimized for time on cpu-local' "$tmp/out" && grep -q '^PASS' "$tmp/out"
check "run --optimize --verify" $?

# Bad arguments and inputs: exit 2 with the reason.
expect "unknown objective" 2 "unknown objective 'speed'" -- "$tapestry" optimize $mlp --target h100x8 --objectives time,speed --max-evals 10
expect "repeated objective" 2 "named twice" -- "$tapestry" optimize $mlp --target h100x8 --objectives time,time --max-evals 10
expect "bad memory cap" 2 "max-memory-per-device 40Q" -- "$tapestry" optimize $mlp --target h100x8 --max-memory-per-device 40Q --max-evals 10
expect "bad --best" 2 "best" -- "$tapestry" optimize $mlp --target h100x8 --best speed --max-evals 10
expect "no target" 2 "target" -- "$tapestry" optimize $mlp --max-evals 10
expect "unknown target" 2 "nosuch" -- "$tapestry" optimize $mlp --target nosuch --max-evals 10
expect "missing graph" 2 "missing.tap" -- "$tapestry" optimize "$tmp/missing.tap" --target h100x8 --max-evals 10
expect "zero threads" 2 "threads" -- "$tapestry" optimize $mlp --target h100x8 --threads 0 --max-evals 10
expect "zero evals" 2 "max-evals" -- "$tapestry" optimize $mlp --target h100x8 --max-evals 0
expect "resume a missing checkpoint" 2 "cannot read the checkpoint" -- "$tapestry" optimize $mlp --target h100x8 --max-evals 10 --resume "$tmp/nothing.json"
echo '{"format": "tapestry-optimize-checkpoint", "version": 1}' >"$tmp/bad-ck.json"
expect "resume a broken checkpoint" 2 "not a valid checkpoint" -- "$tapestry" optimize $mlp --target h100x8 --max-evals 10 --resume "$tmp/bad-ck.json"
expect "resume another graph's checkpoint" 2 "another graph" -- "$tapestry" optimize $mlp --target h100x8 --objectives time,memory --max-evals 10 --resume "$tmp/ck.json"
expect "unwritable output" 2 "cannot write" -- "$tapestry" optimize $mlp --target h100x8 --max-evals 10 -o "$tmp/no/such/dir/front.json"
expect "run --optimize with --plan" 2 "give no --plan" -- "$tapestry" run $mlp --optimize --plan examples/plans/mlp-best.json
expect "--time-budget without --optimize" 2 "need --optimize" -- "$tapestry" run $mlp --time-budget 1
expect "--prefix-patience without --tie-layers" 2 "requires --tie-layers" -- "$tapestry" optimize $mlp --target h100x8 --max-evals 10 --prefix-patience 5
"$tapestry" optimize $mlp --target h100x8 --max-memory-per-device 1K --max-evals 50 >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 1 ]] && grep -q "no plan meets the constraints" "$tmp/out"
check "an impossible cap: exit 1, no plan meets the constraints" $?

finish
