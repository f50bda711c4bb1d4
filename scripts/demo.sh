#!/usr/bin/env bash
# `make demo`: the main job on the bundled example.
# Today: project every shard of the running example's Linear layer onto its tensors with
# `tapestry project`, showing which box of X, W, b and Y each shard reads or writes.
set -euo pipefail
tapestry=${1:?usage: demo.sh path/to/tapestry}
root=$(cd "$(dirname "$0")/.." && pwd)

echo "== Linear Y = X·Wᵀ + b, index zr[0:100, 0:32] split 2×2 (batch × out)"
shards=("zr[0:50, 0:16]" "zr[0:50, 16:32]" "zr[50:100, 0:16]" "zr[50:100, 16:32]")
while read -r name ipf; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  line=$(printf "%-2s" "$name")
  for shard in "${shards[@]}"; do
    line+=$(printf "  %-22s" "$("$tapestry" project --ipf "$ipf" --index "$shard")")
  done
  echo "$line"
done < "$root/examples/zspace/linear_shards.txt"
echo
echo "== A mixed-sign map (i - j over zr[0:3, 0:3]) — the Java original gives zr[0:1]"
"$tapestry" project --ipf '{"affineMap":{"projection":[[1,-1]],"offset":[0]},"shape":[1]}' --index 'zr[0:3, 0:3]'
echo "== A strided, overlapping convolution window (stride 2, window 3) over zr[0:4]"
"$tapestry" project --ipf '{"affineMap":{"projection":[[2]],"offset":[0]},"shape":[3]}' --index 'zr[0:4]'
