#!/usr/bin/env bash
# The generated C++ program (`tapestry codegen --to cpp`, docs/codegen.md) against `tapestry run`
# under the same plan with the same threads: one rank against the block executor on one thread,
# two ranks against the MPI executor on two ranks of one thread each. Prints each one's median
# run and the ratio run / program (> 1: the program is faster), with the machine's load.
#
#   bench/codegen_cpp_bench.sh BUILD_DIR
#
# The kernel library is installed into a scratch prefix and each program built there (Release);
# both sides run --repeat 6 (the program: the median of the 5 runs after the first, which reads
# the inputs; tapestry: --warmup 1 --repeat 5, its median), in the same minute, so the ratio
# survives the machine's load better than either time.
set -euo pipefail
build=$(realpath "${1:?usage: codegen_cpp_bench.sh BUILD_DIR}")
root=$(cd "$(dirname "$0")/.." && pwd)
tapestry=$build/src/cli/tapestry
command -v mpirun >/dev/null || { echo "codegen_cpp_bench: mpirun not found: skipped"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun=(mpirun --oversubscribe -q --bind-to none)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)
cmake --install "$build" --prefix "$tmp/prefix" --component runtime >/dev/null

# case NAME RANKS GRAPH PLAN
cases=(
  "mlp-megatron 1 examples/mlp.tap examples/plans/mlp-megatron.json"
  "mlp-megatron 2 examples/mlp.tap examples/plans/mlp-megatron.json"
  "mlp-data-parallel 2 examples/mlp.tap examples/plans/mlp-data-parallel.json"
  "transformer_block-heads 1 examples/transformer_block.tap examples/plans/transformer_block-heads.json"
  "convnet-batch 1 examples/convnet.tap examples/plans/convnet-batch.json"
)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-26s %5s %14s %14s %7s\n' plan ranks "tapestry run" "generated" ratio
for c in "${cases[@]}"; do
  read -r name ranks graph plan <<<"$c"
  dir=$tmp/$name-$ranks
  "$tapestry" build "$root/$graph" -o "$dir.json" >/dev/null
  /usr/bin/python3 "$root/tests/cli/codegen_inputs.py" "$dir.json" "$dir/in" 7
  "$tapestry" codegen "$root/$graph" --plan "$root/$plan" --ranks "$ranks" --to cpp -o "$dir/gen" >/dev/null
  cmake -S "$dir/gen" -B "$dir/gen/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
  cmake --build "$dir/gen/build" >/dev/null
  args=("$root/$graph" --plan "$root/$plan" --inputs "$dir/in" --warmup 1 --repeat 5 --quiet
        --threads 1 --metrics "$dir/run.json")
  if [[ $ranks -gt 1 ]]; then
    "${mpirun[@]}" -np "$ranks" "$tapestry" run "${args[@]}" --executor mpi >/dev/null
    generated=$("${mpirun[@]}" -np "$ranks" "$dir/gen/build/program" --inputs "$dir/in" \
      --outputs "$dir/out" --repeat 6)
  else
    "$tapestry" run "${args[@]}" >/dev/null
    generated=$("$dir/gen/build/program" --inputs "$dir/in" --outputs "$dir/out" --repeat 6)
  fi
  /usr/bin/python3 - "$name" "$ranks" "$dir/run.json" "$generated" <<'PY'
import json, sys
name, ranks, run, generated = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3])), sys.argv[4]
t = run["wall_s"]
g = float(generated.split(":")[1].split()[0])
print(f"{name:<26} {ranks:>5} {t*1e3:11.1f} ms {g*1e3:11.1f} ms {t/g:7.2f}")
PY
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
