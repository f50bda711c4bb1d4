#!/usr/bin/env bash
# Issue 28: a training step is priced and searched like any graph. The transformer MLP's step
# (forward, mse loss, gradients, SGD updates) at its bf16 sizes
# (tests/data/search/transformer_mlp_train_bf16.tap) is searched on h100x8 with a fixed budget
# (deterministic), and every plan of the front runs and verifies on the small f32 stand-in with
# the same operation names (tests/data/cli/transformer_mlp_train_small.tap; the plans' gpu:N
# placement dropped by --ignore-placement); the standard data-parallel plan of the step splits
# the loss and the weight gradients' batch sums, and explain shows each weight gradient's
# all-reduce (reduce-scatter, sliced update, all-gather of the new weights).
# Usage: train_step_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"
cd "$root" || exit 1
big=tests/data/search/transformer_mlp_train_bf16.tap
small=tests/data/cli/transformer_mlp_train_small.tap

"$tapestry" optimize $big --target h100x8 --max-evals 300 --quiet -o "$tmp/front.json" \
  >"$tmp/out" 2>"$tmp/err"
check "optimize the training step on h100x8" $?
plans=$(/usr/bin/env python3 - "$tmp/front.json" "$tmp" <<'PY'
import json, sys
front = json.load(open(sys.argv[1]))["front"]
for i, entry in enumerate(front):
    json.dump(entry["plan"], open(f"{sys.argv[2]}/plan{i}.json", "w"))
print(len(front))
PY
)
[[ ${plans:-0} -ge 3 ]]
check "the front has several plans ($plans)" $?
for ((i = 0; i < ${plans:-0}; i++)); do
  "$tapestry" run $small --plan "$tmp/plan$i.json" --ignore-placement --verify --threads 2 \
    --quiet >"$tmp/out" 2>"$tmp/err" &&
    [[ $(grep -c '^PASS' "$tmp/out") -eq 5 ]] && ! grep -q '^FAIL\|^UNCHECKED' "$tmp/out"
  check "front plan $i runs on the stand-in and verifies (L, W1n, b1n, W2n, b2n)" $?
done

"$tapestry" plan $big --standard data-parallel --target h100x8 >"$tmp/dp.json" 2>"$tmp/err" &&
  grep -q '"L": {"split":{"n":8}}' "$tmp/dp.json" &&
  grep -q '"dW2": {"split":{"batch":8}}' "$tmp/dp.json" &&
  grep -q '"W2n":{"replicate":"all"}' "$tmp/dp.json"
check "data parallel splits the loss and the weight gradients' batch, replicates the new weights" $?
"$tapestry" explain $big --plan "$tmp/dp.json" --target h100x8 >"$tmp/out" 2>"$tmp/err" &&
  grep -qE '^  all-reduce \(ring: reduce-scatter \+ all-gather\)  dW2/partial of dW2 → output: 256\.0 MiB over 8 devices' "$tmp/out" &&
  grep -qE '^  all-reduce .*dW1/partial of dW1 → output: 256\.0 MiB' "$tmp/out" &&
  grep -qE '^Strategy  data parallel ×8, .*2 all-reduces of 256\.0 MiB' "$tmp/out"
check "explain shows the weight gradients' all-reduces" $?
"$tapestry" run $small --plan "$tmp/dp.json" --ignore-placement --verify --threads 2 --quiet \
  >"$tmp/out" 2>"$tmp/err" && [[ $(grep -c '^PASS' "$tmp/out") -eq 5 ]]
check "the data-parallel plan runs on the stand-in and verifies" $?

# The memory the cost model prices is what the step keeps alive: on one device the forward pass
# peaks at its inputs (320 MiB) + H/linear and H (256 MiB each); the step holds more (T, the
# saved activations until gelu_grad and dW2 read them, dH, the new weights).
"$tapestry" cost tests/data/search/transformer_mlp_bf16.tap --target h100x8 >"$tmp/fwd" 2>"$tmp/err" &&
  "$tapestry" cost $big --target h100x8 >"$tmp/out" 2>"$tmp/err" &&
  grep -q 'peak memory 832.0 MiB' "$tmp/fwd" && grep -q 'peak memory 1.31 GiB' "$tmp/out"
check "one device: the step's peak (1.31 GiB) over the forward pass's (832 MiB)" $?

finish
