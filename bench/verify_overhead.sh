#!/usr/bin/env bash
# verify_overhead: what `tapestry run --verify` costs next to the run it verifies (issue 25 item 4:
# goal ≤ 10× the run's time, ≤ 2× its peak memory). For each example (examples/*.tap, under each
# of its plans in examples/plans/, else unsharded) and for ResNet-18 (224 px) and ViT-B/16
# (64 px, patch 16) exported by bench/verify_models.py (/usr/bin/python3 with torch 1.13 and onnx;
# skipped with the reason when missing) and imported with `tapestry import`, in the same session:
#
#   run      the plan's own execution, median of --repeat 3 after 1 warm-up (metrics wall_s)
#   verify   what --verify adds: wall time of `run --verify` minus that of `run`, same graph,
#            inputs and plan (one process each; medians of --rounds), i.e. the naive run, the
#            float64 oracle and the comparison
#   ratio    verify / run
#   run_cpu  CPU seconds (user + sys) of the whole `tapestry run` process (input generation,
#            start-up and the run); ver_cpu: what --verify adds to them — steadier than the wall
#            times on a shared machine, for comparing two builds
#   run MiB  peak RSS of `tapestry run` (GNU time %M), verify MiB: of `run --verify`, and ratio
#   (indented) where the last --verify spent its wall time: the naive run, the oracle (judging
#            included) and its three slowest operations (run --metrics: "verify")
#
# Inputs: generated (--seed 0) for the examples; the exported weights and a seeded x for the two
# models. The verdict column is --verify's (exit 0 PASS, else FAIL/UNCHECKED: the time is spent
# either way).
#
#   bench/verify_overhead.sh [--build DIR] [--threads 2] [--rounds 3] [--only NAME]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/release"
[[ -d "$build" ]] || build="$root/build/ci"
threads=2 rounds=3 only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--threads N] [--rounds N] [--only NAME]" >&2; exit 2 ;;
  esac
done
py=/usr/bin/python3
tapestry="$build/src/cli/tapestry"
[[ -x $tapestry ]] || { echo "verify_overhead: $tapestry is missing; build first" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "verify_overhead: needs GNU time (/usr/bin/time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# cases: NAME GRAPH PLAN INPUTS ("" = none)
cases=()
for g in "$root"/examples/*.tap; do
  ex=$(basename "$g" .tap)
  plans=("$root"/examples/plans/"$ex"-*.json)
  if [[ -e ${plans[0]} ]]; then
    for p in "${plans[@]}"; do cases+=("$ex:$(basename "$p" .json | sed "s/^$ex-//")|$g|$p|"); done
  else
    cases+=("$ex|$g||")
  fi
done
if out=$("$py" "$root/bench/verify_models.py" "$tmp/models" 2>&1); then
  for m in resnet18:224 vit_b_16:64; do
    n=${m%:*} px=${m#*:}
    "$tapestry" import "$tmp/models/$n.onnx" -o "$tmp/models/$n.tap" --weights "$tmp/models/$n" >/dev/null
    "$py" -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(0).standard_normal((1, 3, $px, $px)).astype(np.float32))" "$tmp/models/$n/x.npy"
    cases+=("$n|$tmp/models/$n.tap||$tmp/models/$n")
  done
else
  echo "verify_overhead: ResNet-18 and ViT-B/16 skipped: $(echo "$out" | tail -1)"
fi

# One process: wall seconds, peak RSS KiB and CPU seconds (user + sys) on stdout
# ("WALL KIB CPU RC").
measure() {
  local rc=0
  /usr/bin/time -f "%e %M %U %S" -o "$tmp/time" "$tapestry" "$@" >"$tmp/log" 2>&1 || rc=$?
  echo "$(tail -1 "$tmp/time" | awk '{ print $1, $2, $3 + $4 }') $rc"
}

echo "tapestry run vs run --verify, $threads threads, $rounds rounds (load $(cut -d' ' -f1 /proc/loadavg), $(nproc) cores)"
printf '%-34s %9s %9s %7s %8s %8s %8s %8s %6s  %s\n' model run_s verify_s ratio run_cpu ver_cpu \
  run_MiB ver_MiB ratio verdict
for c in "${cases[@]}"; do
  IFS='|' read -r name graph plan inputs <<<"$c"
  [[ -z $only || $name == *"$only"* ]] || continue
  args=(run "$graph" --threads "$threads" --quiet)
  [[ -n $plan ]] && args+=(--plan "$plan")
  [[ -n $inputs ]] && args+=(--inputs "$inputs")
  exec_s=() plain_s=() plain_k=() plain_c=() ver_s=() ver_k=() ver_c=() verdict=""
  for r in $(seq 1 "$rounds"); do
    read -r w k cpu rc < <(measure "${args[@]}" --warmup 1 --repeat 3 --metrics "$tmp/m.json")
    [[ $rc -eq 0 ]] || { echo "$name: run failed"; cat "$tmp/log"; exit 1; }
    exec_s+=("$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_s'])" "$tmp/m.json")")
    read -r w k cpu rc < <(measure "${args[@]}")
    plain_s+=("$w") plain_k+=("$k") plain_c+=("$cpu")
    read -r w k cpu rc < <(measure "${args[@]}" --verify --metrics "$tmp/vm.json")
    ver_s+=("$w") ver_k+=("$k") ver_c+=("$cpu")
    verdict=$(grep -Eo '^(PASS|FAIL|UNCHECKED)' "$tmp/log" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
  done
  "$py" - "$name" "$verdict" "${exec_s[*]}" "${plain_s[*]}" "${ver_s[*]}" "${plain_k[*]}" \
    "${ver_k[*]}" "${plain_c[*]}" "${ver_c[*]}" <<'PY'
import statistics as st, sys
name, verdict = sys.argv[1], sys.argv[2]
run, plain, ver, pk, vk, pc, vc = ([float(x) for x in a.split()] for a in sys.argv[3:10])
r, added = st.median(run), max(st.median(ver) - st.median(plain), 0.0)
pm, vm = st.median(pk) / 1024, st.median(vk) / 1024
rc, vcpu = st.median(pc), max(st.median(vc) - st.median(pc), 0.0)
print(f"{name:<34} {r:9.4f} {added:9.3f} {added / r:6.1f}x {rc:8.2f} {vcpu:8.2f} {pm:8.0f} "
      f"{vm:8.0f} {vm / pm:5.2f}x  {verdict}")
PY
  # Where the last round's --verify spent its time (run --metrics: "verify").
  "$py" - "$tmp/vm.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1])).get("verify")
if v:
    top = ", ".join(f"{o['operation']} ({o['kernel']}) {o['seconds']:.3f}" for o in v["operations"][:3])
    print(f"    naive {v['naive_s']:.3f} s, oracle {v['oracle_s']:.3f} s (judging {v['judge_s']:.3f}); slowest: {top}")
PY
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
