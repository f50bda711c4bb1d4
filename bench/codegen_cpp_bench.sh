#!/usr/bin/env bash
# The generated C++ program (`tapestry codegen --to cpp`, docs/codegen.md) against `tapestry run`
# under the same plan with the same threads: one rank against the block executor on one thread,
# two ranks against the MPI executor on two ranks of one thread each. Prints, per plan, each
# side's median run and the ratio run / program (> 1: the program is faster), with the load.
#
#   bench/codegen_cpp_bench.sh BUILD_DIR [ROUNDS]      (default 3 rounds)
#
# First every program is generated and built (the kernel library installed into a scratch
# prefix, each program built there, Release); then ROUNDS rounds, each timing every plan's two
# sides one right after the other — `tapestry run --warmup 1 --repeat 5` (its median) and
# `program --repeat 6` (the median of the 5 runs after the first, which reads the inputs) — so
# both sides of a ratio share the minute's load. The table gives the medians over the rounds.
set -euo pipefail
build=$(realpath "${1:?usage: codegen_cpp_bench.sh BUILD_DIR [ROUNDS]}")
rounds=${2:-3}
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
  "transformer_block-heads 2 examples/transformer_block.tap examples/plans/transformer_block-heads.json"
  "convnet-batch 1 examples/convnet.tap examples/plans/convnet-batch.json"
)
for c in "${cases[@]}"; do
  read -r name ranks graph plan <<<"$c"
  dir=$tmp/$name-$ranks
  "$tapestry" build "$root/$graph" -o "$dir.json" >/dev/null
  /usr/bin/python3 "$root/tests/cli/codegen_inputs.py" "$dir.json" "$dir/in" 7
  "$tapestry" codegen "$root/$graph" --plan "$root/$plan" --ranks "$ranks" --to cpp -o "$dir/gen" >/dev/null
  cmake -S "$dir/gen" -B "$dir/gen/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
  cmake --build "$dir/gen/build" >/dev/null
done

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; ++r)); do
  for c in "${cases[@]}"; do
    read -r name ranks graph plan <<<"$c"
    dir=$tmp/$name-$ranks
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
    /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["wall_s"], sys.argv[2].split(":")[1].split()[0])' \
      "$dir/run.json" "$generated" >>"$dir/times.txt"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-26s %5s %14s %14s %7s   %s\n' plan ranks "tapestry run" "generated" ratio "(each round's ratio)"
for c in "${cases[@]}"; do
  read -r name ranks graph plan <<<"$c"
  /usr/bin/python3 - "$name" "$ranks" "$tmp/$name-$ranks/times.txt" <<'PY'
import statistics, sys
name, ranks, path = sys.argv[1], sys.argv[2], sys.argv[3]
pairs = [tuple(map(float, line.split())) for line in open(path)]
t = statistics.median(p[0] for p in pairs)
g = statistics.median(p[1] for p in pairs)
ratios = " ".join(f"{a / b:.2f}" for a, b in pairs)
print(f"{name:<26} {ranks:>5} {t*1e3:11.1f} ms {g*1e3:11.1f} ms {t/g:7.2f}   ({ratios})")
PY
done
