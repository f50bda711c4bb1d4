#!/usr/bin/env bash
# End-to-end checks of verification and of the files `run` writes: `tapestry verify` on outputs
# written by `run --outputs` (PASS, then FAIL once perturbed, exit 2 on a missing file),
# `--verify=exact`, UNCHECKED outputs and --allow-unchecked, a causal attention mask checked in
# every cell, declared outputs (consumed ones and inputs are written and verified), and output
# sets refused before any work (two outputs sharing a file, a directory in the way).
# Usage: verify_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"
lr="$root/examples/linear_relu.tap"
python=/usr/bin/python3  # Debian's, with numpy

# Inputs and outputs of one run, then `tapestry verify` on them.
"$tapestry" run "$lr" --split Y/linear.batch=2 --outputs "$tmp/in" --seed 4 >/dev/null 2>&1  # makes Y.npy
mkdir -p "$tmp/inputs"
printf 'X: f32[-40:60, 20:32]\nW: f32[32, 12]\nb: f32[32]\noutput X, W, b\n' >"$tmp/ident.tap"
"$tapestry" run "$tmp/ident.tap" --outputs "$tmp/inputs" --seed 4 >/dev/null 2>"$tmp/err"
[[ -s "$tmp/inputs/X.npy" && -s "$tmp/inputs/W.npy" && -s "$tmp/inputs/b.npy" ]]; check "inputs declared as outputs are written" $?
"$tapestry" run "$lr" --plan "$root/examples/plans/linear_relu-split-in.json" --inputs "$tmp/inputs" --outputs "$tmp/out" >"$tmp/log" 2>"$tmp/err"
"$tapestry" verify "$lr" --inputs "$tmp/inputs" --outputs "$tmp/out" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q "^PASS   Y: " "$tmp/log"; check "verify PASSes run --outputs" $?
"$tapestry" verify "$lr" --inputs "$tmp/inputs" --outputs "$tmp/out" --format json >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q '"pass": true' "$tmp/log"; check "verify --format json" $?
# Perturb one float of Y (its last byte: sign and exponent) and verify again: FAIL, exit 1.
size=$(stat -c %s "$tmp/out/Y.npy")
printf '\x42' | dd of="$tmp/out/Y.npy" bs=1 seek=$((size - 1)) conv=notrunc status=none
"$tapestry" verify "$lr" --inputs "$tmp/inputs" --outputs "$tmp/out" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 1 ]] && grep -q "^FAIL   Y: 1 of 3200 cells outside their bar" "$tmp/log"; check "verify FAILs a perturbed output" $?
rm "$tmp/out/Y.npy"
"$tapestry" verify "$lr" --inputs "$tmp/inputs" --outputs "$tmp/out" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 2 ]] && grep -q "Y.npy: missing output file for tensor Y" "$tmp/err"; check "verify names a missing output file" $?

# --verify=exact: bitwise-exact with the fast kernels and a split reduction; refused for softmax.
"$tapestry" run "$lr" --plan "$root/examples/plans/linear_relu-split-in.json" --verify=exact >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q "equal to the exact value in all 3200 cells" "$tmp/log"; check "--verify=exact" $?
printf 'X: f32[4, 8]\nY = softmax(X)\noutput Y\n' >"$tmp/sm.tap"
"$tapestry" run "$tmp/sm.tap" --verify=exact >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 2 ]] && grep -q "operation 'Y' (softmax) is not exact" "$tmp/err"; check "--verify=exact refused for softmax" $?
"$tapestry" run "$lr" --verify=maybe >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 2 ]]; check "--verify=maybe is an error" $?

# UNCHECKED: x / (a − a) is ±inf, but the oracle cannot rule out that a − a is a tiny nonzero
# number, so those cells have no finite bar. Not a PASS: exit 1 from run --verify and verify;
# --allow-unchecked makes it a PASS with a warning; JSON carries the verdict and the count.
printf 'X: f32[2, 3]\nA: f32[2, 3]\nY = div(X, sub(A, A))\noutput Y\n' >"$tmp/unb.tap"
"$tapestry" run "$tmp/unb.tap" --verify --outputs "$tmp/unb" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 1 ]] && grep -q "^UNCHECKED Y: 6 of 6 cells unchecked (bar not finite, the first at (0, 0))" "$tmp/log"
check "run --verify: unchecked cells are UNCHECKED, exit 1" $?
"$tapestry" run "$tmp/unb.tap" --verify --allow-unchecked >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q "^PASS   Y: .*WARNING: 6 of 6 cells unchecked" "$tmp/log"
check "run --verify --allow-unchecked: PASS with a warning" $?
"$tapestry" run "$tmp/unb.tap" --allow-unchecked >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 2 ]] && grep -q "allow-unchecked needs --verify" "$tmp/err"; check "--allow-unchecked without --verify" $?
"$tapestry" run "$tmp/unb.tap" --outputs "$tmp/unb_in" --seed 0 >/dev/null 2>&1
printf 'X: f32[2, 3]\nA: f32[2, 3]\noutput X, A\n' >"$tmp/unb_inputs.tap"
"$tapestry" run "$tmp/unb_inputs.tap" --outputs "$tmp/unb_in" --seed 0 >/dev/null 2>&1
"$tapestry" verify "$tmp/unb.tap" --inputs "$tmp/unb_in" --outputs "$tmp/unb" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 1 ]] && grep -q "^UNCHECKED Y: 6 of 6" "$tmp/log"; check "verify: UNCHECKED, exit 1" $?
"$tapestry" verify "$tmp/unb.tap" --inputs "$tmp/unb_in" --outputs "$tmp/unb" --format json >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 1 ]] && grep -q '"verdict": "unchecked"' "$tmp/log" && grep -q '"unchecked_cells": 6' "$tmp/log"
check "verify --format json: the verdict and the count" $?
"$tapestry" verify "$tmp/unb.tap" --inputs "$tmp/unb_in" --outputs "$tmp/unb" --allow-unchecked >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && grep -q "WARNING: 6 of 6 cells unchecked" "$tmp/log"; check "verify --allow-unchecked" $?

# A causal mask (−inf above the diagonal, a graph input as ONNX import makes it): every cell is
# checked, and one changed cell of the first token (which attends to itself alone) FAILs.
printf 'X: f32[32, 64]\nWq: f32[64, 64]\nbq: f32[64]\nWk: f32[64, 64]\nbk: f32[64]\nWv: f32[64, 64]\nbv: f32[64]\nWo: f32[64, 64]\nbo: f32[64]\nScale: f32[1]\noutput X, Wq, bq, Wk, bk, Wv, bv, Wo, bo, Scale\n' >"$tmp/causal_inputs.tap"
"$tapestry" run "$tmp/causal_inputs.tap" --outputs "$tmp/causal_in" --seed 2 >/dev/null 2>&1
"$python" -c "import numpy as np; np.save('$tmp/causal_in/Mask.npy', np.triu(np.full((16, 16), -np.inf, np.float32), 1))" 2>/dev/null
if [[ -s "$tmp/causal_in/Mask.npy" ]]; then
  "$tapestry" run "$root/tests/data/verify/causal_attention.tap" --inputs "$tmp/causal_in" --outputs "$tmp/causal" --split P.batch1=2 --verify >"$tmp/log" 2>"$tmp/err"; rc=$?
  [[ $rc -eq 0 ]] && grep -q "^PASS   Y: " "$tmp/log" && ! grep -q unchecked "$tmp/log"
  check "causal mask: run --verify checks every cell" $?
  "$python" -c "import numpy as np; y = np.load('$tmp/causal/Y.npy'); y[0, 0] += 100; np.save('$tmp/causal/Y.npy', y)"
  "$tapestry" verify "$root/tests/data/verify/causal_attention.tap" --inputs "$tmp/causal_in" --outputs "$tmp/causal" >"$tmp/log" 2>"$tmp/err"; rc=$?
  [[ $rc -eq 1 ]] && grep -q "^FAIL   Y: 1 of 2048 cells outside their bar" "$tmp/log"
  check "causal mask: +100 in the first token's cell FAILs" $?
fi

# Declared outputs: A is consumed by B, and still written and verified.
printf 'X: f32[4, 3]\nA = relu(X)\nB = neg(A)\noutput A, B\n' >"$tmp/ab.tap"
"$tapestry" run "$tmp/ab.tap" --split A.d0=2 --verify --outputs "$tmp/ab" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 && -s "$tmp/ab/A.npy" && -s "$tmp/ab/B.npy" ]] && [[ $(grep -c '^PASS' "$tmp/log") -eq 2 ]]
check "consumed declared output written and verified" $?

# Output sets refused before any work: nothing written.
printf 'X: f32[4, 3]\nA/b = relu(X)\nA_b = neg(X)\noutput A/b, A_b\n' >"$tmp/clash.tap"
if "$tapestry" build "$tmp/clash.tap" -o "$tmp/clash.json" >/dev/null 2>&1; then
  "$tapestry" run "$tmp/clash.json" --outputs "$tmp/clash" >"$tmp/log" 2>"$tmp/err"; rc=$?
  [[ $rc -eq 2 && ! -e "$tmp/clash/A_b.npy" ]] && grep -q "would both be written to A_b.npy" "$tmp/err"
  check "two outputs, one file name" $?
fi
mkdir -p "$tmp/dir/B.npy"
"$tapestry" run "$tmp/ab.tap" --outputs "$tmp/dir" --metrics "$tmp/dir/m.json" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 2 && ! -e "$tmp/dir/A.npy" && ! -e "$tmp/dir/m.json" ]] && grep -q "B.npy (output B) exists and is not a regular file" "$tmp/err"
check "a directory in the way of an output" $?

# The combine of a split reduction planned like any operation (issue 26): Megatron's MLP in 8
# shards with the combine by default (nothing reads Y: cut by rows where the blocks are, a
# reduce-scatter), named unsplit (a reduce), and with Y replicated — each against the float64
# oracle with both kernel sets, and exact on {-1, 0, 1} inputs. With the reference kernels the
# row-cut combine writes bitwise the unsplit one's Y: every cell sums the same 8 blocks in order.
mlp="$root/tests/data/cli/mlp_small.tap"
megatron='"H/linear": {"split": {"out": 8}}, "H": {"split": {"d1": 8}}, "Y": {"split": {"in": 8}}'
echo "{\"ops\": {$megatron}, \"fuse\": \"auto\"}" >"$tmp/rs.json"
echo "{\"ops\": {$megatron, \"Y/matmul/reduce\": {}}, \"fuse\": \"auto\"}" >"$tmp/reduce.json"
echo "{\"ops\": {$megatron}, \"fuse\": \"auto\", \"outputs\": {\"Y\": {\"replicate\": \"all\"}}}" >"$tmp/ar.json"
for plan in rs reduce ar; do
  for kernels in fast reference; do
    "$tapestry" run "$mlp" --plan "$tmp/$plan.json" --kernels $kernels --verify --seed 7 \
      --outputs "$tmp/$plan-$kernels" >"$tmp/log" 2>"$tmp/err"; rc=$?
    [[ $rc -eq 0 ]] && grep -q "^PASS   Y: " "$tmp/log"; check "megatron combine '$plan', $kernels kernels: --verify PASS" $?
  done
  "$tapestry" run "$mlp" --plan "$tmp/$plan.json" --verify=exact >"$tmp/log" 2>"$tmp/err"; rc=$?
  [[ $rc -eq 0 ]] && grep -q "equal to the exact value in all 2048 cells" "$tmp/log"; check "megatron combine '$plan': --verify=exact" $?
done
"$tapestry" shard "$mlp" --plan "$tmp/ar.json" --target h100x8 -o "$tmp/rs-sharded.json" >"$tmp/log" 2>"$tmp/err" &&
  "$tapestry" validate "$tmp/rs-sharded.json" --dialect placement --target h100x8 >"$tmp/log" 2>"$tmp/err"
check "megatron with the combine reduce-scattered: the lowered graph is valid" $?
cmp -s "$tmp/rs-reference/Y.npy" "$tmp/reduce-reference/Y.npy" && cmp -s "$tmp/ar-reference/Y.npy" "$tmp/reduce-reference/Y.npy"
check "reference kernels: the row-cut combine's Y is bitwise the unsplit one's" $?

# Where --verify spends its time, in --metrics: the naive run, the oracle and each of its
# operations (slowest first), the judgement; absent without --verify.
"$tapestry" run "$lr" --split Y/linear.batch=2 --verify --metrics "$tmp/vm.json" >"$tmp/log" 2>"$tmp/err"; rc=$?
[[ $rc -eq 0 ]] && "$python" - "$tmp/vm.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["verify"]
assert all(v[k] >= 0 for k in ("naive_s", "oracle_s", "judge_s")), v
ops = v["operations"]
assert sorted(o["operation"] for o in ops) == ["Y", "Y/linear"], ops
assert {o["kernel"] for o in ops} == {"relu", "linear"}, ops
assert [o["seconds"] for o in ops] == sorted((o["seconds"] for o in ops), reverse=True), ops
assert sum(o["seconds"] for o in ops) <= v["oracle_s"], v
PY
check "run --verify --metrics: where the verification spent its time" $?
"$tapestry" run "$lr" --split Y/linear.batch=2 --metrics "$tmp/m.json" >"$tmp/log" 2>"$tmp/err"
! grep -q '"verify"' "$tmp/m.json"; check "run --metrics without --verify: no verify figures" $?

finish
