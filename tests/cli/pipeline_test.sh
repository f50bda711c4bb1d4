#!/usr/bin/env bash
# Issue 31 item 3: pipeline parallelism from the command line, on tests/data/training/pipe_mlp.tap
# (a 4-layer MLP step, SGD with momentum) under pipe_mlp_1f1b.json (2 stages, 4 microbatches,
# 1F1B): shard --explain; the pipelined step equals the same microbatch split without stages
# bitwise and --verify PASSes; with recompute and ZeRO-3 too; explain's Pipeline line (1F1B's
# bubble and stage-0 peak below GPipe's); 2 MPI ranks as the stages, --verify;
# the plan's errors (each rank's peak memory against the model: cli.memory).
# Usage: pipeline_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"
cd "$root" || exit 1
graph=tests/data/training/pipe_mlp.tap
plan=tests/data/training/pipe_mlp_1f1b.json
py=/usr/bin/python3
with() {  # OUT PYTHON-EXPRESSION-ON-p: the plan, edited
  "$py" - "$plan" "$1" "$2" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"))
EOF
}
with "$tmp/gpipe.json" 'p["pipeline"]["schedule"] = "gpipe"'
with "$tmp/rc.json" 'p["recompute"] = ["L0/linear", "L2/linear"]'
with "$tmp/z3.json" 'p["zero"] = {"stage": 3, "params": ["W*", "b*"], "shards": 2}'
# The microbatch splits alone (no stages, no schedule): what the pipeline cuts, by hand.
"$py" - "$tmp/split.json" <<'EOF'
import json, sys
ops = {op: {"split": {"batch": 4}} for op in ["L0/linear", "L1/linear", "L2/linear", "Y",
       "dW0", "dW1", "dW2", "dW3", "dW0/linear_nobias", "dW0/linear_nobias.2", "dW0/linear_nobias.3"]}
for op in ["L0", "L1", "L2", "dW0/relu_grad", "dW0/relu_grad.2", "dW0/relu_grad.3",
           "db0", "db1", "db2", "db3"]:
    ops[op] = {"split": {"d0": 4}}
ops["L"] = ops["dW0/mse_grad"] = {"split": {"n": 4}}
json.dump({"ops": ops}, open(sys.argv[1], "w"))
EOF
outputs=17
ranks_target 2 "$tmp/ranks2.json"  # the MPI run's placement
same_outputs() { same_npy "$1" "$2" $outputs; }  # DIR_A DIR_B: every output of A, bitwise in B

"$tapestry" shard $graph --plan $plan --explain -o "$tmp/s.json" >"$tmp/out" 2>"$tmp/err" &&
  grep -q '^applied  pipeline on dW0/ones_like: stage 0 on #0: 16 operations (11 cut into microbatches); stage 1 on #1: 20 operations (12 cut into microbatches); 4 microbatches, 1f1b; the seed reads L/shape instead of L$' "$tmp/err" &&
  grep -q '^applied  split-reduction on dW0: batch of dW0: 4 blocks of 128' "$tmp/err" &&
  grep -q '"after"' "$tmp/s.json"
check "shard --explain: the stages, microbatches and seed; the schedule's edges in the file" $?

"$tapestry" run $graph --plan "$tmp/split.json" --kernels reference --outputs "$tmp/split" --quiet \
  >"$tmp/out" 2>"$tmp/err" &&
  "$tapestry" run $graph --plan $plan --kernels reference --outputs "$tmp/pipe" --quiet \
    >"$tmp/out" 2>"$tmp/err" && same_outputs "$tmp/split" "$tmp/pipe" &&
  "$tapestry" run $graph --plan "$tmp/gpipe.json" --threads 2 --outputs "$tmp/gpipe" --quiet \
    >"$tmp/out" 2>"$tmp/err" && "$tapestry" run $graph --plan "$tmp/split.json" --threads 2 \
    --outputs "$tmp/splitf" --quiet >"$tmp/out" 2>"$tmp/err" && same_outputs "$tmp/splitf" "$tmp/gpipe"
check "1F1B and GPipe steps = the same microbatch split without stages, bitwise" $?
"$tapestry" run $graph --kernels reference --outputs "$tmp/plain" --quiet >"$tmp/out" 2>"$tmp/err" &&
  ! same_outputs "$tmp/plain" "$tmp/pipe"
check "the comparison tells apart the unsplit step (its sums in another order)" $?
for p in "$plan" "$tmp/gpipe.json" "$tmp/rc.json" "$tmp/z3.json"; do
  "$tapestry" run $graph --plan "$p" --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
    [[ $(grep -c '^PASS' "$tmp/out") -eq $outputs ]] && ! grep -q '^FAIL' "$tmp/out"
  check "run --verify: $(basename "$p")" $?
done

echo '{"pipeline": {"stages": [["L0*", "L1*"], ["L2*", "Y"]], "microbatches": 4, "schedule": "1f1b",
       "devices": [["#0", "#1"], ["#2", "#3"]]}}' >"$tmp/grouped.json"
"$tapestry" run $graph --plan "$tmp/grouped.json" --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
  [[ $(grep -c '^PASS' "$tmp/out") -eq $outputs ]] && ! grep -q '^FAIL' "$tmp/out" &&
  "$tapestry" explain $graph --plan "$tmp/grouped.json" --target h100x8 >"$tmp/out" 2>"$tmp/err" &&
  grep -qE '^Pipeline  2 stages × 4 microbatches, 1F1B; .*; stage 0 on gpu:0, gpu:1: L0/linear, L0, L1/linear, L1 \([0-9]+ applications, .*; stage 1 on gpu:2, gpu:3: ' "$tmp/out"
check "stages on device groups (data parallel inside): run --verify, explain names each group" $?

"$tapestry" explain $graph --plan $plan --target h100x8 >"$tmp/out" 2>"$tmp/err" &&
  grep -qE '^Pipeline  2 stages × 4 microbatches, 1F1B; bubble [0-9]+% \(the stages. idle time / 2 × makespan .*\); stage 0 on gpu:0: L0/linear, L0, L1/linear, L1 \(53 applications, busy .*, peak memory .*\); stage 1 on gpu:1: L2/linear, L2, Y \(61 applications, busy .*, peak memory .*\)$' "$tmp/out"
check "explain's Pipeline line: stages, devices, microbatches, schedule, bubble, per-stage peaks" $?
"$tapestry" explain $graph --plan $plan --target h100x8 --format json >"$tmp/one.json" 2>"$tmp/err" &&
  "$tapestry" explain $graph --plan "$tmp/gpipe.json" --target h100x8 --format json >"$tmp/all.json" 2>"$tmp/err" &&
  "$py" - "$tmp/one.json" "$tmp/all.json" <<'EOF'
import json, sys
one, gpipe = (json.load(open(f))["pipeline"] for f in sys.argv[1:3])
assert one["schedule"] == "1f1b" and gpipe["schedule"] == "gpipe"
assert 0 < one["bubble"] < gpipe["bubble"] < 1, (one["bubble"], gpipe["bubble"])
assert one["stages"][0]["peak_memory_bytes"] < gpipe["stages"][0]["peak_memory_bytes"]
EOF
check "explain --format json: 1F1B's bubble and stage-0 peak below GPipe's" $?

expect "stages out of the forward order" 2 "pipeline: the stages are not contiguous in the forward order: L2/linear \(stage 0\) depends on L1 \(stage 1\)" -- \
  "$tapestry" run $graph --plan <(echo '{"pipeline": {"stages": [["L2*", "Y"], ["L0*", "L1*"]], "microbatches": 4, "schedule": "1f1b"}}')
expect "microbatches that do not divide the batch" 2 "pipeline: 3 microbatches do not divide the batch of L0/linear \(batch = 512\)" -- \
  "$tapestry" run $graph --plan <(echo '{"pipeline": {"stages": [["L0*"], ["L1*", "L2*", "Y"]], "microbatches": 3, "schedule": "1f1b"}}')
expect "an unknown schedule" 2 "/pipeline/schedule: unknown schedule 'interleaved' \(expected \"1f1b\" or \"gpipe\"\)" -- \
  "$tapestry" run $graph --plan <(echo '{"pipeline": {"stages": [["L0*"], ["Y"]], "microbatches": 4, "schedule": "interleaved"}}')
expect "a stage naming nothing" 2 "/pipeline/stages/1/0: no operation matches 'Q\*'" -- \
  "$tapestry" run $graph --plan <(echo '{"pipeline": {"stages": [["L0*"], ["Q*"]], "microbatches": 4, "schedule": "1f1b"}}')
expect "a stage with no device on the target" 2 "has no device '#2'" -- \
  "$tapestry" cost $graph --plan <(echo '{"pipeline": {"stages": [["L0*"], ["L1*"], ["L2*", "Y"]], "microbatches": 4, "schedule": "1f1b"}}') --target "$tmp/ranks2.json"

if command -v mpirun >/dev/null && ! "$tapestry" launch -n 1 --dry-run -- run x 2>&1 | grep -q "built without MPI"; then
  timeout 300 "$tapestry" launch -n 2 -- run $graph --plan $plan --kernels reference \
    --outputs "$tmp/mpi" --metrics "$tmp/m.json" --verify >"$tmp/out" 2>"$tmp/err" &&
    same_outputs "$tmp/split" "$tmp/mpi" && [[ $(grep -c '^PASS' "$tmp/out") -eq $outputs ]] &&
    grep -q '^collectives: none (point-to-point messages only)' "$tmp/out"
  check "2 MPI ranks as the stages: bitwise the split step, verified, point-to-point messages" $?
  for p in "$tmp/rc.json" "$tmp/z3.json"; do
    timeout 300 "$tapestry" launch -n 2 -- run $graph --plan "$p" --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
      [[ $(grep -c '^PASS' "$tmp/out") -eq $outputs ]] && ! grep -q '^FAIL' "$tmp/out"
    check "2 MPI ranks, --verify: $(basename "$p")" $?
  done
  # A stage on a group of two ranks (data parallel inside the stage): 4 ranks, --verify.
  echo '{"pipeline": {"stages": [["L0*", "L1*"], ["L2*", "Y"]], "microbatches": 4, "schedule": "1f1b",
         "devices": [["#0", "#1"], ["#2", "#3"]]}}' >"$tmp/groups.json"
  timeout 300 "$tapestry" launch -n 4 -- run $graph --plan "$tmp/groups.json" --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
    [[ $(grep -c '^PASS' "$tmp/out") -eq $outputs ]] && ! grep -q '^FAIL' "$tmp/out"
  check "4 MPI ranks, two stages on two ranks each, --verify" $?
  # Each rank's measured peak against the model's: tests/cli/memory_test.sh (cli.memory).
else
  echo "mpirun missing or no MPI build: the MPI checks skipped"
fi
finish
