#!/usr/bin/env bash
# End-to-end tests of the training loop (`tapestry train`, docs/training.md "The training loop")
# on tests/data/train/linreg.tap, a linear regression with SGD updates, reference kernels:
#
#   * N steps of `train` equal the same steps done by hand with `run --inputs/--outputs`, the
#     state copied from Wn/bn to W/b between runs — bitwise (state files and every loss);
#   * a run resumed from a checkpoint gives the same losses and state as one uninterrupted run;
#   * --seed shuffling is deterministic and differs from --in-order;
#   * a crash in the middle of a checkpoint (TAPESTRY_TRAIN_CRASH_IN_CHECKPOINT) leaves the state
#     directory of the previous checkpoint, whole, and the run resumes from it;
#   * bad input: a missing data array, different leading dims, a state file of the wrong shape,
#     a missing state file, --update of a computed tensor, a graph with no update (exit 2);
#   * with mpirun: `launch -n 2 train --executor mpi` equals the single-process run bitwise.
#
#   train_test.sh TAPESTRY SOURCE_DIR
set -uo pipefail
tapestry=$1
src=$2
source "$(dirname "$0")/cli_testing.sh"
py=/usr/bin/python3
graph=$src/tests/data/train/linreg.tap

# Data: 20 rows (2 batches of 8 an epoch, 4 rows dropped); initial state W, b.
$py - "$tmp" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
import os
os.makedirs(f"{d}/data"); os.makedirs(f"{d}/init")
X = rng.standard_normal((20, 4)).astype(np.float32)
T = (X @ np.array([[1.5], [-2.0], [0.5], [3.0]], np.float32) + 0.25).astype(np.float32)
np.save(f"{d}/data/X.npy", X); np.save(f"{d}/data/T.npy", T)
np.save(f"{d}/init/W.npy", rng.standard_normal((1, 4)).astype(np.float32))
np.save(f"{d}/init/b.npy", np.zeros((1,), np.float32))
EOF

# losses FILE: the losses of a --metrics file, one per line (repr of the float).
losses() { $py -c 'import json,sys; [print(repr(json.loads(l)["loss"])) for l in open(sys.argv[1])]' "$1"; }

# 1. train 5 steps in order == 5 `run`s by hand (batches rows 0-7, 8-15, 0-7, 8-15, 0-7).
cp -r "$tmp/init" "$tmp/s1"
"$tapestry" train "$graph" --steps 5 --data "$tmp/data" --state "$tmp/s1" --in-order \
  --kernels reference --metrics "$tmp/m1.jsonl" >"$tmp/out" 2>"$tmp/err"
check "train runs (rc=$?)" $?
cp -r "$tmp/init" "$tmp/hand"
rm -f "$tmp/hand_losses"
for s in 1 2 3 4 5; do
  first=$(( ((s - 1) % 2) * 8 ))
  $py - "$tmp" "$first" <<'EOF'
import sys, numpy as np
d, first = sys.argv[1], int(sys.argv[2])
for name in ("X", "T"):
    np.save(f"{d}/hand/{name}.npy", np.load(f"{d}/data/{name}.npy")[first:first + 8])
EOF
  "$tapestry" run "$graph" --inputs "$tmp/hand" --outputs "$tmp/hand_out" --kernels reference \
    --quiet >"$tmp/out" 2>"$tmp/err" || check "run by hand, step $s" 1
  cp "$tmp/hand_out/Wn.npy" "$tmp/hand/W.npy"
  cp "$tmp/hand_out/bn.npy" "$tmp/hand/b.npy"
  $py -c 'import numpy as np,sys; print(repr(float(np.load(sys.argv[1]))))' \
    "$tmp/hand_out/L.npy" >>"$tmp/hand_losses"
done
cmp -s "$tmp/s1/W.npy" "$tmp/hand/W.npy" && cmp -s "$tmp/s1/b.npy" "$tmp/hand/b.npy"
check "train's state equals the hand-run steps bitwise" $?
losses "$tmp/m1.jsonl" >"$tmp/train_losses"
cmp -s "$tmp/train_losses" "$tmp/hand_losses"
check "train's losses equal the hand-run steps' bitwise" $?
grep -q '"step": 5' "$tmp/s1/train.json"
check "train.json records 5 steps" $?
$py -c 'import numpy as np,sys; sys.exit(0 if (np.load(sys.argv[1]) != np.load(sys.argv[2])).any() else 1)' \
  "$tmp/s1/W.npy" "$tmp/init/W.npy"
check "the state changed" $?

# 2. resume: 3 steps, then 3 more from the state dir == 6 uninterrupted (shuffled, seed 4).
cp -r "$tmp/init" "$tmp/full"
"$tapestry" train "$graph" --steps 6 --data "$tmp/data" --state "$tmp/full" --seed 4 \
  --kernels reference --metrics "$tmp/full.jsonl" --quiet >/dev/null 2>"$tmp/err"
check "uninterrupted run (rc=$?)" $?
cp -r "$tmp/init" "$tmp/part"
"$tapestry" train "$graph" --steps 3 --data "$tmp/data" --state "$tmp/part" --seed 4 \
  --kernels reference --metrics "$tmp/p1.jsonl" --quiet >/dev/null 2>"$tmp/err" &&
  "$tapestry" train "$graph" --steps 3 --data "$tmp/data" --state "$tmp/part" --seed 4 \
    --kernels reference --metrics "$tmp/p2.jsonl" --quiet >/dev/null 2>"$tmp/err"
check "interrupted run (rc=$?)" $?
cat "$tmp/p1.jsonl" "$tmp/p2.jsonl" >"$tmp/parts.jsonl"
cmp -s <(losses "$tmp/full.jsonl") <(losses "$tmp/parts.jsonl") &&
  cmp -s "$tmp/full/W.npy" "$tmp/part/W.npy" && cmp -s "$tmp/full/b.npy" "$tmp/part/b.npy"
check "resumed run equals the uninterrupted one bitwise" $?
$py -c 'import json,sys; s=[json.loads(l)["step"] for l in open(sys.argv[1])]; sys.exit(s != [4,5,6])' \
  "$tmp/p2.jsonl"
check "the resumed run continues at step 4" $?

# 3. shuffling: the same seed twice is the same run; --in-order differs; another seed differs.
cp -r "$tmp/init" "$tmp/again"
"$tapestry" train "$graph" --steps 6 --data "$tmp/data" --state "$tmp/again" --state-out \
  "$tmp/again_out" --seed 4 --kernels reference --quiet >/dev/null 2>"$tmp/err"
cmp -s "$tmp/again_out/W.npy" "$tmp/full/W.npy"
check "the same seed gives the same state" $?
cmp -s "$tmp/again/W.npy" "$tmp/init/W.npy"
check "--state-out leaves --state alone" $?
"$tapestry" train "$graph" --steps 6 --data "$tmp/data" --state "$tmp/init" --state-out \
  "$tmp/inorder" --in-order --kernels reference --quiet >/dev/null 2>"$tmp/err"
"$tapestry" train "$graph" --steps 6 --data "$tmp/data" --state "$tmp/init" --state-out \
  "$tmp/seed5" --seed 5 --kernels reference --quiet >/dev/null 2>"$tmp/err"
! cmp -s "$tmp/inorder/W.npy" "$tmp/full/W.npy" && ! cmp -s "$tmp/seed5/W.npy" "$tmp/full/W.npy"
check "--in-order and another seed give other states" $?
expect "resuming with another seed is refused" 2 "trained with --seed 4" -- \
  "$tapestry" train "$graph" --steps 1 --data "$tmp/data" --state "$tmp/full" --seed 5

# 4. a crash inside the 2nd checkpoint (step 4) leaves the step-2 state, whole; resuming from
# it gives the uninterrupted run.
cp -r "$tmp/init" "$tmp/crash"
echo keep >"$tmp/crash/notes.txt"
TAPESTRY_TRAIN_CRASH_IN_CHECKPOINT=2 "$tapestry" train "$graph" --steps 6 --data "$tmp/data" \
  --state "$tmp/crash" --seed 4 --checkpoint-every 2 --kernels reference --quiet \
  >/dev/null 2>"$tmp/err"
[[ $? -eq 3 ]]
check "the injected crash happened" $?
"$tapestry" train "$graph" --steps 2 --data "$tmp/data" --state "$tmp/init" --state-out \
  "$tmp/two" --seed 4 --kernels reference --quiet >/dev/null 2>"$tmp/err"
cmp -s "$tmp/crash/W.npy" "$tmp/two/W.npy" && cmp -s "$tmp/crash/b.npy" "$tmp/two/b.npy" &&
  grep -q '"step": 2' "$tmp/crash/train.json" && [[ -f "$tmp/crash/notes.txt" ]]
check "after the crash the state dir is the step-2 checkpoint, whole" $?
"$tapestry" train "$graph" --steps 4 --data "$tmp/data" --state "$tmp/crash" --seed 4 \
  --kernels reference --quiet >/dev/null 2>"$tmp/err"
cmp -s "$tmp/crash/W.npy" "$tmp/full/W.npy" && [[ -f "$tmp/crash/notes.txt" ]]
check "resumed after the crash: the uninterrupted run's state; other files kept" $?

# 5. bad input, exit 2, naming the file or tensor.
mkdir -p "$tmp/nodata" && cp "$tmp/data/X.npy" "$tmp/nodata/"
expect "missing data array" 2 "T.npy: missing: no data for input T" -- \
  "$tapestry" train "$graph" --steps 1 --data "$tmp/nodata" --state "$tmp/init"
mkdir -p "$tmp/short"
$py -c 'import numpy as np,sys; d=sys.argv[1]; np.save(d+"/short/X.npy", np.load(d+"/data/X.npy")); np.save(d+"/short/T.npy", np.load(d+"/data/T.npy")[:12])' "$tmp"
expect "mismatched leading dims" 2 "different lengths: X has 20 rows, T has 12" -- \
  "$tapestry" train "$graph" --steps 1 --data "$tmp/short" --state "$tmp/init"
cp -r "$tmp/init" "$tmp/badstate"
$py -c 'import numpy as np,sys; np.save(sys.argv[1], np.zeros((4, 1), np.float32))' "$tmp/badstate/W.npy"
expect "state file of the wrong shape" 2 "badstate/W.npy: tensor 'W' is float32" -- \
  "$tapestry" train "$graph" --steps 1 --data "$tmp/data" --state "$tmp/badstate"
mkdir -p "$tmp/nostate" && cp "$tmp/init/W.npy" "$tmp/nostate/"
expect "missing state file" 2 "b.npy: missing: the state input b \(updated by bn\)" -- \
  "$tapestry" train "$graph" --steps 1 --data "$tmp/data" --state "$tmp/nostate"
expect "update of a computed tensor" 2 "update Y <- Wn: Y is computed by operation Y" -- \
  "$tapestry" train "$graph" --steps 1 --data "$tmp/data" --state "$tmp/init" --update Y=Wn
sed '/^update/d' "$graph" >"$tmp/noupdate.tap"
expect "a graph with no update" 2 "the graph updates no state" -- \
  "$tapestry" train "$tmp/noupdate.tap" --steps 1 --data "$tmp/data" --state "$tmp/init"
"$tapestry" train "$tmp/noupdate.tap" --steps 5 --data "$tmp/data" --state "$tmp/init" \
  --state-out "$tmp/cli_update" --in-order --kernels reference --quiet --update W=Wn \
  --update b=bn >/dev/null 2>"$tmp/err"
cmp -s "$tmp/cli_update/W.npy" "$tmp/s1/W.npy"
check "--update W=Wn on a graph without updates equals the graph's own update" $?

# 6. MPI: 2 ranks, the batch of the forward and backward split, equal to the threads run.
if command -v mpirun >/dev/null && ! "$tapestry" launch -n 1 --dry-run -- run x 2>&1 |
  grep -q "built without MPI"; then
  split=(--split Y.batch=2 --split dW.batch=2)
  "$tapestry" train "$graph" --steps 5 --data "$tmp/data" --state "$tmp/init" --state-out \
    "$tmp/threads" --seed 1 --kernels reference "${split[@]}" --metrics "$tmp/t.jsonl" \
    --quiet >/dev/null 2>"$tmp/err"
  check "threads run with the split plan (rc=$?)" $?
  timeout 120 "$tapestry" launch -n 2 -- train "$graph" --steps 5 --data "$tmp/data" --state \
    "$tmp/init" --state-out "$tmp/mpi" --seed 1 --kernels reference "${split[@]}" --executor \
    mpi --metrics "$tmp/mpi.jsonl" --quiet >"$tmp/out" 2>"$tmp/err"
  check "launch -n 2 train --executor mpi (rc=$?)" $?
  cmp -s "$tmp/mpi/W.npy" "$tmp/threads/W.npy" && cmp -s "$tmp/mpi/b.npy" "$tmp/threads/b.npy" &&
    cmp -s <(losses "$tmp/mpi.jsonl") <(losses "$tmp/t.jsonl")
  check "the MPI run equals the threads run bitwise (state and losses)" $?
else
  echo "mpirun or MPI missing: the MPI case is skipped"
fi

finish
