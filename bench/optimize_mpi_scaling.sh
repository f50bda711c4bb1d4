#!/usr/bin/env bash
# `tapestry optimize` on 1 and 2 MPI ranks (one island each, 1 pricing thread per rank): plans
# priced per second and the ratio, on the transformer block of docs/optimizer.md ("How good and
# how fast") on h100x8; beyond 2 ranks the 2 cores of this machine are oversubscribed.
#
#   bench/optimize_mpi_scaling.sh BUILD_DIR [EVALS] [REPEATS] [RANKS…]    (defaults 4000 3 1 2)
#
# Each repeat runs every rank count one after another (interleaved, so the ratios of one repeat
# share the machine's load); the rate is what rank 0 prints — every rank's plans over rank 0's
# search time —, the wall time is the whole mpirun's, start-up included, and cpu the CPU seconds
# of all its processes (user + system): plans per CPU second shows what the islands cost beyond
# pricing (meetings, merging, waiting) whatever else the machine runs.
set -euo pipefail
build=${1:?usage: optimize_mpi_scaling.sh BUILD_DIR [EVALS] [REPEATS] [RANKS…]}
evals=${2:-4000}
repeats=${3:-3}
shift $(($# < 3 ? $# : 3))
ranks=("$@")
[[ ${#ranks[@]} -eq 0 ]] && ranks=(1 2)
root=$(cd "$(dirname "$0")/.." && pwd)
tapestry=$build/src/cli/tapestry
command -v mpirun >/dev/null || { echo "optimize_mpi_scaling: mpirun not found: skipped"; exit 0; }
mpirun=(mpirun --oversubscribe -q --bind-to none)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)
echo "load before: $(uptime | sed 's/.*load/load/')"
printf '%-7s %6s %10s %12s %9s %9s %9s %12s\n' repeat ranks plans plans/s "vs 1" wall cpu "plans/cpu-s"
for ((r = 1; r <= repeats; ++r)); do
  one=""
  for n in "${ranks[@]}"; do
    line=$(/usr/bin/time -f "TIME %e %U %S" "${mpirun[@]}" -np "$n" "$tapestry" optimize \
      "$root/examples/transformer_block.tap" --target h100x8 --seed 1 --max-evals "$evals" \
      --threads 1 --mpi --quiet 2>&1 | grep -E '^priced|^TIME')
    read -r wall cpu <<<"$(awk '/^TIME/ {printf "%.1f %.1f", $2, $3 + $4}' <<<"$line")"
    plans=$(sed -nE 's/^priced ([0-9]+) plans.*/\1/p' <<<"$line")
    rate=$(sed -nE 's/.*\(([0-9]+)\/s on this run.*/\1/p' <<<"$line")
    [[ -z $one ]] && one=$rate
    printf '%-7s %6s %10s %12s %9s %9s %9s %12s\n' "$r" "$n" "$plans" "$rate" \
      "$(python3 -c "print(f'{$rate / $one:.2f}x')")" "$wall s" "$cpu s" \
      "$(python3 -c "print(f'{$plans / $cpu:.0f}')")"
  done
done
echo "load after: $(uptime | sed 's/.*load/load/')"
