#!/usr/bin/env bash
# The two-"host" MPI run (scripts/netns-two-hosts.sh: two network namespaces, TCP between them):
# its outputs must equal the single-process block executor's bitwise, and `optimize`'s islands
# must find the front two ranks on one host find. Needs root and `ip netns`; exit 77 (skipped)
# without them.
set -uo pipefail
tapestry=$1
src=$2
source "$(dirname "$0")/cli_testing.sh"
command -v mpirun >/dev/null || { echo "mpirun not found: skipped"; exit 77; }
if [[ $(id -u) -ne 0 ]] || ! ip netns list >/dev/null 2>&1; then
  echo "needs root and ip netns: skipped"; exit 77
fi

for case in "linear_relu linear_relu-grid" "mlp mlp-megatron"; do
  read -r example plan <<<"$case"
  rm -rf "$tmp/ref" "$tmp/net"
  "$tapestry" run "$src/examples/$example.tap" --plan "$src/examples/plans/$plan.json" --threads 1 \
    --quiet --outputs "$tmp/ref" >"$tmp/log" 2>&1 &&
    timeout 300 "$src/scripts/netns-two-hosts.sh" "$tapestry" run "$src/examples/$example.tap" \
      --plan "$src/examples/plans/$plan.json" --outputs "$tmp/net" >"$tmp/out" 2>"$tmp/err" &&
    for f in "$tmp/ref"/*.npy; do cmp "$f" "$tmp/net/$(basename "$f")" || exit 1; done
  check "$example $plan across two network namespaces equals the block executor" $?
done

# optimize: one island per "host", the same merged front as two ranks on one host.
mpirun=(mpirun --oversubscribe -q)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)
search=("$src/examples/mlp.tap" --target h100x8 --objectives time,memory --max-evals 1200 --seed 1
  --quiet)
timeout 300 "$src/scripts/netns-two-hosts.sh" "$tapestry" optimize "${search[@]}" \
  -o "$tmp/net.json" >"$tmp/out" 2>"$tmp/err" &&
  timeout 120 "${mpirun[@]}" -np 2 "$tapestry" optimize "${search[@]}" --mpi -o "$tmp/local.json" \
    >"$tmp/log" 2>&1 &&
  /usr/bin/python3 - "$tmp/net.json" "$tmp/local.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda f: (f["evaluations"], [(m["plan"], m["cost"], m["found_at"]) for m in f["front"]])
sys.exit(0 if key(a) == key(b) and a["front"] else 1)
PY
check "optimize across two network namespaces finds the front of two ranks on one host" $?
finish
