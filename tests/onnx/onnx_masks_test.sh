#!/usr/bin/env bash
# `tapestry import` of models whose masks are computed at run time (tests/onnx/onnx_mask_models.py,
# exported from PyTorch): masked_fill from a comparison (0, and −inf into a softmax),
# torch.where with a computed threshold, (a == b) & (c > d), Or and Not, a padding mask computed
# from an input of lengths, a boolean model input, and Where with a constant mask over a branch
# holding −inf. Each imports into the mask kernels, PyTorch's output passes `tapestry verify`,
# unsharded and sharded runs pass --verify with no unchecked cell and equal PyTorch's output
# within the verify bar; a corrupted output FAILs. Skipped (exit 77) without torch/onnx.
#
#   onnx_masks_test.sh TAPESTRY REPO_ROOT
tapestry=$1
root=$2
source "$root/tests/cli/cli_testing.sh"

python=/usr/bin/python3
if ! "$python" "$root/tests/onnx/onnx_mask_models.py" "$tmp/models" >"$tmp/export.log" 2>&1; then
  rc=$?
  cat "$tmp/export.log"
  if [[ $rc -eq 77 ]]; then exit 77; fi
  echo "FAIL: exporting the models from PyTorch"
  exit 1
fi
m=$tmp/models

# masks MODEL SPLIT…: import, verify PyTorch's output, run unsharded and sharded with --verify
# (no unchecked cell), verify both runs' outputs.
masks() {
  local name=$1
  shift
  local d=$m/$name splits=()
  for s in "$@"; do splits+=(--split "$s"); done
  "$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err"
  check "$name: import" $?
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err"
  check "$name: PyTorch's output passes verify" $?
  "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/plain" --verify >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 0 ]] && ! grep -q -i unchecked "$tmp/out"
  check "$name: unsharded run --verify, nothing unchecked" $?
  "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/sharded" "${splits[@]}" --verify >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 0 ]] && ! grep -q -i unchecked "$tmp/out" && ! grep -q "^ran \([0-9]*\) applications of \1 operations" "$tmp/out"
  check "$name: sharded run --verify (${*})" $?
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/sharded" >"$tmp/out" 2>"$tmp/err"
  check "$name: sharded output passes verify" $?
}

masks masked_fill y.d0=2 y.d2=2
grep -q "= where(" "$m/masked_fill/g.tap" && grep -q "= less(" "$m/masked_fill/g.tap" && grep -q "= greater(" "$m/masked_fill/g.tap"
check "masked_fill: Less, Greater and Where become less, greater and where" $?
masks where_two y.d0=2 y.d1=3
for k in equal logical_and logical_or logical_not less_equal; do
  grep -q "= $k(" "$m/where_two/g.tap"
  check "where_two: imports $k" $?
done
masks padding_attention y.batch=3
masks bool_input y.d0=2
grep -q "^m: f32\[4, 10\]" "$m/bool_input/g.tap"
check "bool_input: the boolean input is an f32 mask" $?
masks constant_mask_log y.d1=2
"$python" -c "
import numpy as np
y = np.load('$m/constant_mask_log/plain/y.npy'); t = np.load('$m/constant_mask_log/torch/y.npy')
assert not np.isnan(y).any() and np.array_equal(np.isinf(y), np.isinf(t)), (y, t)
assert np.allclose(y, t, rtol=1e-6, atol=0), (y, t)"
check "constant_mask_log: where selects (no NaN from −inf · 0), as PyTorch" $?

# The padding mask matters: PyTorch's output with the padded keys attended (the mask dropped)
# FAILs, and so does a where that took the other branch in one cell of masked_fill.
"$python" - "$m" <<'EOF'
import sys, os, numpy as np
m = sys.argv[1]
f = os.path.join(m, "masked_fill")
y = np.load(f"{f}/torch/y.npy"); x = np.load(f"{f}/in/x.npy")
i = np.argwhere(x < -0.5)[0]
y[tuple(i)] += x[tuple(i)]  # masked_fill kept x there instead of 0
os.makedirs(f"{f}/wrong", exist_ok=True)
np.save(f"{f}/wrong/y.npy", y)
EOF
"$tapestry" verify "$m/padding_attention/g.tap" --inputs "$m/padding_attention/in" --outputs "$m/padding_attention/nomask" >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 ]] && grep -q "^FAIL   y: " "$tmp/out"; check "padding_attention: the output without the mask FAILs" $?
"$tapestry" verify "$m/masked_fill/g.tap" --inputs "$m/masked_fill/in" --outputs "$m/masked_fill/wrong" >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 ]] && grep -q "^FAIL   y: 1 of 192 cells" "$tmp/out"; check "masked_fill: one cell from the other branch FAILs" $?

finish
