#!/usr/bin/env bash
# End-to-end tests of `tapestry codegen --to cpp` (docs/codegen.md): the kernel library installed
# as a CMake package into a scratch prefix, generated programs configured and built against it
# (Ninja, ccache), run (mpirun when placed on ranks), and their outputs compared with `tapestry
# run`'s (the block executor's, same plan) bitwise, with cmp; a generated kernel call edited
# changes the bits and fails verify; bad input exits 2 naming it and writes nothing.
#
#   codegen_cpp_test.sh TAPESTRY SOURCE_DIR BUILD_DIR CMAKE CXX [quick|full]
#
# CXX is the compiler the library was built with (the programs are built with it too).
# `quick` (default suite): the Megatron MLP on 2 ranks (a reduce), linear_relu's grid plan on 2
# ranks (point to point, outputs gathered), mlp_grad's data-parallel plan on 2 ranks
# (reduce-scatters), the transformer block's heads plan on 1 rank (no MPI) and two kernel files'
# kernels carried by their bodies (leaky, rowdot with its sum split across ranks), and convnet
# under the plan optimize finds on cpu-local. `full` (label slow): every example under every
# bundled plan on 2 ranks, and under the plan optimize finds for it on cpu-local. Skipped (exit 77) without mpirun,
# ninja or /usr/bin/python3 with numpy, or when tapestry was built without MPI.
set -u
tapestry=$(realpath "$1")
root=$2
build=$3
cmake=$4
cxx=$5
mode=${6:-quick}
source "$(dirname "$0")/cli_testing.sh"
python=/usr/bin/python3
command -v mpirun >/dev/null || { echo "mpirun not found: skipped"; exit 77; }
command -v ninja >/dev/null || { echo "ninja not found: skipped"; exit 77; }
"$python" -c "import numpy" 2>/dev/null || { echo "SKIP: /usr/bin/python3 with numpy is needed"; exit 77; }
if "$tapestry" launch -n 1 --dry-run -- run x 2>&1 | grep -q "built without MPI"; then
  echo "tapestry built without MPI: skipped"; exit 77
fi
mpirun=(mpirun --oversubscribe -q)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)
ex=$root/examples
plans=$root/examples/plans

# The kernel library, installed as a package (cmake/Package.cmake) into a scratch prefix.
prefix=$tmp/prefix
"$cmake" --install "$build" --prefix "$prefix" --component runtime >"$tmp/log" 2>"$tmp/err" &&
  [[ -f $prefix/lib/cmake/Tapestry/TapestryConfig.cmake && -f $prefix/lib/libtapestry_runtime.a &&
     -f $prefix/include/tapestry/runtime/fast_kernels.h ]]
check "the kernel library installs as a CMake package (component runtime)" $?

# build_program DIR: configures and builds DIR/gen into DIR/gen/build. ccache sees paths relative
# to the scratch directory (and the files name `-o gen`, not the scratch path), so program.h and
# main.cpp — the same in every program of several ranks — compile once, and a rerun hits.
build_program() {
  CCACHE_BASEDIR=$tmp timeout 600 "$cmake" -S "$1/gen" -B "$1/gen/build" -G Ninja \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" >"$tmp/log" 2>"$tmp/err" &&
    CCACHE_BASEDIR=$tmp nice timeout 900 "$cmake" --build "$1/gen/build" -j 2 >"$tmp/log" 2>"$tmp/err"
}

# run_program DIR RANKS OUT: the built program on DIR/in.
run_program() {
  if [[ $2 -gt 1 ]]; then
    timeout 300 "${mpirun[@]}" -np "$2" "$1/gen/build/program" --inputs "$1/in" --outputs "$3"
  else
    timeout 300 "$1/gen/build/program" --inputs "$1/in" --outputs "$3"
  fi
}

build_args=()  # what `tapestry build` needs besides the graph (--kernel-dir)

# same_as_run NAME RANKS GRAPH PLAN-ARGS…: generated, built, run; every output bitwise equal to
# `tapestry run`'s with the same plan (one thread, the block executor, the fast kernels).
same_as_run() {
  local name=$1 ranks=$2 graph=$3 dir=$tmp/$1 placed=(--ranks "$2")
  shift 3
  [[ " $* " == *" --target "* ]] && placed=()
  local run_args=() a skip=0  # the plan arguments without --target T (the block executor has none)
  for a in "$@"; do
    if [[ $skip -eq 1 ]]; then skip=0; continue; fi
    if [[ $a == --target ]]; then skip=1; continue; fi
    run_args+=("$a")
  done
  "$tapestry" build "$graph" "${build_args[@]}" -o "$tmp/$name.json" >/dev/null 2>"$tmp/err" &&
    "$python" "$root/tests/cli/codegen_inputs.py" "$tmp/$name.json" "$dir/in" 7 &&
    "$tapestry" run "$graph" "${run_args[@]}" --threads 1 --quiet --inputs "$dir/in" --outputs "$dir/ref" \
      >"$tmp/log" 2>"$tmp/err" &&
    (cd "$dir" && "$tapestry" codegen "$graph" "$@" "${placed[@]}" --to cpp -o gen) >"$tmp/log" 2>"$tmp/err" &&
    build_program "$dir" &&
    run_program "$dir" "$ranks" "$dir/out" >"$tmp/log" 2>"$tmp/err"
  local rc=$?
  if [[ $rc -eq 0 ]]; then
    local n=0
    for f in "$dir/ref"/*.npy; do
      cmp "$f" "$dir/out/$(basename "$f")" >>"$tmp/err" 2>&1 || rc=1
      n=$((n + 1))
    done
    [[ $n -gt 0 && $(ls "$dir/out" | wc -l) -eq $n ]] || { echo "$n outputs, $(ls "$dir/out")" >>"$tmp/err"; rc=1; }
  fi
  check "$name: the generated C++ on $ranks rank(s) equals tapestry run bitwise" $rc
}

# optimized NAME GRAPH: the plan `tapestry optimize` finds for GRAPH on cpu-local (time, 300
# plans, seed 1), generated for cpu-local's 2 devices (its shards may be pinned to them), built,
# run, bitwise equal to `tapestry run` under the same plan.
optimized() {
  local name=$1 graph=$2
  "$tapestry" optimize "$graph" --target cpu-local --objectives time --max-evals 300 --seed 1 \
    --plan-out "$tmp/$name-plan.json" --quiet >"$tmp/log" 2>"$tmp/err"
  check "$name: optimize on cpu-local writes a plan" $?
  same_as_run "$name" 2 "$graph" --plan "$tmp/$name-plan.json" --target cpu-local
}

if [[ $mode == full ]]; then
  for example in linear_relu convnet mlp mlp_grad resnet_bottleneck transformer_block transformer_large; do
    for plan in "$plans/$example"-*.json; do
      same_as_run "$example-$(basename "$plan" .json)" 2 "$ex/$example.tap" --plan "$plan"
    done
    optimized "$example-optimized" "$ex/$example.tap"
  done
  for plan in "$plans"/digits-*.json; do
    same_as_run "$(basename "$plan" .json)" 2 "$ex/digits/train_sgd.tap" --plan "$plan"
  done
  optimized digits-optimized "$ex/digits/train_sgd.tap"
else
  optimized convnet-optimized "$ex/convnet.tap"
  same_as_run megatron 2 "$ex/mlp.tap" --plan "$plans/mlp-megatron.json"
  same_as_run grid 2 "$ex/linear_relu.tap" --plan "$plans/linear_relu-grid.json"
  same_as_run mlp_grad 2 "$ex/mlp_grad.tap" --plan "$plans/mlp_grad-data-parallel.json"
  same_as_run heads 1 "$ex/transformer_block.tap" --plan "$plans/transformer_block-heads.json"
  # Kernel files' kernels travel by their bodies: leaky (elementwise, slope 0.1 where its default
  # is 0.01) and rowdot (a sum over k, split across the ranks: partial sums, then their reduce).
  kdir=$root/tests/data/codegen/kernels
  printf 'A: f32[64, 48]\nB: f32[64, 48]\nH = leaky(A, slope=0.1)\nD = rowdot(H, B)\noutput H\noutput D\n' >"$tmp/bodies.tap"
  build_args=(--kernel-dir "$kdir")
  same_as_run bodies 2 "$tmp/bodies.tap" --kernel-dir "$kdir" --split H.d0=2 --split D.k=2
  build_args=()
fi

# The generated code is what the plan says.
if [[ -f $tmp/megatron/gen/rank0.cpp ]]; then
  grep -qF "ctx.reduce_scatter(0, Y_matmul_partial, box({1, 0, 0}, {2, 4096, 1024}), {box({0, 0}, {2048, 1024}), box({2048, 0}, {4096, 1024})}, 1, Y_matmul);" "$tmp/megatron/gen/rank1.cpp" &&
    grep -q "^  static const Operation H_op($" "$tmp/megatron/gen/rank0.cpp" &&
    grep -q "find_package(Tapestry REQUIRED COMPONENTS runtime)" "$tmp/megatron/gen/CMakeLists.txt" &&
    grep -q "find_package(MPI REQUIRED" "$tmp/megatron/gen/CMakeLists.txt"
  check "megatron: the partial sums are reduce-scattered (each rank its half); the package and MPI are found" $?
fi
if [[ -f $tmp/grid/gen/rank1.cpp ]]; then
  grep -q "ctx.send([0-9]*, Y, box(.*), 0);" "$tmp/grid/gen/rank1.cpp" &&
    grep -q "ctx.wait([0-9]*, Y);" "$tmp/grid/gen/rank0.cpp" &&
    grep -q "^// Strategy: 2-D: data 4 × tensor 2" "$tmp/grid/gen/rank0.cpp"
  check "grid: rank 1 sends its boxes of Y to rank 0, which unpacks them; the strategy is named" $?
  # Adversarial: rank 1's relu made a sigmoid — a generated call really computes the outputs.
  grep -q '^      "relu", "Y",$' "$tmp/grid/gen/rank1.cpp" &&
    sed -i 's/^      "relu", "Y",$/      "sigmoid", "Y",/' "$tmp/grid/gen/rank1.cpp" &&
    build_program "$tmp/grid" && run_program "$tmp/grid" 2 "$tmp/grid/bad" >"$tmp/log" 2>"$tmp/err"
  check "the edited program builds and runs" $?
  [[ -f $tmp/grid/bad/Y.npy ]] && ! cmp -s "$tmp/grid/ref/Y.npy" "$tmp/grid/bad/Y.npy"
  check "rank 1's relu made a sigmoid changes the bits" $?
  "$tapestry" verify "$ex/linear_relu.tap" --inputs "$tmp/grid/in" --outputs "$tmp/grid/bad" >"$tmp/log" 2>&1
  [[ $? -eq 1 ]] && grep -q "^FAIL" "$tmp/log"
  check "and fails verify" $?
fi
if [[ -f $tmp/mlp_grad/gen/rank0.cpp ]]; then
  grep -q "ctx.reduce_scatter(" "$tmp/mlp_grad/gen/rank0.cpp"
  check "mlp_grad: the gradients are reduce-scattered" $?
fi
if [[ -f $tmp/bodies/gen/ranks.cpp ]]; then
  grep -qF '{"leaky", "max(x, 0) + slope * min(x, 0)", {"x"}, {{"slope", "0.01"}}}' "$tmp/bodies/gen/ranks.cpp" &&
    grep -qF '{"rowdot", "a * b", {"a", "b"}, {}}' "$tmp/bodies/gen/ranks.cpp" &&
    grep -qF '"leaky", "H",' "$tmp/bodies/gen/rank1.cpp" && grep -qF '{"slope":0.1}' "$tmp/bodies/gen/rank1.cpp"
  check "bodies: ranks.cpp carries both kernels' bodies; rank 1's leaky has the call's slope" $?
  # Adversarial: the body the program carries is the one it runs.
  sed -i 's/"max(x, 0) + slope \* min(x, 0)"/"max(x, 0) + slope * min(x, 0) * 2"/' "$tmp/bodies/gen/ranks.cpp" &&
    build_program "$tmp/bodies" && run_program "$tmp/bodies" 2 "$tmp/bodies/bad" >"$tmp/log" 2>"$tmp/err"
  check "the program with an edited body builds and runs" $?
  [[ -f $tmp/bodies/bad/H.npy ]] && ! cmp -s "$tmp/bodies/ref/H.npy" "$tmp/bodies/bad/H.npy"
  check "an edited body changes the bits" $?
fi
if [[ -f $tmp/heads/gen/rank0.cpp ]]; then
  ! grep -qE "mpi\.h|MPI_Init|MPI::|find_package\(MPI" "$tmp/heads/gen/CMakeLists.txt" "$tmp/heads/gen/main.cpp" "$tmp/heads/gen/program.h"
  check "one rank: no MPI" $?
fi

# Bad input: exit 2, a clear error, nothing written.
if [[ $mode != full ]]; then
  mkdir -p "$tmp/empty"
  lr=$ex/linear_relu.tap
  expect "an unknown --to" 2 "--to rust: expected torch or cpp" -- "$tapestry" codegen "$lr" --ranks 2 --to rust -o "$tmp/empty"
  expect "a plan that does not fit the graph" 2 "mlp-megatron.json" -- "$tapestry" codegen "$lr" --plan "$plans/mlp-megatron.json" --ranks 2 --to cpp -o "$tmp/empty"
  # A kernel file's kernel without a body (a plugin's signature) cannot travel.
  mkdir -p "$tmp/nobody"
  sed -e 's/^kernel: leaky/kernel: leaky2/' -e '/^body:/d' "$root/tests/data/codegen/kernels/leaky.yaml" >"$tmp/nobody/leaky2.yaml"
  printf 'A: f32[64, 48]\nD = leaky2(A, slope=0.1)\noutput D\n' >"$tmp/leaky2.tap"
  expect "a kernel file's kernel without a body is named with its operation" 2 "operation 'D': kernel 'leaky2' is a kernel file's without a body" -- "$tapestry" codegen "$tmp/leaky2.tap" --kernel-dir "$tmp/nobody" --split D.d0=2 --ranks 2 --to cpp -o "$tmp/empty"
  [[ -z $(ls -A "$tmp/empty") ]]
  check "nothing was written on any error" $?
fi

finish
