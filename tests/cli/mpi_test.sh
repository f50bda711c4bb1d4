#!/usr/bin/env bash
# End-to-end tests of the MPI executor (`tapestry run --executor mpi`, `tapestry launch`) under
# mpirun on this host (loopback, --oversubscribe: 2–4 ranks on 2 cores).
#
#   mpi_test.sh TAPESTRY SOURCE_DIR [quick|full] [SWISH_PLUGIN]
#
# Every run's outputs must be bitwise equal to the single-process block executor's on the same
# plan (same fast kernels on the same boxes in the same order); --verify on rank 0 must PASS;
# an injected failure on one rank (TAPESTRY_TEST_MPI_FAIL) must stop the job with exit 2, the
# error and its rank printed once, and no output written. `quick` (the default suite) runs a few
# plans; `full` (label slow) every example under every bundled plan, a placed plan and no plan,
# on 2 and 4 ranks. Exit 77 (skipped) when mpirun is missing or tapestry was built without MPI.
set -uo pipefail
tapestry=$1
src=$2
mode=${3:-quick}
plugin=${4:-}  # examples/plugin's library: a plugin kernel runs on every rank
source "$(dirname "$0")/cli_testing.sh"

command -v mpirun >/dev/null || { echo "mpirun not found: skipped"; exit 77; }
if "$tapestry" launch -n 1 --dry-run -- run x 2>&1 | grep -q "built without MPI"; then
  echo "tapestry built without MPI: skipped"; exit 77
fi
mpirun=(mpirun --oversubscribe -q)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)

# succeeds NAME -- CMD…: CMD exits 0 (its stdout in $tmp/out), under a timeout ($SUCCEEDS_TIMEOUT,
# 120 s; the full-size MLP's --verify — naive run and float64 oracle on rank 0 — needs more).
succeeds() {
  local name=$1
  shift 2
  timeout "${SUCCEEDS_TIMEOUT:-120}" "$@" >"$tmp/out" 2>"$tmp/err"
  check "$name (rc=$?)" $?
}

# same_as_block NAME RANKS GRAPH [run options…]: outputs of an MPI run equal the block executor's.
same_as_block() {
  local name=$1 ranks=$2 graph=$3
  shift 3
  rm -rf "$tmp/ref" "$tmp/mpi"
  "$tapestry" run "$graph" "$@" --threads 1 --quiet --outputs "$tmp/ref" >"$tmp/log" 2>&1 &&
    timeout 120 "${mpirun[@]}" -np "$ranks" "$tapestry" run "$graph" "$@" --executor mpi \
      --outputs "$tmp/mpi" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc -eq 0 ]]; then
    for f in "$tmp/ref"/*.npy; do
      cmp -s "$f" "$tmp/mpi/$(basename "$f")" || { echo "differs: $(basename "$f")" >>"$tmp/err"; rc=1; }
    done
    [[ $(grep -c '^ran ' "$tmp/out") -eq 1 ]] || { echo "summary not printed once" >>"$tmp/err"; rc=1; }
  fi
  check "$name on $ranks ranks equals the block executor bitwise" $rc
}

ex=$src/examples
plans=$src/examples/plans
placed=$tmp/linear_relu-placed.json  # shards placed against the default order
cat >"$placed" <<'JSON'
{"ops": {"Y/linear": {"split": {"batch": 2}, "place": ["rank:1", "rank:0"]},
         "Y": {"split": {"d1": 2}, "place": ["rank:0", "rank:1"]}}}
JSON

if [[ $mode == full ]]; then
  for ranks in 2 4; do
    for example in linear_relu convnet mlp transformer_block; do
      same_as_block "$example (no plan)" $ranks "$ex/$example.tap"
      for plan in "$plans/$example"-*.json; do
        same_as_block "$example $(basename "$plan")" $ranks "$ex/$example.tap" --plan "$plan"
      done
    done
    same_as_block "linear_relu placed" $ranks "$ex/linear_relu.tap" --plan "$placed"
    same_as_block "linear_relu --kernels reference, split-in" $ranks "$ex/linear_relu.tap" \
      --plan "$plans/linear_relu-split-in.json" --kernels reference
  done
  for ranks in 2 4; do  # the Megatron MLP, verified on rank 0 against the naive run
    SUCCEEDS_TIMEOUT=1500 succeeds "mlp-megatron on $ranks ranks --verify" -- "${mpirun[@]}" -np $ranks "$tapestry" \
      run "$ex/mlp.tap" --plan "$plans/mlp-megatron.json" --executor mpi --verify
    grep -q "^PASS   Y" "$tmp/out"
    check "mlp-megatron on $ranks ranks passes --verify" $?
  done
else
  same_as_block "linear_relu grid (8 shards)" 2 "$ex/linear_relu.tap" --plan "$plans/linear_relu-grid.json"
  same_as_block "linear_relu placed" 2 "$ex/linear_relu.tap" --plan "$placed"
  same_as_block "convnet batch" 4 "$ex/convnet.tap" --plan "$plans/convnet-batch.json"
fi

# --verify on rank 0: bitwise with the reference kernels, a split reduction within its bars.
succeeds "verify bitwise" -- "${mpirun[@]}" -np 2 "$tapestry" run "$ex/linear_relu.tap" \
  --plan "$plans/linear_relu-batch2-fused.json" --kernels reference --executor mpi --verify
grep -q "^PASS   Y: bitwise equal" "$tmp/out"
check "verify bitwise PASS" $?
succeeds "verify split reduction, metrics, trace" -- "${mpirun[@]}" -np 2 "$tapestry" run \
  "$ex/linear_relu.tap" --plan "$plans/linear_relu-split-in.json" --executor mpi --verify \
  --metrics "$tmp/m.json" --trace "$tmp/t.json"
grep -q "^PASS   Y" "$tmp/out" && grep -q '"ranks_count": 2' "$tmp/m.json" &&
  grep -q '"name":"rank 1 (rank:1)"' "$tmp/t.json" && grep -q '"cat":"mpi"' "$tmp/t.json"
check "split reduction PASS; merged metrics and a trace process per rank" $?

# Kernels beyond the built-ins run on every rank as in one process (cli/kernel_sources.h): a
# kernel file's body and a plugin's kernel, bitwise equal to the block executor, --verify PASS.
mkdir -p "$tmp/kdir"
cat >"$tmp/kdir/leaky.yaml" <<'YAML'
kernel: leaky
types: {T: float}
inputs: {x: {shape: "[$d...]", dtype: T}}
params: {slope: {type: float, default: 0.01}}
outputs: {result: {shape: "[$d...]", dtype: T}}
index: "[$d...]"
ipfs: {x: "[$d...]", result: "[$d...]"}
body: "max(x, 0) + slope * min(x, 0)"
YAML
printf 'A: f32[64, 48]\nD = leaky(A, slope=0.1)\noutput D\n' >"$tmp/leaky.tap"
same_as_block "body kernel" 2 "$tmp/leaky.tap" --kernel-dir "$tmp/kdir" --split D.d0=2
succeeds "body kernel --verify" -- "${mpirun[@]}" -np 2 "$tapestry" run "$tmp/leaky.tap" \
  --kernel-dir "$tmp/kdir" --split D.d1=2 --kernels reference --executor mpi --verify
grep -q "^PASS   D: bitwise equal" "$tmp/out"
check "body kernel on 2 ranks: verify bitwise PASS" $?
if [[ -n $plugin ]]; then
  same_as_block "plugin kernel" 2 "$ex/plugin/swish.tap" --plugin "$plugin" --split Y.batch=2 \
    --split Y/linear.batch=2
  succeeds "plugin kernel --verify" -- "${mpirun[@]}" -np 2 "$tapestry" run "$ex/plugin/swish.tap" \
    --plugin "$plugin" --split Y.out=2 --executor mpi --verify
  grep -q "^PASS   Y" "$tmp/out"
  check "plugin kernel on 2 ranks: verify PASS" $?
fi

# Failures: exit 2, the error and its rank once, nothing written.
for where in 1 0 "1:setup"; do
  rm -rf "$tmp/fail"
  start=$SECONDS
  TAPESTRY_TEST_MPI_FAIL=$where expect "failure on rank $where" 2 "rank ${where%%:*} \(rank:${where%%:*}\): injected failure" \
    -- "${mpirun[@]}" -np 3 "$tapestry" run "$ex/mlp.tap" --plan "$plans/mlp-megatron.json" \
    --executor mpi --outputs "$tmp/fail" --metrics "$tmp/fail-m.json"
  [[ $(grep -c "error" "$tmp/err") -eq 1 && ! -e "$tmp/fail/Y.npy" && ! -e "$tmp/fail-m.json" &&
     $((SECONDS - start)) -lt 30 ]]
  check "failure on rank $where: printed once, no output, within seconds" $?
done

# Bad arguments.
expect "target with too few ranks" 2 "has 8 devices, so the job needs 8 ranks; it has 2" -- \
  "${mpirun[@]}" -np 2 "$tapestry" run "$ex/linear_relu.tap" --executor mpi --target h100x8
expect "--target without mpi or --optimize" 2 "--target needs --optimize" -- \
  "$tapestry" run "$ex/linear_relu.tap" --target h100x8
echo '{"ops": {"Y/linear": {"place": ["rank:5"]}}}' >"$tmp/bad-place.json"
expect "a device the target lacks" 2 "rank:5" -- "${mpirun[@]}" -np 2 "$tapestry" run \
  "$ex/linear_relu.tap" --executor mpi --plan "$tmp/bad-place.json"

# tapestry launch builds the mpirun line.
"$tapestry" launch -n 4 --dry-run -- run g.tap --plan 'a b.json' >"$tmp/out" 2>"$tmp/err"
line=$(cat "$tmp/out")
[[ $line == mpirun*"-q -np 4 "*"tapestry run g.tap --plan 'a b.json' --executor mpi" &&
   $line == *--oversubscribe* ]] && { [[ $(id -u) -ne 0 ]] || [[ $line == *--allow-run-as-root* ]]; }
check "launch --dry-run: $line" $?
"$tapestry" launch -n 2 --dry-run --host a:1 --host b:1 --mca btl_tcp_if_include=veth0 -- run g.tap --executor block >"$tmp/out"
grep -q -- "--host a:1 --host b:1 --mca btl_tcp_if_include veth0 -np 2 .*run g.tap --executor block$" "$tmp/out"
check "launch passes hosts and MCA parameters, keeps an explicit --executor" $?
expect "launch -n x" 2 "expected a number of processes" -- "$tapestry" launch -n x -- run g.tap
succeeds "launch runs" -- "$tapestry" launch -n 2 -- run "$ex/linear_relu.tap" --split Y/linear.batch=2 --verify
grep -q "^PASS" "$tmp/out"
check "launch runs the job" $?

finish
