#!/usr/bin/env bash
# The two-"host" MPI run (scripts/netns-two-hosts.sh: two network namespaces, TCP between them):
# its outputs must equal the single-process block executor's bitwise. Needs root and `ip netns`;
# exit 77 (skipped) without them.
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
finish
