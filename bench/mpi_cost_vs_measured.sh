#!/usr/bin/env bash
# The cost model's prediction vs the measured MPI wall time: the MLP (examples/mlp.tap) under a
# data-parallel plan (batch split N ways) and a Megatron plan (H's columns and Y's reduction split
# N ways) on N = 2 and 4 ranks of this machine. One command:
#
#   bench/mpi_cost_vs_measured.sh BUILD_DIR [KEEP_DIR]
#
# 1. Measures MPI's loopback link with a ping-pong (mpicc; 2 ranks): latency = half the median
#    round trip of 8 bytes, bandwidth = 16 MiB / half the median round trip of 16 MiB.
# 2. Writes a target per N (KEEP_DIR/mpi-local-N.json when KEEP_DIR is given): the cpu-local
#    preset's device type (as calibrated) renamed `rank`, N of them on one node, joined by that
#    link (not shared memory: MPI copies every byte). Two variants: "a core each" prices every
#    rank as a core of its own (the device as calibrated); "cores shared" divides the cores among
#    the ranks when N exceeds them (peak FLOP/s and memory bandwidth × cores/N) — what N
#    processes on this machine can get.
# 3. `tapestry cost` on each, and `tapestry launch -n N -- run … --warmup 1 --repeat 3 --metrics`
#    (the median run's wall_s: the slowest rank's, barrier to its last application).
#
# Prints the load average before and after: the machine is shared, and other jobs slow every
# measured time (the model assumes an idle machine).
set -euo pipefail
build=${1:?usage: mpi_cost_vs_measured.sh BUILD_DIR [KEEP_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
tapestry=$(cd "$build" && pwd)/src/cli/tapestry
command -v mpirun >/dev/null || { echo "mpi_cost_vs_measured: mpirun not found: skipped"; exit 0; }
command -v mpicc >/dev/null || { echo "mpi_cost_vs_measured: mpicc not found: skipped"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
keep=${2:-$tmp}
mkdir -p "$keep"
mpirun=(mpirun --oversubscribe -q --bind-to none)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)
cores=$(nproc)

echo "load before: $(uptime | sed 's/.*load average/load average/')"

# 1. The loopback link.
cat >"$tmp/pingpong.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
static double half_round_trip(char* buf, int bytes, int reps, int rank) {
  double* t = malloc(sizeof(double) * reps);
  for (int i = -2; i < reps; ++i) { /* two untimed warm-ups */
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf, bytes, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, bytes, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
    if (i >= 0) t[i] = MPI_Wtime() - start;
  }
  qsort(t, reps, sizeof(double), cmp);
  double median = t[reps / 2] / 2;
  free(t);
  return median;
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int big = 16 << 20;
  char* buf = calloc(big, 1);
  double latency = half_round_trip(buf, 8, 201, rank);
  double big_s = half_round_trip(buf, big, 21, rank);
  if (rank == 0) printf("%.9g %.9g\n", latency, big / big_s);
  free(buf);
  MPI_Finalize();
  return 0;
}
C
mpicc -O2 -o "$tmp/pingpong" "$tmp/pingpong.c"
read -r latency bandwidth < <("${mpirun[@]}" -np 2 "$tmp/pingpong")
python3 -c "import sys; print(f'MPI loopback (ping-pong, 2 ranks): latency {float(sys.argv[1])*1e6:.1f} µs, bandwidth {float(sys.argv[2])/1e9:.2f} GB/s')" "$latency" "$bandwidth"

# 2. Targets and plans.
"$tapestry" targets cpu-local --json >"$tmp/cpu-local.json"
for n in 2 4; do
  for variant in each shared; do
    python3 - "$tmp/cpu-local.json" "$n" "$variant" "$cores" "$latency" "$bandwidth" \
      >"$keep/mpi-local-$n-$variant.json" <<'PY'
import json, sys
base, n, variant, cores = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
latency, bandwidth = float(sys.argv[5]), float(sys.argv[6])
device = dict(next(iter(base["device_types"].values())))
share = min(1.0, cores / n) if variant == "shared" else 1.0
device["peak_flops"] = {k: v * share for k, v in device["peak_flops"].items()}
device["memory_bandwidth_Bps"] *= share
about = (f"{n} MPI ranks on this {cores}-core machine: the cpu-local device as calibrated"
         + (f", its cores shared (x{share:g})" if share < 1 else ", a core each")
         + f"; MPI loopback {bandwidth/1e9:.2f} GB/s, {latency*1e6:.1f} us (ping-pong)")
target = {
    "name": f"mpi-local-{n}", "about": about,
    "device_types": {"rank": device},
    "nodes": {"count": 1, "devices": {"rank": n}},
    "links": {"intra_node": {"bandwidth_Bps": bandwidth, "latency_s": latency,
                             "shared_memory": False}},
    "inputs": "resident", "outputs": "resident",
    "run_overhead_s": base.get("run_overhead_s", 0.0),
}
print(json.dumps(target, indent=1))
PY
  done
  echo "{\"ops\": {\"H/linear\": {\"split\": {\"batch\": $n}}, \"Y\": {\"split\": {\"batch\": $n}}}, \"fuse\": \"auto\"}" \
    >"$keep/data-parallel-$n.json"
  echo "{\"ops\": {\"H/linear\": {\"split\": {\"out\": $n}}, \"H\": {\"split\": {\"d1\": $n}}, \"Y\": {\"split\": {\"in\": $n}}}, \"fuse\": [[\"H/linear\", \"H\"]]}" \
    >"$keep/megatron-$n.json"
done

# 3. Predicted and measured.
printf '%-5s %-14s %12s %14s %12s %8s %14s %12s\n' ranks plan "predicted" "(cores shared)" measured error \
  "compute pred." "busy meas."
for n in 2 4; do
  for plan in data-parallel megatron; do
    graph=("$root/examples/mlp.tap" --plan "$keep/$plan-$n.json")
    "$tapestry" cost "${graph[@]}" --target "$keep/mpi-local-$n-each.json" --json >"$tmp/each.json"
    "$tapestry" cost "${graph[@]}" --target "$keep/mpi-local-$n-shared.json" --json >"$tmp/shared.json"
    "${mpirun[@]}" -np "$n" "$tapestry" run "${graph[@]}" --executor mpi --threads 1 --warmup 1 \
      --repeat 3 --metrics "$keep/measured-$plan-$n.json" >/dev/null
    python3 - "$n" "$plan" "$tmp/each.json" "$tmp/shared.json" "$keep/measured-$plan-$n.json" <<'PY'
import json, sys
n, plan = sys.argv[1], sys.argv[2]
each, shared, m = (json.load(open(p)) for p in sys.argv[3:6])
wall = m["wall_s"]
busy = max(r["busy_s"] for r in m["ranks"])
compute = max(d["compute_s"] for d in shared["per_device"])
ms = lambda s: f"{s*1e3:9.1f} ms"
err = (shared["makespan_s"] - wall) / wall
print(f"{n:<5} {plan:<14} {ms(each['makespan_s']):>12} {ms(shared['makespan_s']):>14} {ms(wall):>12}"
      f" {100*err:+7.0f}% {ms(compute):>14} {ms(busy):>12}")
PY
  done
done
echo "load after: $(uptime | sed 's/.*load average/load average/')"
echo "error: (cores-shared prediction − measured) / measured; compute pred.: the busiest device's"
echo "predicted compute (cores shared); busy meas.: the busiest rank's measured busy time"
