#!/usr/bin/env bash
# End-to-end checks of verification and of the files `run` writes: `tapestry verify` on outputs
# written by `run --outputs` (PASS, then FAIL once perturbed, exit 2 on a missing file),
# `--verify=exact`, declared outputs (consumed ones and inputs are written and verified), and
# output sets refused before any work (two outputs sharing a file, a directory in the way).
# Usage: verify_test.sh TAPESTRY ROOT
set -uo pipefail
tapestry=$1
root=$2
source "$(dirname "$0")/cli_testing.sh"
lr="$root/examples/linear_relu.tap"

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

finish
