#!/usr/bin/env bash
# End-to-end: the CLI without traps (issue "a newcomer's path"): one-valued --kernels and
# repeatable --kernel-dir never swallow GRAPH; $TAPESTRY_KERNELS adds to the built-ins; an
# unknown command is named; --quiet silences --repeat; validate and render take .tap; --outputs
# names the directories it creates; every --help states exit codes and defaults; refused fusions
# are printed unless --quiet; `tapestry plan` and dim aliases.
# Usage: cli_traps_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"
lr=$root/examples/linear_relu.tap
user=$root/tests/data/metakernel/user_kernels

# 1. --kernels takes one value: the graph after it is the graph.
"$tapestry" run --kernels reference "$lr" --quiet >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -q "reference kernels" "$tmp/out"
check "run --kernels reference GRAPH runs GRAPH" $?
expect "run --kernels DIR is refused, naming --kernel-dir" 2 "expected fast or reference.*--kernel-dir $user" -- \
  "$tapestry" run --kernels "$user" "$lr"
for cmd in build kernels print plan validate shard; do
  expect "$cmd --kernels DIR points at --kernel-dir" 2 "runs no kernels.*--kernel-dir $user" -- \
    "$tapestry" $cmd --kernels "$user" "$lr"
done
printf 'X: f32[4, 3]\nY = scale(X, factor=3.0)\n' >"$tmp/scale.tap"
"$tapestry" build --kernel-dir "$user" --kernel-dir "$user/" "$tmp/scale.tap" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] && grep -q "defined twice\|twice\|already" "$tmp/err"
check "the same directory twice defines its kernels twice: an error" $?
"$tapestry" build --kernel-dir "$user" "$tmp/scale.tap" -o "$tmp/scale.json" 2>"$tmp/err"
check "build --kernel-dir DIR GRAPH builds a user-kernel graph" $?
expect "without --kernel-dir the kernel is unknown" 2 "unknown kernel 'scale'" -- "$tapestry" build "$tmp/scale.tap"

# 2. $TAPESTRY_KERNELS adds to the built-ins (it used to replace them).
TAPESTRY_KERNELS="$tmp/none:$user" "$tapestry" kernels >"$tmp/out" 2>"$tmp/err"
[[ $? -ne 0 ]]
check "a missing directory in \$TAPESTRY_KERNELS is an error" $?
TAPESTRY_KERNELS="$user" "$tapestry" kernels >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -q "^relu " "$tmp/out" && grep -q "^scale " "$tmp/out"
check "\$TAPESTRY_KERNELS: built-ins and user kernels both listed" $?
TAPESTRY_KERNELS="$user" "$tapestry" build "$tmp/scale.tap" -o "$tmp/scale2.json" 2>"$tmp/err"
check "\$TAPESTRY_KERNELS serves build too" $?

# 3. An unknown command is named, not "A subcommand is required".
expect "unknown command" 2 "unknown command 'frobnicate' \(commands: .*plan.*\)" -- "$tapestry" frobnicate "$lr"

# 4. --repeat prints per-run lines, except under --quiet.
"$tapestry" run "$lr" --repeat 3 >"$tmp/out" 2>"$tmp/err"
[[ $(grep -c "^run [0-9]: wall" "$tmp/out") -eq 3 ]]
check "--repeat 3 prints three run lines" $?
"$tapestry" run "$lr" --repeat 3 --quiet >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && ! grep -q "^run [0-9]" "$tmp/out" && grep -q "^wall" "$tmp/out"
check "--repeat 3 --quiet prints the summary only" $?

# 5. validate and render take .tap like every command that takes a graph.
"$tapestry" validate "$lr" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -qx "valid: no issues" "$tmp/out"; check "validate .tap says valid" $?
"$tapestry" render "$lr" -o "$tmp/g.dot" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -q "digraph" "$tmp/g.dot"; check "render .tap writes DOT" $?
printf 'X: f32[4, 3]\nY = rleu(X)\n' >"$tmp/typo.tap"
expect "validate a bad .tap: located error, exit 2" 2 "typo.tap:2:5: error: unknown kernel 'rleu'" -- \
  "$tapestry" validate "$tmp/typo.tap"
expect "render a bad .tap: located error, exit 2" 2 "typo.tap:2:5" -- "$tapestry" render "$tmp/typo.tap" -o "$tmp/t.dot"
[[ ! -e $tmp/t.dot ]]; check "render wrote nothing for a bad .tap" $?

# 6. --outputs names every directory it creates.
"$tapestry" run "$lr" --outputs "$tmp/o/p/q" --quiet >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -qx "created directories $tmp/o, $tmp/o/p, $tmp/o/p/q" "$tmp/out" && [[ -f $tmp/o/p/q/Y.npy ]]
check "--outputs a/b/c names a, a/b, a/b/c" $?
"$tapestry" run "$lr" --outputs "$tmp/o/p/r" --quiet >"$tmp/out" 2>"$tmp/err"
grep -qx "created directory $tmp/o/p/r" "$tmp/out"
check "--outputs with existing parents names one directory" $?

# 7. Every --help states exit codes, and defaults are shown.
for cmd in project validate render kernels build print plan shard run train verify targets calibrate cost explain import; do
  "$tapestry" $cmd --help >"$tmp/out" 2>"$tmp/err"
  [[ $? -eq 0 ]] && grep -q "^Exit codes: 0 " "$tmp/out"
  check "$cmd --help states the exit codes" $?
done
"$tapestry" --help >"$tmp/out"; grep -q "^Exit codes: 0 success, 1 " "$tmp/out"; check "tapestry --help exit codes" $?
"$tapestry" run --help >"$tmp/out"
grep -qE -- "--kernels TEXT=fast" "$tmp/out" && grep -qE -- "--executor TEXT=block" "$tmp/out" &&
  grep -qE -- "--seed UINT=0" "$tmp/out" && ! grep -q "=\[\]" "$tmp/out"
check "run --help shows the defaults (and no empty-list ones)" $?

# 8. A fusion the plan asks for and the rewrites refuse: one line by default, none with --quiet.
printf 'X: f32[8, 12]\nW: f32[32, 12]\nb: f32[32]\nL = linear(X, W, b)\nY = relu(L)\nZ = add(L, Y)\noutput Z\n' >"$tmp/esc.tap"
echo '{"fuse": [["L", "Y"]]}' >"$tmp/fuse.json"
for cmd in shard run; do
  "$tapestry" $cmd "$tmp/esc.tap" --plan "$tmp/fuse.json" -o "$tmp/s.json" >"$tmp/out" 2>"$tmp/err" ||
    "$tapestry" $cmd "$tmp/esc.tap" --plan "$tmp/fuse.json" >"$tmp/out" 2>"$tmp/err"
  [[ $(grep -c "^refused  fuse-elementwise on L: its output L has 2 readers" "$tmp/err") -eq 1 ]]
  check "$cmd prints the refused fusion" $?
done
"$tapestry" shard "$tmp/esc.tap" --plan "$tmp/fuse.json" -o "$tmp/s.json" --quiet 2>"$tmp/err"
[[ $? -eq 0 && ! -s $tmp/err ]]; check "shard --quiet hides it" $?
"$tapestry" run "$tmp/esc.tap" --plan "$tmp/fuse.json" --quiet >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && ! grep -q refused "$tmp/err"; check "run --quiet hides it" $?
"$tapestry" shard "$lr" --plan "$root/examples/plans/linear_relu-batch2-fused.json" -o "$tmp/s.json" 2>"$tmp/err"
[[ $? -eq 0 && ! -s $tmp/err ]]; check "an accepted fusion prints nothing" $?

# 9. tapestry plan: the listing, a skeleton that is a valid plan, aliases in plans.
"$tapestry" plan "$root/examples/mlp.tap" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -qx "H/linear   linear  batch 4096, out 4096, in 1024 (reduction: sum)" "$tmp/out" &&
  grep -qx "H          relu    d0 4096, d1 4096; aliases: batch = d0, out = d1" "$tmp/out"
check "plan lists ops, kernels, dims, extents, reductions, aliases" $?
"$tapestry" plan "$lr" --json >"$tmp/skeleton.json" 2>"$tmp/err" &&
  "$tapestry" shard "$lr" --plan "$tmp/skeleton.json" --explain -o "$tmp/s.json" 2>"$tmp/err" &&
  grep -qx "2 operations, 2 applications" "$tmp/err"
check "the skeleton is a plan that cuts nothing" $?
sed 's/"batch": 1, "out": 1, "in": 1/"batch": 2, "out": 1, "in": 1/; s/"d0": 1/"d0": 2/' "$tmp/skeleton.json" >"$tmp/edited.json"
"$tapestry" run "$lr" --plan "$tmp/edited.json" --verify --kernels reference --quiet >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -q "^ran 4 applications" "$tmp/out" && grep -q "^PASS   Y: bitwise" "$tmp/out"
check "an edited skeleton runs and verifies" $?
"$tapestry" run "$lr" --split Y.batch=2 --split Y/linear.batch=2 --verify --kernels reference --quiet >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && grep -q "^ran 4 applications" "$tmp/out" && grep -q "^PASS   Y: bitwise" "$tmp/out"
check "--split Y.batch=2 after Y = relu(linear(...))" $?
expect "plan of a missing file" 2 "cannot|no such|not found" -- "$tapestry" plan "$tmp/missing.tap"
expect "plan of a bad .tap" 2 "typo.tap:2:5" -- "$tapestry" plan "$tmp/typo.tap"

# 10. Messages say "error" once, name the file and why it cannot be read.
for cmd in run cost explain shard plan validate; do
  args=(); [[ $cmd == cost || $cmd == explain ]] && args=(--target h100x8)
  [[ $cmd == shard ]] && args=(-o "$tmp/never.json")
  "$tapestry" $cmd "$tmp/nothere.tap" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
  [[ $? -eq 2 ]] && [[ "$(cat "$tmp/err")" == "tapestry $cmd: error: cannot read $tmp/nothere.tap: no such file" ]]
  check "$cmd of a missing .tap: one line, one 'error', the file and the reason" $?
done
"$tapestry" run "$tmp/nothere.json" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] && [[ "$(cat "$tmp/err")" == "tapestry run: error: cannot read $tmp/nothere.json: no such file" ]]
check "run of a missing loom JSON: the same line" $?
"$tapestry" run "$tmp" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] && grep -qx "tapestry run: error: cannot read $tmp: it is a directory" "$tmp/err"
check "run of a directory says so" $?
"$tapestry" run "$lr" --plan "$tmp/nope.json" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] && grep -qx "tapestry run: error: cannot read $tmp/nope.json: no such file" "$tmp/err"
check "a missing plan: the same words" $?
"$tapestry" run "$tmp/typo.tap" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] && grep -qx "tapestry run: $tmp/typo.tap:2:5: error: unknown kernel 'rleu' (did you mean relu?)" "$tmp/err" &&
  [[ $(grep -o error "$tmp/err" | wc -l) -eq 1 ]]
check "a located error says 'error' once" $?
# --optimize --quiet: the plan follows the line that announces it (or the line says there is none).
"$tapestry" run "$lr" --optimize --quiet --max-evals 40 --target h100x8 >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 0 ]] && { { grep -q "the fastest takes .* under the model, with the plan$" "$tmp/out" &&
  [[ $(grep -A1 "with the plan$" "$tmp/out" | tail -1) == "  {"* ]]; } ||
  grep -q "the fastest is the graph as written (no split, no fusion): .* under the model$" "$tmp/out"; }
check "run --optimize --quiet says which plan it runs" $?
expect "--ignore-placement with --optimize" 2 "--ignore-placement applies to a given plan" -- \
  "$tapestry" run "$lr" --optimize --ignore-placement
# Dim variables: every command that reads a graph binds them with --dim (repeatable), and what
# is computed from a dim follows; a --dim the program lacks, a malformed one and --dim on loom
# JSON are errors.
printf 'dim batch = 2\ndim d = 4\nX: f32[batch, d]\nW: f32[3, d]\nY = reshape(matmul(X, transpose(W)), shape=[batch*3])\noutput Y\n' >"$tmp/dims.tap"
"$tapestry" run "$tmp/dims.tap" --dim batch=5 --dim d=7 --verify --quiet --outputs "$tmp/dout" >"$tmp/out" 2>"$tmp/err" &&
  /usr/bin/python3 -c "import numpy as np, sys; assert np.load(sys.argv[1]).shape == (15,)" "$tmp/dout/Y.npy" 2>/dev/null
check "run --dim batch=5 --dim d=7: Y has batch*3 = 15 cells" $?
for cmd in plan validate shard; do
  "$tapestry" $cmd "$tmp/dims.tap" --dim batch=9 >"$tmp/out" 2>"$tmp/err"
  check "$cmd takes --dim" $?
done
"$tapestry" cost "$tmp/dims.tap" --dim batch=64 --target h100x8 >"$tmp/out" 2>"$tmp/err"
check "cost takes --dim" $?
expect "--dim of a dim the program lacks" 2 "dims.tap: --dim bach=3: the program declares no .dim bach. \(it declares: batch, d\)" -- \
  "$tapestry" run "$tmp/dims.tap" --dim bach=3
expect "--dim malformed" 2 "--dim batch: expected NAME=N" -- "$tapestry" run "$tmp/dims.tap" --dim batch
expect "--dim twice" 2 "dim 'batch' is bound twice" -- "$tapestry" run "$tmp/dims.tap" --dim batch=2 --dim batch=3
"$tapestry" build "$tmp/dims.tap" -o "$tmp/dims.json" >"$tmp/out" 2>"$tmp/err"
expect "--dim on loom JSON" 2 "dims.json: --dim binds the dim variables of a .tap program" -- \
  "$tapestry" run "$tmp/dims.json" --dim batch=3
# Big graphs render as a summary (docs/rendering.md): 45 operations in 15 repeated blocks.
{
  printf 'x: f32[4, 8]\n'
  prev=x
  for k in $(seq 0 14); do
    printf 'blk/layer_%d.w: f32[8, 8]\nblk/layer_%d/fc = linear_nobias(%s, blk/layer_%d.w)\n' $k $k $prev $k
    printf 'blk/layer_%d/act = relu(blk/layer_%d/fc)\nblk/layer_%d/out = add(%s, blk/layer_%d/act)\n' $k $k $k $prev $k
    prev=blk/layer_$k/out
  done
  printf 'output %s\n' $prev
} >"$tmp/big.tap"
"$tapestry" render "$tmp/big.tap" -o "$tmp/big.dot" 2>"$tmp/err" &&
  grep -q "45 operations in 15 groups, drawn as 1" "$tmp/big.dot" && grep -q "layer_0 … layer_14</B>  ×15" "$tmp/big.dot"
check "render: a big graph is a summary, repeated layers ×15" $?
"$tapestry" render "$tmp/big.tap" -o "$tmp/full.dot" --detail full 2>"$tmp/err" &&
  ! grep -q "drawn as" "$tmp/full.dot" && grep -q "blk/layer_14/out" "$tmp/full.dot"
check "render --detail full draws every operation" $?
printf 'x: f32[4]\ny = relu(x)\n' >"$tmp/small.tap"
"$tapestry" render "$tmp/small.tap" -o "$tmp/small.dot" --detail summary 2>"$tmp/err" && grep -q "drawn as 1" "$tmp/small.dot"
check "render --detail summary on a small graph" $?
expect "render --detail bogus" 2 "--detail: bogus not in" -- "$tapestry" render "$tmp/small.tap" -o "$tmp/s.dot" --detail bogus
finish
