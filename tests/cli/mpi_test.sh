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

# A split sum over 4 ranks, point to point under --collectives exact: each rank folds its slice
# of every block into the result in block order, its own block read in place (rank_program.h,
# combines) — ZeRO-3's gradients over 4 shards, bitwise the block executor's sums with either
# kernel set (the fast `reduce` folds across blocks in the same order).
/usr/bin/python3 - "$src/tests/data/training/zero_mlp_dp.json" "$tmp/zero4.json" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
for entry in plan["ops"].values():
    entry["split"] = {dim: 4 for dim in entry["split"]}
plan["zero"] = {"stage": 3, "params": ["W*", "b*"], "shards": 4}
json.dump(plan, open(sys.argv[2], "w"))
EOF
for kernels in fast reference; do
  same_as_block "ZeRO-3 over 4 shards, $kernels kernels" 4 "$src/tests/data/training/zero_mlp.tap" \
    --plan "$tmp/zero4.json" --kernels $kernels
  grep -q "^collectives: 6 allgather" "$tmp/out" && ! grep -q "reduce_scatter" "$tmp/out"
  check "ZeRO-3 over 4 shards: its split sums point to point (no reduce-scatter)" $?
done

# Collectives (rank_collectives.h): where the messages are exactly one, the run uses it and says
# so; bitwise equal to the block executor where the order is the same (two partials, gathers).
ar=$tmp/allreduce.tap  # Y = X·W split along k: its reduce's result read whole by each Z shard
cat >"$ar" <<'TAP'
X: f32[64, 48]
W: f32[48, 32]
V: f32[16, 32]
c: f32[16]
Y = matmul(X, W)
Z = linear(Y, V, c)
output Z
TAP
# The combine Y/reduce named unsplit ({}): one reduce on rank 0, whatever its default would be.
echo '{"ops": {"Y": {"split": {"k": 2}}, "Y/reduce": {}, "Z": {"split": {"out": 2}}}}' >"$tmp/ar2.json"
echo '{"ops": {"Y": {"split": {"k": 4}}, "Y/reduce": {}, "Z": {"split": {"out": 4}}}}' >"$tmp/ar4.json"
echo '{"ops": {"Y": {"split": {"k": 2}}, "Y/reduce": {}}}' >"$tmp/r2.json"
# Its default (docs/rewrites.md): Z's shards read Y whole, so Y/reduce is cut 2 ways, shard j on
# block j's rank — each half summed where both ranks read it, two exact allreduces.
echo '{"ops": {"Y": {"split": {"k": 2}}, "Z": {"split": {"out": 2}}}}' >"$tmp/ar2-default.json"
same_as_block "allreduce of two partials" 2 "$ar" --plan "$tmp/ar2.json" --metrics "$tmp/ar-m.json"
grep -q "^collectives: 1 allreduce (Y/reduce)$" "$tmp/out" &&
  grep -q '"kind": "allreduce"' "$tmp/ar-m.json" && grep -q '"bitwise": true' "$tmp/ar-m.json"
check "allreduce named in the summary and the metrics" $?
# Kernel paths over every rank: the summary line and the merged --metrics (Y: 2 partial linears
# and their reduce, Z: 2 linears, all float32).
grep -qE "^kernel paths: (onednn|openblas) [0-9]+.* applications; 0 fallbacks$" "$tmp/out" &&
  python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))
assert m['fallbacks'] == 0 and 'reference' not in m['paths'] and m['paths'].get('mpi') == 1, m['paths']
assert sum(m['paths'].values()) == sum(r['applications'] for r in m['ranks']), m['paths']
" "$tmp/ar-m.json"
check "MPI runs report the kernel paths of every rank" $?
same_as_block "reduce of two partials" 2 "$ar" --plan "$tmp/r2.json"
grep -q "^collectives: 1 reduce (Y/reduce)$" "$tmp/out"
check "reduce named in the summary" $?
same_as_block "four partials, --collectives exact: point-to-point" 4 "$ar" --plan "$tmp/ar4.json"
grep -q "^collectives: none" "$tmp/out"
check "four partials stay point-to-point by default" $?
succeeds "four partials, --collectives all" -- "${mpirun[@]}" -np 4 "$tapestry" run "$ar" \
  --plan "$tmp/ar4.json" --executor mpi --collectives all --verify
grep -q "^collectives: 1 allreduce (Y/reduce, MPI's order)$" "$tmp/out" && grep -q "^PASS   Z" "$tmp/out"
check "an allreduce in MPI's order passes --verify" $?
# Reduce-scatter: the partials written out (P's blocks one per rank), Y's rows split the same
# way, each rank summing its rows of every block. Z by rows reads its own rows of Y; Z by `out`
# reads all of Y (then an allgather of Y too). Y's rows placed against rank order make the send
# buffer a reordering of each block (MPI hands segment i to member i), which a straight copy of
# the block gets wrong.
for k in 2 4; do
  cat >"$tmp/reduce_scatter$k.tap" <<TAP
H: f32[$k, 64, 24]
W: f32[$k, 24, 32]
V: f32[16, 32]
c: f32[16]
P = matmul(H, W)
Y = reduce(P)
Z = linear(Y, V, c)
output Z
TAP
done
rs=$tmp/reduce_scatter2.tap
echo '{"ops": {"P": {"split": {"batch": 2}}, "Y": {"split": {"d0": 2}}, "Z": {"split": {"batch": 2}}}}' >"$tmp/rs2.json"
echo '{"ops": {"P": {"split": {"batch": 2}}, "Y": {"split": {"d0": 2}}, "Z": {"split": {"out": 2}}}}' >"$tmp/rsag2.json"
echo '{"ops": {"P": {"split": {"batch": 2}}, "Y": {"split": {"d0": 2}, "place": ["rank:1", "rank:0"]}, "Z": {"split": {"out": 2}}}}' >"$tmp/rsx2.json"
echo '{"ops": {"P": {"split": {"batch": 4}}, "Y": {"split": {"d0": 4}}, "Z": {"split": {"out": 4}}}}' >"$tmp/rsag4.json"
same_as_block "reduce-scatter of two partials" 2 "$rs" --plan "$tmp/rs2.json" --metrics "$tmp/rs-m.json"
grep -q "^collectives: 1 reduce_scatter (Y)$" "$tmp/out" &&
  grep -q '"kind": "reduce_scatter"' "$tmp/rs-m.json"
check "reduce_scatter named in the summary and the metrics" $?
same_as_block "reduce-scatter and allgather" 2 "$rs" --plan "$tmp/rsag2.json"
grep -q "^collectives: 1 reduce_scatter (Y), 1 allgather (Y)$" "$tmp/out"
check "a reduce-scatter and an allgather make the all-reduce" $?
same_as_block "reduce-scatter, slices against rank order" 2 "$rs" --plan "$tmp/rsx2.json"
grep -q "^collectives: 1 reduce_scatter (Y), 1 allgather (Y)$" "$tmp/out"
check "a reduce-scatter whose slices are not in rank order" $?
succeeds "reduce-scatter of four partials, --collectives all" -- "${mpirun[@]}" -np 4 "$tapestry" run "$tmp/reduce_scatter4.tap" \
  --plan "$tmp/rsag4.json" --executor mpi --collectives all --verify
grep -q "^collectives: 1 reduce_scatter (Y, MPI's order), 1 allgather (Y)$" "$tmp/out" && grep -q "^PASS   Z" "$tmp/out"
check "a reduce-scatter in MPI's order passes --verify" $?
same_as_block "the combine's default (reduce-scatter + gather)" 2 "$ar" --plan "$tmp/ar2-default.json"
grep -q "^collectives: 1 reduce_scatter (Y/reduce), 1 allgather (Y)$" "$tmp/out"
check "the default combine is a reduce-scatter, then an allgather where both ranks read all of Y" $?
echo '{"ops": {"Y/linear": {"split": {"out": 2}}, "Y": {"split": {"d1": 2}}}, "fuse": [["Y/linear", "Y"]]}' >"$tmp/lr-out.json"
echo '{"ops": {"H/linear": {"split": {"out": 2}}, "H": {"split": {"d1": 2}}, "Y": {"split": {"out": 2}}}, "fuse": [["H/linear", "H"]]}' >"$tmp/mlp-ag.json"
if [[ $mode == full ]]; then  # MLP-sized: seconds each
  for ranks in 2 4; do
    same_as_block "mlp: H gathered by every rank" $ranks "$ex/mlp.tap" --plan "$tmp/mlp-ag.json"
    grep -q "^collectives: 1 allgather (H)$" "$tmp/out"
    check "allgather named in the summary on $ranks ranks" $?
    same_as_block "mlp-megatron" $ranks "$ex/mlp.tap" --plan "$plans/mlp-megatron.json"
    # The combine's default: Y is a graph output, so it is reduce-scattered, each half on the
    # rank of its block: one MPI_Reduce_scatter.
    grep -q "^collectives: 1 reduce_scatter (Y/matmul/reduce)$" "$tmp/out"
    check "the Megatron MLP's partials reduce-scattered by MPI_Reduce_scatter on $ranks ranks" $?
    same_as_block "mlp-megatron, --collectives none" $ranks "$ex/mlp.tap" --plan "$plans/mlp-megatron.json" --collectives none
    grep -q "^collectives: none" "$tmp/out"
    check "--collectives none: point-to-point on $ranks ranks" $?
  done
fi

# Per-rank memory: data-parallel over 4 ranks, each rank allocates a quarter of X, H and Y, plus
# the weights it reads whole. The single process holds X, the weights and Y whole but H a quarter
# at a time (a buffer per row piece, freed after its Y rows are computed: block_program.h), so
# single = X + W + H/4 + Y. Every rank: single − ¾ (X + Y) — ranks 1–3 send their quarter of Y
# from Y's own buffer (no staging copy), and rank 0 holds its own quarter during the step,
# assembling Y whole after it (rank_program.h, `gathered`); biases count in both. The
# arithmetic depends only on the MLP's structure, so the default suite checks it on an MLP of
# examples/mlp.tap's shape, 1/8 the size in every dim (0.13 GFLOP); `full` also on
# examples/mlp.tap itself (docs/distributed.md quotes those numbers: 56 MiB of 80 on every rank).
echo '{"ops": {"H/linear": {"split": {"batch": 4}}, "Y": {"split": {"batch": 4}}}, "fuse": "auto"}' >"$tmp/dp4.json"
# per_rank_peaks NAME GRAPH BATCH IN HIDDEN: the peaks of 4 ranks against the single process's.
per_rank_peaks() {
  local name=$1 graph=$2 batch=$3 in=$4 hidden=$5
  "$tapestry" run "$graph" --plan "$tmp/dp4.json" --threads 1 --quiet --metrics "$tmp/dp1.json" >/dev/null 2>&1
  same_as_block "$name data-parallel" 4 "$graph" --plan "$tmp/dp4.json" --metrics "$tmp/dp4-m.json"
  local single x h y peaks peak want rc=0 r
  single=$(grep -o '"peak_memory_bytes": [0-9]*' "$tmp/dp1.json" | head -1 | grep -o '[0-9]*$')
  x=$((batch * in * 4)) h=$((batch * hidden * 4)) y=$((batch * in * 4))
  peaks=$(tr ',' '\n' <"$tmp/dp4-m.json" | grep -o '"peak_memory_bytes": [0-9]*' | grep -o '[0-9]*$' | tail -4)
  for r in 0 1 2 3; do
    peak=$(echo "$peaks" | sed -n "$((r + 1))p")
    want=$((single - 3 * (x + y) / 4))
    [[ $peak -eq $want ]] || { echo "rank $r peak $peak, expected $want (single $single)"; rc=1; }
  done
  [[ $single -gt $((x + h / 4 + y)) && $single -lt $((x + h + y)) ]] ||
    { echo "single-process peak $single not between X + H/4 + Y and X + H + Y"; rc=1; }
  check "$name, 4 ranks × data parallel: each rank's peak is the single process's minus 3/4 of X and Y" $rc
}
cat >"$tmp/mlp-small.tap" <<'TAP'
X:  f32[512, 128]
W1: f32[512, 128]
b1: f32[512]
W2: f32[128, 512]
b2: f32[128]
H = relu(linear(X, W1, b1))
Y = linear(H, W2, b2)
output Y
TAP
per_rank_peaks "mlp 1/8 size" "$tmp/mlp-small.tap" 512 128 512
if [[ $mode == full ]]; then per_rank_peaks "mlp" "$ex/mlp.tap" 4096 1024 4096; fi

# Inputs read per box from .npy files: the same bits as the single process reading them whole.
mkdir -p "$tmp/lr-inputs"
python3 - "$tmp/lr-inputs" <<'PY'
import random, struct, sys
random.seed(1)
for name, shape in (("X", (100, 12)), ("W", (32, 12)), ("b", (32,))):
    n = 1
    for d in shape: n *= d
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(f"{d}, " for d in shape).rstrip(" ")
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(f"{sys.argv[1]}/{name}.npy", "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{n}f", *(random.uniform(-1, 1) for _ in range(n))))
PY
echo '{"ops": {"Y/linear": {"split": {"batch": 3}}, "Y": {"split": {"d0": 3}}}}' >"$tmp/lr-b3.json"
same_as_block "linear_relu, inputs read per box" 3 "$ex/linear_relu.tap" --plan "$tmp/lr-b3.json" --inputs "$tmp/lr-inputs"

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
kdir=$src/tests/data/codegen/kernels  # leaky.yaml: a kernel file's body
printf 'A: f32[64, 48]\nD = leaky(A, slope=0.1)\noutput D\n' >"$tmp/leaky.tap"
same_as_block "body kernel" 2 "$tmp/leaky.tap" --kernel-dir "$kdir" --split D.d0=2
succeeds "body kernel --verify" -- "${mpirun[@]}" -np 2 "$tapestry" run "$tmp/leaky.tap" \
  --kernel-dir "$kdir" --split D.d1=2 --kernels reference --executor mpi --verify
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

# Failures: exit 2, the error and its rank once, nothing written — and no hang: the job ends in
# 2–14 s here even with two CPU burners beside it, so 60 s leaves room for a loaded CI machine.
for where in 1 0 "1:setup"; do
  rm -rf "$tmp/fail"
  start=$SECONDS
  TAPESTRY_TEST_MPI_FAIL=$where expect "failure on rank $where" 2 "rank ${where%%:*} \(rank:${where%%:*}\): injected failure" \
    -- "${mpirun[@]}" -np 3 "$tapestry" run "$ex/mlp.tap" --plan "$plans/mlp-megatron.json" \
    --executor mpi --outputs "$tmp/fail" --metrics "$tmp/fail-m.json"
  [[ $(grep -c "error" "$tmp/err") -eq 1 && ! -e "$tmp/fail/Y.npy" && ! -e "$tmp/fail-m.json" &&
     $((SECONDS - start)) -lt 60 ]]
  check "failure on rank $where: printed once, no output, within seconds" $?
done

# Bad arguments.
expect "target with too few ranks" 2 "has 8 devices, so the job needs 8 ranks; it has 2" -- \
  "${mpirun[@]}" -np 2 "$tapestry" run "$ex/linear_relu.tap" --executor mpi --target h100x8
expect "--target without mpi or --optimize" 2 "--target needs --optimize" -- \
  "$tapestry" run "$ex/linear_relu.tap" --target h100x8
echo '{"ops": {"Y/linear": {"place": ["rank:5"]}}}' >"$tmp/bad-place.json"
# Every rank fails in setup; rank 0 prints the error before any rank exits (mpirun kills the job
# at the first non-zero exit: printing after MPI_Finalize lost the message under load).
expect "a device the target lacks" 2 "operation 'Y/linear': target '2 MPI ranks' has no device 'rank:5' \(it has rank:0, rank:1\); --ignore-placement" -- \
  "${mpirun[@]}" -np 2 "$tapestry" run "$ex/linear_relu.tap" --executor mpi --plan "$tmp/bad-place.json"
[[ $(grep -c "error" "$tmp/err") -eq 1 ]]
check "a device the target lacks: the error printed once" $?
# The same plan with --ignore-placement: the same shards, placed by the default rule.
"${mpirun[@]}" -np 2 "$tapestry" run "$ex/linear_relu.tap" --executor mpi --plan "$tmp/bad-place.json" \
  --ignore-placement --verify --quiet >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -q "^PASS   Y:" "$tmp/out"
check "--ignore-placement runs a plan written for another target" $?

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

# --device cuda under MPI: the NCCL executor, a GPU per rank (docs/gpu.md). Without a usable GPU
# every rank fails at NCCL's bootstrap, and rank 0 says so once; exit 2.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  expect "--device cuda on 2 ranks without a GPU" 2 \
    "rank 0 \(rank:0\): (NCCL: no CUDA device|--device cuda: this build has no CUDA backend)" -- \
    "${mpirun[@]}" -np 2 "$tapestry" run "$ex/mlp.tap" --executor mpi --device cuda \
    --plan "$ex/plans/mlp-megatron.json" --verify
  [[ $(grep -c "error" "$tmp/err") -eq 1 ]]
  check "--device cuda on 2 ranks: the error printed once" $?
fi
expect "--gpu-profile with --executor mpi" 2 "--gpu-profile is not supported with --executor mpi" -- \
  "$tapestry" run "$ex/mlp.tap" --executor mpi --device cuda --gpu-profile

finish
