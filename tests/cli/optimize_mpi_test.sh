#!/usr/bin/env bash
# `tapestry optimize --mpi` (and `tapestry launch -n N -- optimize …`): one island of the search
# per rank, merged on rank 0 (search/islands.h), under mpirun on this host (loopback).
#
#   optimize_mpi_test.sh TAPESTRY SOURCE_DIR
#
# With a seed, a rank count and --max-evals the merged front is the same run to run; one rank
# finds what `optimize` without MPI finds; a rank that aborts (TAPESTRY_TEST_OPTIMIZE_DIE) ends
# the job within seconds with the merged front and checkpoint of the last meeting whole on disk,
# and --resume continues that checkpoint with another rank count (2 -> 1, 1 -> 2), keeping or
# beating every plan of its front. Exit 77 (skipped) without mpirun or MPI.
set -uo pipefail
tapestry=$1
src=$2
source "$(dirname "$0")/cli_testing.sh"
py=/usr/bin/python3
ulimit -c 0  # the aborting rank leaves no core

command -v mpirun >/dev/null || { echo "mpirun not found: skipped"; exit 77; }
if "$tapestry" launch -n 1 --dry-run -- run x 2>&1 | grep -q "built without MPI"; then
  echo "tapestry built without MPI: skipped"; exit 77
fi
mpirun=(mpirun --oversubscribe -q)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)

mlp=$src/examples/mlp.tap
search=(--target h100x8 --objectives time,memory --seed 1 --quiet)

# same_front A B: the two -o files hold the same front (plans, costs, found_at) and count.
same_front() {
  $py - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda f: (f["evaluations"], [(m["plan"], m["cost"], m["found_at"]) for m in f["front"]])
sys.exit(0 if key(a) == key(b) else 1)
PY
}

# covers NEW OLD: every plan of OLD's front (-o JSON or checkpoint's front, by score) is matched or
# beaten by one of NEW's front; NEW made more evaluations than OLD.
covers() {
  $py - "$1" "$2" <<'PY'
import json, sys
new, old = (json.load(open(p)) for p in sys.argv[1:3])
assert new["evaluations"] > old["evaluations"], (new["evaluations"], old["evaluations"])
pts = [(m["score"]["time"], m["score"]["memory"]) for m in new["front"]]
for m in old["front"]:
    t, mem = m["score"]["time"], m["score"]["memory"]
    assert any(a <= t and b <= mem for a, b in pts), ("lost", t, mem)
PY
}

# 1. Deterministic: two runs of 2 ranks, and one of 1 rank equal to optimize without MPI.
for run in a b; do
  timeout "$(scaled 120)" "${mpirun[@]}" -np 2 "$tapestry" optimize "$mlp" "${search[@]}" --max-evals 1200 \
    --mpi -o "$tmp/two-$run.json" >"$tmp/out" 2>"$tmp/err"
  check "2 ranks, run $run" $?
done
grep -qE "^priced 1200 plans in .*, 2 ranks, [0-9.]+ s waiting at meetings;" "$tmp/out" &&
  grep -q '"ranks": 2' "$tmp/two-b.json"
check "rank 0 prints the merged count once, with the rank count" $?
[[ $(grep -c '^front:' "$tmp/out") -eq 1 ]]
check "only rank 0 prints the front" $?
same_front "$tmp/two-a.json" "$tmp/two-b.json"
check "2 ranks: the same front run to run" $?
timeout "$(scaled 120)" "${mpirun[@]}" -np 1 "$tapestry" optimize "$mlp" "${search[@]}" --max-evals 1200 --mpi \
  -o "$tmp/one-mpi.json" >"$tmp/out" 2>"$tmp/err" &&
  "$tapestry" optimize "$mlp" "${search[@]}" --max-evals 1200 --threads 1 -o "$tmp/one.json" \
    >"$tmp/out" 2>"$tmp/err" &&
  same_front "$tmp/one.json" "$tmp/one-mpi.json"
check "1 rank finds what optimize without MPI finds" $?
# Another rank count or seed is another search (the fronts differ in what was found when).
timeout "$(scaled 120)" "${mpirun[@]}" -np 3 "$tapestry" optimize "$mlp" "${search[@]}" --max-evals 1200 --mpi \
  -o "$tmp/three.json" >"$tmp/out" 2>"$tmp/err"
check "3 ranks (oversubscribed)" $?
! same_front "$tmp/two-a.json" "$tmp/three.json"
check "3 ranks search otherwise than 2" $?

# 2. tapestry launch adds --mpi.
"$tapestry" launch -n 2 --dry-run -- optimize "$mlp" --target h100x8 >"$tmp/out" 2>"$tmp/err" &&
  grep -q -- "-np 2 .* optimize .*mlp.tap --target h100x8 --mpi$" "$tmp/out"
check "launch -- optimize adds --mpi" $?
timeout "$(scaled 120)" "$tapestry" launch -n 2 -- optimize "$mlp" "${search[@]}" --max-evals 1200 \
  -o "$tmp/launched.json" >"$tmp/out" 2>"$tmp/err" &&
  same_front "$tmp/two-a.json" "$tmp/launched.json"
check "launch -n 2 -- optimize: the same front as mpirun … --mpi" $?

# 3. A rank dies: rank 1, then rank 0, aborts at its 6th meeting. The job ends within seconds of
# the abort, non-zero; the front and the checkpoint of the last save (at every meeting:
# --checkpoint-every 0) are whole, the checkpoint's front is the front written, with both ranks'
# plans.
for dying in 1 0; do
  rm -f "$tmp/died.json" "$tmp/died-ck.json"
  TAPESTRY_TEST_OPTIMIZE_DIE=$dying:6 timeout "$(scaled 120)" "${mpirun[@]}" -np 2 "$tapestry" optimize "$mlp" \
    "${search[@]}" --max-evals 1000000 --mpi --checkpoint "$tmp/died-ck.json" --checkpoint-every 0 \
    -o "$tmp/died.json" >"$tmp/out" 2>"$tmp/err" &
  job=$!
  # From the abort (its line on stderr, polled every 0.1 s) to the end of the job.
  until grep -q "rank $dying aborts" "$tmp/err" 2>/dev/null || ! kill -0 $job 2>/dev/null; do
    sleep 0.1
  done
  aborted=$(date +%s.%N)
  wait $job
  rc=$?
  elapsed=$($py -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$aborted" "$(date +%s.%N)")
  [[ $rc -ne 0 && $rc -ne 124 ]] && grep -q "rank $dying aborts" "$tmp/err"
  check "rank $dying aborts: the job fails (rc=$rc)" $?
  $py -c "import sys; sys.exit(0 if float(sys.argv[1]) < 10 else 1)" "$elapsed"
  check "rank $dying aborts: the job ends within 10 s of it (${elapsed} s)" $?
  $py - "$tmp/died.json" "$tmp/died-ck.json" <<'PY'
import json, sys
front, ck = (json.load(open(p)) for p in sys.argv[1:3])
assert front["front"] and front["stopped_by"] == "running", front["stopped_by"]
assert ck["ranks"] == 2 and 0 < ck["evaluations"] < 1000000
# saved at the 5th meeting with the reports of the 4th (generation 16): more plans than one
# rank prices in 15 generations of 64 (a generation may find fewer new plans in this small space)
assert ck["evaluations"] > 15 * 64 + 10, ck["evaluations"]
# the fingerprints of both ranks' plans (a plan priced on both counts once)
assert len(ck["seen"]) > 0.6 * ck["evaluations"], (len(ck["seen"]), ck["evaluations"])
assert [m["found_at"] for m in front["front"]] == [m["found_at"] for m in ck["front"]]
PY
  check "rank $dying aborts: the merged front and checkpoint are whole" $?
done

# 4. Resume with another rank count: the dead 2-rank search on 1 process, then a 1-process
# checkpoint on 2 ranks; each keeps or beats every plan of the front it resumed.
ck_evals=$($py -c "import json,sys; print(json.load(open(sys.argv[1]))['evaluations'])" "$tmp/died-ck.json")
timeout "$(scaled 120)" "$tapestry" optimize "$mlp" "${search[@]}" --max-evals $((ck_evals + 600)) \
  --resume "$tmp/died-ck.json" -o "$tmp/resumed-1.json" >"$tmp/out" 2>"$tmp/err" &&
  covers "$tmp/resumed-1.json" "$tmp/died.json"
check "2 ranks -> 1: resumed, every plan of the merged front kept or beaten" $?
"$tapestry" optimize "$mlp" "${search[@]}" --max-evals 700 --checkpoint "$tmp/one-ck.json" \
  -o "$tmp/one-part.json" >"$tmp/out" 2>"$tmp/err"
for run in a b; do
  timeout "$(scaled 120)" "${mpirun[@]}" -np 2 "$tapestry" optimize "$mlp" "${search[@]}" --max-evals 1500 \
    --mpi --resume "$tmp/one-ck.json" -o "$tmp/resumed-2$run.json" >"$tmp/out" 2>"$tmp/err"
  check "1 -> 2 ranks: resumed (run $run)" $?
done
grep -q "^priced 1500 plans" "$tmp/out" && covers "$tmp/resumed-2a.json" "$tmp/one-part.json" &&
  same_front "$tmp/resumed-2a.json" "$tmp/resumed-2b.json"
check "1 -> 2 ranks: the budget met, the front kept or beaten, the same run to run" $?

# 5. Bad input: one error line (from rank 0), exit 2.
expect "a missing graph under --mpi" 2 "error: .*nothing.tap" -- "${mpirun[@]}" -np 2 "$tapestry" \
  optimize "$tmp/nothing.tap" --target h100x8 --max-evals 10 --mpi
[[ $(grep -c "error" "$tmp/err") -eq 1 ]]
check "the error is printed once" $?
expect "another search's checkpoint under --mpi" 2 "--seed 1" -- "${mpirun[@]}" -np 2 "$tapestry" \
  optimize "$mlp" --target h100x8 --objectives time,memory --seed 2 --max-evals 10 --mpi \
  --resume "$tmp/one-ck.json"
[[ $(grep -c "error" "$tmp/err") -eq 1 ]]
check "the checkpoint's error is printed once" $?

finish
