#!/usr/bin/env bash
# End-to-end tests of `tapestry codegen --to torch` (docs/codegen.md): generated per-rank PyTorch
# run on 2 gloo processes (`python3 -m torch.distributed.run`, torchrun) and its outputs checked
# by `tapestry verify` against the naive evaluation; a fault put into a generated rank is caught;
# bad input (an unknown --to, a plan that does not fit, a kernel with no torch mapping) exits 2
# naming it and writes nothing.
#
#   codegen_test.sh TAPESTRY SOURCE_DIR [quick|full|kernels]
#
# `quick` (default suite, ~40 s at load 2, most of it torch's start-up): linear_relu under its
# grid plan (point-to-point) and with `in` split two ways (a reduce), mlp_grad under its
# data-parallel plan (reduce-scatters, composed of reduces on gloo), and convnet under the plan
# `tapestry optimize` finds on cpu-local (2 devices: shards pinned with `place`, generated for
# `--target cpu-local`). `full` (label slow): every example under every bundled plan and under
# the plan optimize finds for it on cpu-local. `kernels` (default suite, cli.codegen_kernels): the
# kernels beyond the examples' (tests/data/codegen: masks, pointwise and training gradients,
# layout, gather and argmax, grouped/dilated/3-d convolutions, rectangular and 3-d pools, the
# convolution and pooling gradients, adam) under splits of batch, channel, window and reduction
# dims, and a fault in a generated pooling gradient caught by verify.
# Skipped (exit 77) without /usr/bin/python3 with torch and numpy.
set -u
tapestry=$1
root=$2
mode=${3:-quick}
source "$(dirname "$0")/cli_testing.sh"
python=/usr/bin/python3
if ! "$python" -c "import torch, torch.distributed, numpy" 2>/dev/null; then
  echo "SKIP: /usr/bin/python3 with torch and numpy is needed"
  exit 77
fi
ex=$root/examples
plans=$root/examples/plans

# torchrun on 2 processes, its rendezvous on a free port (--standalone's is always 29400, and
# tests run in parallel). --redirects 1 --tee 1: Debian's torch 1.13 on Python 3.11 cannot parse
# the default "0" (IntFlag iteration changed), so stdout is redirected and teed; stderr stays.
torchrun2() {
  local port
  port=$("$python" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  timeout 600 "$python" -m torch.distributed.run --nnodes 1 --master_addr 127.0.0.1 \
    --master_port "$port" --nproc_per_node 2 --redirects 1 --tee 1 "$@"
}

# generate_and_verify NAME GRAPH PLAN-ARGS…: codegen on 2 ranks (--ranks 2 unless the arguments
# name a --target), run, verify.
generate_and_verify() {
  local name=$1 graph=$2 dir=$tmp/$1 ranks=(--ranks 2)
  shift 2
  [[ " $* " == *" --target "* ]] && ranks=()
  "$tapestry" build "$graph" -o "$tmp/$name.json" >/dev/null 2>"$tmp/err" &&
    "$python" "$root/tests/cli/codegen_inputs.py" "$tmp/$name.json" "$dir/in" 7 &&
    "$tapestry" codegen "$graph" "$@" "${ranks[@]}" --to torch -o "$dir/gen" >"$tmp/log" 2>"$tmp/err" &&
    torchrun2 "$dir/gen/main.py" --inputs "$dir/in" --outputs "$dir/out" >"$tmp/log" 2>"$tmp/err" &&
    "$tapestry" verify "$graph" --inputs "$dir/in" --outputs "$dir/out" >"$tmp/log" 2>"$tmp/err"
  check "$name: generated torch on 2 gloo processes verifies" $?
}

# optimized NAME GRAPH: the plan `tapestry optimize` finds for GRAPH on cpu-local (time, 300
# plans, seed 1), generated for cpu-local's 2 devices, run and verified.
optimized() {
  local name=$1 graph=$2
  "$tapestry" optimize "$graph" --target cpu-local --objectives time --max-evals 300 --seed 1 \
    --plan-out "$tmp/$name-plan.json" --quiet >"$tmp/log" 2>"$tmp/err"
  check "$name: optimize on cpu-local writes a plan" $?
  generate_and_verify "$name" "$graph" --plan "$tmp/$name-plan.json" --target cpu-local
}

if [[ $mode == kernels ]]; then
  data=$root/tests/data/codegen
  for graph in pointwise layout conv training; do
    plan=$(ls "$data/$graph"-*.json)
    generate_and_verify "$graph" "$data/$graph.tap" --plan "$plan"
  done
  # A fault in a generated kernel call is caught: max_pool2d_grad computed as avg_pool2d_grad.
  if [[ -d $tmp/conv/gen ]]; then
    sed -i "s/ctx.pool_grad('max'/ctx.pool_grad('avg'/" "$tmp/conv/gen/rank0.py" "$tmp/conv/gen/rank1.py"
    torchrun2 "$tmp/conv/gen/main.py" --inputs "$tmp/conv/in" --outputs "$tmp/conv/bad" >"$tmp/log" 2>"$tmp/err"
    "$tapestry" verify "$data/conv.tap" --inputs "$tmp/conv/in" --outputs "$tmp/conv/bad" >"$tmp/log" 2>&1
    [[ $? -eq 1 ]] && grep -q "^FAIL   Pg" "$tmp/log" && ! grep -q "^FAIL   Ag" "$tmp/log"
    check "max_pool2d_grad generated as avg_pool2d_grad fails verify (Pg only)" $?
  fi
  finish
  exit $?
fi

if [[ $mode == full ]]; then
  for example in linear_relu convnet mlp mlp_grad resnet_bottleneck transformer_block transformer_large; do
    for plan in "$plans/$example"-*.json; do
      generate_and_verify "$example-$(basename "$plan" .json)" "$ex/$example.tap" --plan "$plan"
    done
    optimized "$example-optimized" "$ex/$example.tap"
  done
  for plan in "$plans"/digits-*.json; do
    generate_and_verify "$(basename "$plan" .json)" "$ex/digits/train_sgd.tap" --plan "$plan"
  done
  optimized digits-optimized "$ex/digits/train_sgd.tap"
else
  optimized convnet-optimized "$ex/convnet.tap"
  generate_and_verify grid "$ex/linear_relu.tap" --plan "$plans/linear_relu-grid.json"
  generate_and_verify reduce "$ex/linear_relu.tap" --split Y/linear.in=2
  generate_and_verify mlp_grad "$ex/mlp_grad.tap" --plan "$plans/mlp_grad-data-parallel.json"
fi

# The generated code is what the plan says: rank 1 of the grid plan computes half of Y's columns
# and sends them to rank 0; linear_relu's `in` split in two is a reduce of two partial sums;
# mlp_grad's gradients are reduce-scattered.
if [[ -d $tmp/grid/gen ]]; then
  grep -q "ctx.send(Y\[.*dst=0" "$tmp/grid/gen/rank1.py" && grep -q "= message1.wait()" "$tmp/grid/gen/rank0.py"
  check "grid: rank 1 sends its boxes of Y to rank 0, which unpacks them" $?
  grep -q "^# Strategy: 2-D: data 4 × tensor 2" "$tmp/grid/gen/rank0.py"
  check "the rank files name the plan's strategy (explain's summary)" $?
  # A fault in one rank (its relu dropped) fails verify: the run is really checked.
  sed -i '0,/torch.relu(/s//(/' "$tmp/grid/gen/rank1.py"
  torchrun2 "$tmp/grid/gen/main.py" --inputs "$tmp/grid/in" --outputs "$tmp/grid/bad" >"$tmp/log" 2>"$tmp/err"
  "$tapestry" verify "$ex/linear_relu.tap" --inputs "$tmp/grid/in" --outputs "$tmp/grid/bad" >"$tmp/log" 2>&1
  [[ $? -eq 1 ]] && grep -q "^FAIL" "$tmp/log"
  check "a relu dropped from rank 1's program fails verify" $?
fi
if [[ -d $tmp/reduce/gen ]]; then
  grep -q "ctx.reduce(partial_sum, dst=0, group=0)" "$tmp/reduce/gen/rank1.py" &&
    grep -q "ctx.reduce(partial_sum, dst=0, group=0)" "$tmp/reduce/gen/rank0.py"
  check "in split 2 ways: the two partial sums meet in a reduce onto rank 0" $?
fi
for dir in mlp_grad mlp_grad-mlp_grad-data-parallel; do
  if [[ -d $tmp/$dir/gen ]]; then
    grep -q "^    dW1\[\.\.\.\] = ctx.reduce_scatter(\[dW1_partial\[0, 0:64\], dW1_partial\[0, 64:128\]\], \[0, 1\]" "$tmp/$dir/gen/rank1.py"
    check "mlp_grad: each rank gets its half of dW1 by a reduce-scatter" $?
  fi
done

# Kernel files' kernels travel as the torch ops of their bodies: leaky (elementwise, slope 0.1
# where its default is 0.01) split by rows, and rowdot (a * b summed over k) split along k —
# partial sums on each rank, then their reduce — run on 2 gloo processes, verified.
kdir=$root/tests/data/codegen/kernels
printf 'X: f32[64, 48]\nB: f32[64, 48]\nH = tanh(X)\nY = leaky(H, slope=0.1)\nD = rowdot(Y, B)\noutput Y\noutput D\n' >"$tmp/leaky.tap"
"$tapestry" build "$tmp/leaky.tap" --kernel-dir "$kdir" -o "$tmp/leaky.json" >/dev/null 2>"$tmp/err" &&
  "$python" "$root/tests/cli/codegen_inputs.py" "$tmp/leaky.json" "$tmp/leaky/in" 7 &&
  "$tapestry" codegen "$tmp/leaky.tap" --kernel-dir "$kdir" --split Y.d0=2 --split D.k=2 --ranks 2 --to torch -o "$tmp/leaky/gen" >"$tmp/log" 2>"$tmp/err" &&
  grep -q "torch.minimum(.*torch.tensor(0.1, dtype=torch.float32)\|torch.tensor(0.1, dtype=torch.float32) \* torch.minimum" "$tmp/leaky/gen/rank1.py" &&
  grep -q "D_partial\[0\] = torch.sum((Y.* \* B.*), dim=(1,))" "$tmp/leaky/gen/rank1.py" &&
  torchrun2 "$tmp/leaky/gen/main.py" --inputs "$tmp/leaky/in" --outputs "$tmp/leaky/out" >"$tmp/log" 2>"$tmp/err" &&
  "$tapestry" verify "$tmp/leaky.tap" --kernel-dir "$kdir" --inputs "$tmp/leaky/in" --outputs "$tmp/leaky/out" >"$tmp/log" 2>"$tmp/err"
check "kernel files' body kernels (leaky; rowdot split along its sum) as torch ops on 2 gloo processes verify" $?
# The generated ops are what the bodies say: rank 1's leaky with the default slope (0.01), and
# rowdot's partial sums folded by max on both ranks, fail verify on Y and on D.
if [[ -f $tmp/leaky/gen/rank1.py ]]; then
  sed -i 's/torch.tensor(0.1, dtype=torch.float32)/torch.tensor(0.01, dtype=torch.float32)/' "$tmp/leaky/gen/rank1.py"
  sed -i 's/torch.sum(/torch.amax(/' "$tmp/leaky/gen/rank0.py" "$tmp/leaky/gen/rank1.py"
  torchrun2 "$tmp/leaky/gen/main.py" --inputs "$tmp/leaky/in" --outputs "$tmp/leaky/bad" >"$tmp/log" 2>"$tmp/err"
  "$tapestry" verify "$tmp/leaky.tap" --kernel-dir "$kdir" --inputs "$tmp/leaky/in" --outputs "$tmp/leaky/bad" >"$tmp/log" 2>&1
  [[ $? -eq 1 ]] && grep -q "^FAIL   Y" "$tmp/log" && grep -q "^FAIL   D" "$tmp/log"
  check "leaky with its default slope and rowdot folded by max fail verify (Y, D)" $?
fi

# convnet's optimized plan pins shards to cpu-local's devices: generated for cpu-local they run;
# for 2 ranks named rank:0 and rank:1 the pinned devices do not exist, which is an error.
if [[ -f $tmp/convnet-optimized-plan.json ]] && grep -q '"cpu:0"' "$tmp/convnet-optimized-plan.json"; then
  expect "a plan pinned to cpu-local's devices, generated for --ranks 2" 2 "has no device 'cpu:0'" -- "$tapestry" codegen "$ex/convnet.tap" --plan "$tmp/convnet-optimized-plan.json" --ranks 2 --to torch -o "$tmp/empty"
fi

# Bad input: exit 2, a clear error, nothing written.
mkdir -p "$tmp/empty"
lr=$ex/linear_relu.tap
expect "an unknown --to" 2 "--to rust: expected torch or cpp" -- "$tapestry" codegen "$lr" --ranks 2 --to rust -o "$tmp/empty"
expect "neither --target nor --ranks" 2 "give --target T .* or --ranks N" -- "$tapestry" codegen "$lr" --to torch -o "$tmp/empty"
expect "a plan that does not fit the graph" 2 "mlp-megatron.json" -- "$tapestry" codegen "$lr" --plan "$plans/mlp-megatron.json" --ranks 2 --to torch -o "$tmp/empty"
# Every built-in kernel has a mapping; a kernel file's kernel is written from its body where
# every input holds one cell per index point, and named as unmapped where one broadcasts.
mkdir -p "$tmp/bcast"
cat >"$tmp/bcast/rowscale.yaml" <<'EOF'
kernel: rowscale
types: {T: float}
inputs: {x: {shape: "[$r, $c]", dtype: T}, s: {shape: "[$r]", dtype: T}}
outputs: {result: {shape: "[$r, $c]", dtype: T}}
index: "[$r, $c]"
ipfs: {x: "[$r, $c]", s: "[$r]", result: "[$r, $c]"}
body: "x * s"
EOF
printf 'X: f32[8, 4]\nS: f32[8]\nR = rowscale(X, S)\noutput R\n' >"$tmp/nomap.tap"
expect "a body kernel whose input broadcasts has no torch mapping, named with its operation" 2 "operation 'R'.*'rowscale'.*input 's' holds a box of shape \[4\] over an index of shape \[4, 4\]" -- "$tapestry" codegen "$tmp/nomap.tap" --kernel-dir "$tmp/bcast" --split R.r=2 --ranks 2 --to torch -o "$tmp/empty"
[[ -z $(ls -A "$tmp/empty") ]]
check "nothing was written on any error" $?
"$tapestry" codegen "$lr" --plan "$plans/linear_relu-grid.json" --target h100x8 --to torch -o "$tmp/h100" >"$tmp/log" 2>"$tmp/err" &&
  [[ -f $tmp/h100/rank7.py && ! -e $tmp/h100/rank8.py ]] && grep -q "RANKS = \[rank0.run, .*rank7.run\]" "$tmp/h100/main.py"
check "h100x8: eight rank modules and their table" $?

finish
