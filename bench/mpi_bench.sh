#!/usr/bin/env bash
# The MLP of docs/design.md (examples/mlp.tap, 68.7 GFLOP) on 2 MPI ranks × 1 thread vs 1 process
# × 2 threads, under the same plan: the ratio of their wall times (target ≥ 0.8: MPI at least 80% as
# fast as threads) and the fraction of the MPI run's rank-time spent waiting for messages.
#
#   bench/mpi_bench.sh BUILD_DIR [--sweep]     (--sweep, from `make bench`: every MLP plan)
#
# Each configuration runs --warmup 1 --repeat 5 and reports its median run; both run in the
# same minute, so the ratio survives the machine's load better than either time.
set -euo pipefail
build=${1:?usage: mpi_bench.sh BUILD_DIR [--sweep]}
root=$(cd "$(dirname "$0")/.." && pwd)
tapestry=$build/src/cli/tapestry
command -v mpirun >/dev/null || { echo "mpi_bench: mpirun not found: skipped"; exit 0; }
plans=(mlp-megatron mlp-data-parallel)
[[ ${2:-} == --sweep ]] && plans=(mlp-megatron mlp-data-parallel mlp-best)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun=(mpirun --oversubscribe -q --bind-to none)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)

printf '%-18s %12s %12s %7s %14s\n' plan "threads 2" "ranks 2" ratio "waiting (MPI)"
for plan in "${plans[@]}"; do
  args=("$root/examples/mlp.tap" --plan "$root/examples/plans/$plan.json" --warmup 1 --repeat 5)
  "$tapestry" run "${args[@]}" --threads 2 --quiet --metrics "$tmp/threads.json" >/dev/null
  "${mpirun[@]}" -np 2 "$tapestry" run "${args[@]}" --executor mpi --threads 1 \
    --metrics "$tmp/mpi.json" >/dev/null
  python3 - "$plan" "$tmp/threads.json" "$tmp/mpi.json" <<'PY'
import json, sys
plan, threads, mpi = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
t, m = threads["wall_s"], mpi["wall_s"]
waiting = mpi["wait_s"] / (m * mpi["ranks_count"])
print(f"{plan:<18} {t*1e3:9.1f} ms {m*1e3:9.1f} ms {t/m:7.2f} {100*waiting:13.1f}%")
PY
done
