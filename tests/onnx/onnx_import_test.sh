#!/usr/bin/env bash
# End-to-end tests of `tapestry import` (docs/onnx.md): models exported from PyTorch in the test
# itself (tests/onnx/onnx_models.py) — an MLP, a small CNN, a transformer encoder layer at opsets
# 14 and 17 — are imported, run unsharded and under a sharding plan, and both results and
# PyTorch's own output are checked with `tapestry verify` (the verify bar); GPT-style blocks with
# a causal mask are checked in every cell, and corrupted outputs must FAIL. Bad models each give
# one located error and exit 2. Skipped (exit 77, the reason printed) without torch/onnx.
#
#   onnx_import_test.sh TAPESTRY REPO_ROOT
tapestry=$1
root=$2
source "$root/tests/cli/cli_testing.sh"

python=/usr/bin/python3
if ! "$python" "$root/tests/onnx/onnx_models.py" "$tmp/models" >"$tmp/export.log" 2>&1; then
  rc=$?
  cat "$tmp/export.log"
  if [[ $rc -eq 77 ]]; then exit 77; fi
  echo "FAIL: exporting the models from PyTorch"
  exit 1
fi
m=$tmp/models

if "$tapestry" import --list-ops >"$tmp/out" 2>"$tmp/err"; then
  for op in Gemm MatMul Conv MaxPool AveragePool Softmax LayerNormalization ReduceMean Erf; do
    grep -q "^$op " "$tmp/out"
    check "--list-ops lists $op" $?
  done
else
  check "--list-ops runs" 1
fi

# import MODEL SPLITS…: import to .tap with weights, then run unsharded and sharded; PyTorch's
# output and both runs' outputs must pass `tapestry verify`.
import_and_run() {
  local name=$1
  shift
  local d=$m/$name splits=()
  for s in "$@"; do splits+=(--split "$s"); done
  "$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err"
  check "$name: import" $?
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err"
  check "$name: PyTorch's output passes verify" $?
  "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/plain" --verify --quiet >"$tmp/out" 2>"$tmp/err"
  check "$name: unsharded run --verify" $?
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/plain" >"$tmp/out" 2>"$tmp/err"
  check "$name: unsharded output passes verify" $?
  "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/sharded" "${splits[@]}" --verify --quiet >"$tmp/out" 2>"$tmp/err"
  check "$name: sharded run --verify" $?
  grep -q "ran .* applications" "$tmp/out" && ! grep -q "^ran \([0-9]*\) applications of \1 operations" "$tmp/out"
  check "$name: the plan shards something" $?
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/sharded" >"$tmp/out" 2>"$tmp/err"
  check "$name: sharded output passes verify" $?
}

import_and_run mlp fc1/Gemm.batch=2 fc2/Gemm.out=2
import_and_run cnn conv1/Conv/conv2d.o=2 pool/MaxPool.n=2 y.batch=2
import_and_run mobile grouped/Conv/grouped_conv2d.g=2 dw/Conv.n=2 dw2/Conv/grouped_conv2d.g=4 dw2/Conv/grouped_conv2d.oh=2
grep -q "^dw/Conv = grouped_conv2d(pad(Relu_1, padding=1), dw.weight, groups=16)" "$m/mobile/g.tap"
check "mobile: a depthwise Conv is grouped_conv2d with groups = channels" $?
import_and_run encoder14 linear1/MatMul.batch=2 self_attn/Softmax.batch0=2
import_and_run encoder17 linear1/MatMul.batch=2 norm1/LayerNormalization/variance.pre0=2 self_attn/Softmax.batch0=2
# torchvision's ViT front and back as exported (class token by expand + cat, head on x[:, 0]):
# the shape code folds, Concat is unslices added up, Gather a slice.
import_and_run tiny_vit Concat.d1=2 Gather.d0=2 layer/linear1/MatMul.batch=2
grep -q "^Concat = add(unslice(Expand, dim=1, size=17, start=0), unslice(Transpose, dim=1, size=17, start=1))" "$m/tiny_vit/g.tap" &&
  grep -q "^Gather = reshape(slice(layer/norm2/Add_1, dim=1, end=1, start=0), shape=\[2, 32\])" "$m/tiny_vit/g.tap" &&
  grep -q "^Expand = mul(class_token, Expand.ones)" "$m/tiny_vit/g.tap" &&
  grep -q "^class_token: f32\[1, 1, 32\]" "$m/tiny_vit/g.tap"
check "tiny_vit: Concat is unslice/add, Gather a slice, Expand a product by ones" $?

# Integer data at run time: the embedding lookup of ids fed as an input is a gather, the argmax an
# int64 output checked with its index bar, x ** y a pow; sharded along the ids' batch, the
# argmax's rows and pow's cells.
import_and_run tagger emb/Gather.i0=2 tag.pre0=2 p.d2=4
grep -q "^emb/Gather = gather(emb.weight, ids)$" "$m/tagger/g.tap" && grep -q "^ids: i64\[2, 7\]" "$m/tagger/g.tap" &&
  grep -q "^tag = argmax(logits" "$m/tagger/g.tap" && grep -q "^p = pow(" "$m/tagger/g.tap"
check "tagger: Gather of fed ids is gather, ArgMax argmax, Pow pow" $?

# An opset-9 export is converted to opset 13 by ONNX's version converter, then imported as any.
d=$m/cnn_opset9
"$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err"
check "cnn_opset9: import" $?
grep -q "^imported .* (opset 13, converted from opset 9): " "$tmp/out"
check "cnn_opset9: the import says it converted opset 9 to 13" $?
"$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err"
check "cnn_opset9: PyTorch's output passes verify" $?
"$tapestry" run "$d/g.tap" --inputs "$d/in" --split conv1/Conv/conv2d.o=2 --verify --quiet >"$tmp/out" 2>"$tmp/err"
check "cnn_opset9: sharded run --verify" $?

"$tapestry" import "$m/conv_bn/model.onnx" -o "$tmp/q.tap" --quiet >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 0 ]] && ! grep -q "^renamed" "$tmp/out" && grep -q "^imported " "$tmp/out"
check "--quiet drops the renamed lines (rc=$rc)" $?

# Weights PyTorch made while exporting (a Conv with its BatchNorm folded in: onnx::Conv_<n>) are
# named after the node that reads them.
d=$m/conv_bn
"$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err"
check "conv_bn: import" $?
grep -q "^renamed  weight onnx::Conv_[0-9]* → conv/Conv.weight$" "$tmp/out" &&
  grep -q "^renamed  weight onnx::Conv_[0-9]* → conv/Conv.bias$" "$tmp/out" &&
  grep -q "^conv/Conv.weight: f32\[4, 3, 3, 3\]" "$d/g.tap" && [[ -f $d/in/conv_Conv.weight.npy ]]
check "conv_bn: the folded weights are named after their Conv node" $?
"$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err"
check "conv_bn: PyTorch's output passes verify" $?

# --check lists every blocker (not only the first), writes nothing, exits 2; 0 when none.
"$tapestry" import "$m/bad/three_blockers.onnx" --check >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 2 ]] && grep -q "three_blockers.onnx: 3 blockers stop the import (4 nodes, opset 14):" "$tmp/err" &&
  grep -q "^  node 'cosine' (Cos, node 0): operator Cos is not supported" "$tmp/err" &&
  grep -q "^  node 'pool' (MaxPool, node 2): storage_order=1 is not supported (only 0)" "$tmp/err" &&
  grep -q "^  node 'sine' (Sin, node 3): operator Sin is not supported" "$tmp/err" &&
  [[ $(wc -l <"$tmp/err") -eq 4 ]] && [[ ! -s $tmp/out ]]
check "--check lists all three blockers (rc=$rc)" $?
"$tapestry" import "$m/bad/f16_blockers.onnx" --check >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 2 ]] && grep -q "f16_blockers.onnx: 2 blockers stop the import" "$tmp/err" &&
  grep -q "^  node 'pool' (MaxPool, node 1): storage_order=1 is not supported (only 0)" "$tmp/err"
check "--check stands a float16 value in past a blocker (rc=$rc)" $?
"$tapestry" import "$m/mlp/model.onnx" --check >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 0 ]] && grep -q "^no blockers: .* nodes (opset 14) import as .* operations and 4 weights" "$tmp/out"
check "--check of a model that imports (rc=$rc)" $?

# GPT-style blocks with a causal mask (−inf, and −1e9 at opset 13): the mask becomes a weight
# holding −inf (−1e9) above the diagonal. Every cell of y is checked — the masked terms add
# nothing to the bars — and PyTorch's output with +100 in one cell, or with 62 of the 64 tokens
# zeroed, FAILs (both PASSed when the masked rows were left unchecked).
for name in gpt_causal14 gpt_causal13_1e9; do
  d=$m/$name
  "$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err"
  check "$name: import" $?
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" --format json >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 0 ]] && grep -q '"verdict": "pass"' "$tmp/out" && grep -q '"unchecked_cells": 0' "$tmp/out"
  check "$name: PyTorch's output passes verify with 0 unchecked cells" $?
  "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/sharded" --split attn/Softmax.batch0=2 --split fc1/MatMul.batch=2 --verify --quiet >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 0 ]] && grep -q "^PASS   y: " "$tmp/out" && ! grep -q "unchecked" "$tmp/out"
  check "$name: sharded run --verify checks every cell" $?
  for fault in "y[0, 0, 0] += 100" "y[:, :62, :] = 0"; do
    mkdir -p "$tmp/$name-wrong"
    "$python" -c "
import numpy as np
y = np.load('$d/torch/y.npy'); $fault; np.save('$tmp/$name-wrong/y.npy', y)"
    "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$tmp/$name-wrong" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [[ $rc -eq 1 ]] && grep -q "^FAIL   y: " "$tmp/out"
    check "$name: PyTorch's output with $fault FAILs verify" $?
  done
done

# Hand-built models with numpy references: Gemm attribute combinations, reductions with and
# without keepdims, Softmax over a middle axis, Squeeze/Unsqueeze, GlobalAveragePool, Pow,
# MaxPool and AveragePool with pads; Conv 1-D, with uneven pads, auto_pad SAME_*, depthwise
# with a computed bias; Pad with uneven amounts; pools 1-D, with non-square windows and
# strides, ceil_mode, count_include_pad=0, uneven pads; ConvTranspose 2-D and 1-D, with pads,
# output_padding, output_shape and auto_pad; 3-D Conv, MaxPool and AveragePool; dilated Conv.
for name in gemm reduce pool reshape_allowzero pool_pads conv1d conv_uneven_pads conv_same_upper conv_same_lower conv_depthwise_computed_bias pad_uneven pool1d pool_rect pool_ceil avgpool_exclude_pad maxpool_uneven_pads conv_transpose conv_transpose_1d conv_transpose_output_shape conv_transpose_same_upper conv_transpose_strides_dilations_groups maxpool_dilated_ceil0 maxpool_dilated_ceil1 maxpool1d_dilated conv3d_groups conv_dilated_groups conv3d_pool3d conv_dilated conv1d_dilated; do
  d=$m/$name
  "$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err"
  check "$name: numpy's output passes verify" $?
done
# Opset-6 models (ONNX's version converter, after shape inference): PRelu's [C] slope per
# channel; Add with broadcast=1 of a Constant, then Softmax over the flattened dims 1….
# Resize nearest (repeats by multiplying with ones, a stride by reshape and slice) against
# torch's interpolate, unsharded and split along the batch.
d=$m/resize_nearest
"$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err" &&
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err" &&
  "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/split" --split y.d0=2 --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/split" >"$tmp/out" 2>"$tmp/err"
check "resize_nearest: torch's output and a split run pass verify" $?
# Resize linear and cubic (a matmul by the interpolation matrix per resized axis): against
# torch's bilinear/bicubic interpolate, and ONNX's reference for a resized channel axis (moved
# last by a permute) and a cubic with exclude_outside; unsharded and split along the batch (y is
# the last matmul). One
# output cell moved by 1e-3 of the output's range FAILs verify.
for name in resize_linear_cubic resize_middle_axis; do
  d=$m/$name
  "$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err" &&
    grep -q "= matmul(" "$d/g.tap" &&
    "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/split" --split y.batch0=2 --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/split" >"$tmp/out" 2>"$tmp/err"
  check "$name: the reference output and a split run pass verify" $?
  mkdir -p "$tmp/$name-wrong"
  "$python" -c "
import numpy as np
y = np.load('$d/torch/y.npy'); y[1, 2, 0, 1] += 1e-3 * (y.max() - y.min()); np.save('$tmp/$name-wrong/y.npy', y)"
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$tmp/$name-wrong" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 1 ]] && grep -q "^FAIL   y: " "$tmp/out"
  check "$name: the reference output with one cell moved FAILs verify (rc=$rc)" $?
done
# Floor, Ceil, Round (the floor, ceil and round kernels) against numpy, unsharded and split.
d=$m/floor_ceil_round
"$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err" &&
  grep -q "= round(x)" "$d/g.tap" && grep -q "= floor(x)" "$d/g.tap" && grep -q "= ceil(x)" "$d/g.tap" &&
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err" &&
  "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/split" --split y.d0=2 --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/split" >"$tmp/out" 2>"$tmp/err"
check "floor_ceil_round: numpy's output and a split run pass verify" $?
for name in prelu_opset6 broadcast_opset6; do
  d=$m/$name
  "$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^imported .* (opset 13, converted from opset 6): " "$tmp/out" &&
    "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/split" --split y.d0=2 --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/split" >"$tmp/out" 2>"$tmp/err"
  check "$name: converted from opset 6; numpy's output and a split run pass verify" $?
done
# Cases of the ONNX backend test data (tests/data/onnx_conformance: copies, with ONNX's own
# expected outputs) for what the importer gained late — opset-6 conversion, per-channel PRelu,
# Pad reflect/edge, InstanceNormalization, …: every one must pass at the backend's tolerance.
"$python" "$root/bench/onnx_conformance.py" --tapestry "$tapestry" --data "$root/tests/data/onnx_conformance" \
  --jobs 1 --require-pass >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 0 ]] || cat "$tmp/out" "$tmp/err"
check "ONNX backend cases in tests/data/onnx_conformance all pass (rc=$rc)" $?
"$tapestry" run "$m/conv3d_pool3d/g.tap" --inputs "$m/conv3d_pool3d/in" --split c3/conv3d.od=2 --split c3/conv3d.c=3 --split mp.c=2 --split y.od=2 --verify --quiet >"$tmp/out" 2>"$tmp/err"
check "conv3d_pool3d: split along depth, channels and the conv's reduction, run --verify" $?
d=$m/conv_transpose_strides_dilations_groups
"$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/split" --split y/conv2d_grad_input.n=2 --split y/conv2d_grad_input.2.c=3 --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
  "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/split" >"$tmp/out" 2>"$tmp/err" &&
  [[ $(grep -c "= conv2d_grad_input(" "$d/g.tap") -eq 2 ]]
check "conv_transpose_strides_dilations_groups: one conv2d_grad_input per group; split over the batch and channels, run --verify and verify" $?
grep -q "^g1 = add(mul(matmul(transpose(x), b1), g1.alpha), g1.beta_c1)" "$m/gemm/g.tap"
check "gemm: transA, alpha and beta become transpose, mul and a scaled C" $?

# Cast and CastLike between float dtypes become the cast kernel: numpy's output (which rounds
# where the model casts) passes verify, unsharded and split.
for name in cast_f16 castlike_bf16; do
  d=$m/$name
  "$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/split" --split y.d0=2 --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/split" >"$tmp/out" 2>"$tmp/err"
  check "$name: numpy's output and a split run pass verify" $?
done
grep -q "^narrow = cast(x, to=f16)$" "$m/cast_f16/g.tap" && grep -q "^y = cast(relu.*, to=f32)$" "$m/cast_f16/g.tap" &&
  grep -q "^narrow = cast(x, to=bf16)$" "$m/castlike_bf16/g.tap" && grep -q "^y = cast(relu.*, to=f32)$" "$m/castlike_bf16/g.tap"
check "cast_f16, castlike_bf16: the casts are cast operations" $?

# --dtype bf16 / f16: every tensor of the imported graph 16-bit, the weights written in it
# (bf16 as <u2 bit patterns, f16 as <f2), and runs --verify PASS unsharded and sharded.
for dtype in bf16 f16; do
  for spec in "mlp fc1/Gemm.batch=2" "encoder17 linear1/MatMul.batch=2" "cnn conv1/Conv/conv2d.o=2"; do
    read -r name split <<<"$spec"
    d=$m/$name
    mkdir -p "$d/$dtype"
    "$tapestry" import "$d/model.onnx" -o "$d/$dtype/g.tap" --weights "$d/$dtype/in" --dtype $dtype --quiet >"$tmp/out" 2>"$tmp/err"
    check "$name --dtype $dtype: import" $?
    grep -q "$dtype\[" "$d/$dtype/g.tap" && ! grep -q "f32\[" "$d/$dtype/g.tap"
    check "$name --dtype $dtype: every tensor is $dtype" $?
    # The weights are 16-bit files; the model's own input (x, float32 from the export) is
    # added, rounded to nearest even (bf16 by its bits).
    "$python" - "$d/$dtype/in" "$dtype" "$d/in" <<'PY'
import glob, os, sys, numpy as np
out, dtype, src = sys.argv[1:]
want = "<u2" if dtype == "bf16" else "<f2"
files = glob.glob(out + "/*.npy")
assert files and all(np.load(f).dtype.str == want for f in files), (want, files)
for f in glob.glob(src + "/*.npy"):
    if os.path.exists(os.path.join(out, os.path.basename(f))):
        continue
    v = np.load(f).astype(np.float32)
    if dtype == "bf16":
        u = v.view(np.uint32).astype(np.uint64)
        v = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    else:
        v = v.astype(np.float16)
    np.save(os.path.join(out, os.path.basename(f)), v)
PY
    check "$name --dtype $dtype: the weights are $dtype .npy files" $?
    "$tapestry" run "$d/$dtype/g.tap" --inputs "$d/$dtype/in" --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
      "$tapestry" run "$d/$dtype/g.tap" --inputs "$d/$dtype/in" --split "$split" --verify --quiet >"$tmp/out" 2>"$tmp/err"
    check "$name --dtype $dtype: run --verify, unsharded and sharded" $?
  done
done
expect_dtype=$("$tapestry" import "$m/mlp/model.onnx" -o "$tmp/x.tap" --dtype f64 2>&1)
[[ $? -ne 0 ]] && grep -q "dtype" <<<"$expect_dtype"
check "--dtype f64 is refused" $?

# Activations, variadic ops, Dropout, BatchNormalization: import-time rewrites into kernels,
# each against numpy's formula (verify's bar), unsharded and split in two.
for d in "$m"/act_*; do
  name=${d##*/}
  "$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/in" >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/torch" >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" run "$d/g.tap" --inputs "$d/in" --outputs "$d/split" --split y.d0=2 --verify --quiet >"$tmp/out" 2>"$tmp/err" &&
    "$tapestry" verify "$d/g.tap" --inputs "$d/in" --outputs "$d/split" >"$tmp/out" 2>"$tmp/err"
  check "$name: numpy's output and a split run pass verify" $?
done
grep -q "^y/div = div(y/sub, y/sqrt)" "$m/act_batch_norm/g.tap"
check "batch_norm: the formula itself, not folded constants" $?

# The structure the issue asks for: one gelu for PyTorch's erf chain, LayerNormalization as a
# composite named after its node, Gemm as linear.
grep -q "= gelu(linear1/Add)" "$m/encoder17/g.tap"
check "encoder17: the erf chain is one gelu" $?
grep -q "^norm1/LayerNormalization = add(mul(div(sub(" "$m/encoder17/g.tap"
check "encoder17: LayerNormalization is a composite named after its node" $?
grep -q "^fc1/Gemm = linear(x, fc1.weight, fc1.bias)" "$m/mlp/g.tap"
check "mlp: Gemm is linear" $?

# A verify that can fail: PyTorch's output with one cell changed.
"$python" -c "
import numpy as np, sys
y = np.load('$m/mlp/torch/y.npy'); y[3, 5] += 1e-3; np.save('$tmp/y.npy', y)" && mkdir -p "$tmp/wrong" && mv "$tmp/y.npy" "$tmp/wrong/y.npy"
"$tapestry" verify "$m/mlp/g.tap" --inputs "$m/mlp/in" --outputs "$tmp/wrong" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 1 ]]
check "mlp: a changed output FAILs verify" $?

# JSON out, validated.
"$tapestry" import "$m/cnn/model.onnx" -o "$tmp/cnn.json" >"$tmp/out" 2>"$tmp/err" &&
  "$tapestry" validate "$tmp/cnn.json" >"$tmp/out" 2>"$tmp/err"
check "cnn: JSON import validates" $?

# Dynamic dims: a .tap keeps them as dim variables (one import, any size: --dim at run time);
# JSON has fixed sizes, so it needs --shape or --dim.
expect "dynamic batch into JSON without --shape" 2 "input 'x' has a dynamic dim 0 \('batch'\): give its shape with --shape x=.* or its size with --dim batch=N" -- \
  "$tapestry" import "$m/mlp_dynamic/model.onnx" -o "$tmp/d.json"
"$tapestry" import "$m/mlp_dynamic/model.onnx" -o "$tmp/d.json" --dim batch=3 >"$tmp/out" 2>"$tmp/err" &&
  grep -q '"x"' "$tmp/d.json"
check "dynamic batch into JSON with --dim" $?
expect "--dim of a dim the model does not have" 2 "--dim nope=2: the model has no dynamic dim 'nope'" -- \
  "$tapestry" import "$m/mlp_dynamic/model.onnx" -o "$tmp/d.tap" --dim nope=2
# dynamic NAME DIMS…: import once (no --shape), then run and verify at the export's size and at
# each at<K>/ size, given by DIMS ("batch=3,seq=5" per at<K>, in order), against PyTorch.
dynamic() {
  local name=$1 d=$m/$1
  shift
  "$tapestry" import "$d/model.onnx" -o "$d/g.tap" --weights "$d/w" >"$tmp/out" 2>"$tmp/err"
  check "$name: imports with its dynamic dims" $?
  grep -q "^dim      batch = 1 (x dim 0; any size with --dim batch=N)" "$tmp/out" &&
    grep -q "^dim batch = 1" "$d/g.tap"
  check "$name: batch is a dim variable of the program" $?
  local k=0 sub args
  for sizes in "$@"; do
    sub=$d/at$k
    args=()
    IFS=, read -ra pairs <<<"$sizes"
    for p in "${pairs[@]}"; do args+=(--dim "$p"); done
    cp "$d"/w/*.npy "$sub/in/"
    "$tapestry" verify "$d/g.tap" "${args[@]}" --inputs "$sub/in" --outputs "$sub/torch" >"$tmp/out" 2>"$tmp/err"
    check "$name at $sizes: PyTorch's output passes verify" $?
    "$tapestry" run "$d/g.tap" "${args[@]}" --inputs "$sub/in" --verify --quiet >"$tmp/out" 2>"$tmp/err"
    check "$name at $sizes: run --verify" $?
    k=$((k + 1))
  done
}
dynamic mlp_dynamic batch=3
dynamic cnn_dynamic batch=1 batch=6
dynamic encoder_dynamic batch=3,seq=5 batch=1,seq=12
grep -q "^dim seq = 1" "$m/encoder_dynamic/g.tap" && grep -q "batch\*seq" "$m/encoder_dynamic/g.tap"
check "encoder_dynamic: seq is a dim variable, and a size is batch*seq" $?
# At the export's own size through --dim, and a size that does not match the inputs.
cp "$m/cnn_dynamic"/w/*.npy "$m/cnn_dynamic/in/"
"$tapestry" verify "$m/cnn_dynamic/g.tap" --dim batch=4 --inputs "$m/cnn_dynamic/in" --outputs "$m/cnn_dynamic/torch" >"$tmp/out" 2>"$tmp/err"
check "cnn_dynamic at batch=4: PyTorch's output passes verify" $?
"$tapestry" run "$m/cnn_dynamic/g.tap" --dim batch=5 --inputs "$m/cnn_dynamic/in" >"$tmp/out" 2>"$tmp/err"
[[ $? -eq 2 ]] && grep -q "x.npy: shape (4, 3, 16, 16) does not match the expected (5, 3, 16, 16)" "$tmp/err"
check "cnn_dynamic at batch=5 with batch-4 inputs: an error" $?
"$tapestry" import "$m/mlp_dynamic/model.onnx" -o "$tmp/d.tap" --shape x=8,32 >"$tmp/out" 2>"$tmp/err"
check "dynamic batch with --shape" $?
expect "--shape of an unknown input" 2 "--shape nope: the model has no input of that name" -- \
  "$tapestry" import "$m/mlp_dynamic/model.onnx" -o "$tmp/d.tap" --shape x=8,32 --shape nope=1
expect "--shape with a bad dim" 2 "'-3' is not a dim" -- \
  "$tapestry" import "$m/mlp_dynamic/model.onnx" -o "$tmp/d.tap" --shape x=8,-3

# Bad models: one located error each (one line on stderr), exit 2, nothing written.
b=$m/bad
expect() {
  local name=$1 want_rc=$2 pattern=$3
  shift 4
  timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [[ $rc -eq $want_rc ]] && grep -qE -- "$pattern" "$tmp/err" && [[ $(wc -l <"$tmp/err") -eq 1 ]]
  check "$name (rc=$rc, want $want_rc, one line matching /$pattern/)" $?
}
expect "truncated file" 2 "truncated.onnx: not a readable ONNX model" -- "$tapestry" import "$b/truncated.onnx" -o "$tmp/x.tap"
expect "not protobuf" 2 "not_onnx.onnx: not a readable ONNX model" -- "$tapestry" import "$b/not_onnx.onnx" -o "$tmp/x.tap"
expect "cycle" 2 "cycle.onnx: the graph has a cycle: .*'first' \(Add\), 'second' \(Relu\)" -- "$tapestry" import "$b/cycle.onnx" -o "$tmp/x.tap"
expect "unknown opset" 2 "opset99.onnx: opset 99 is not supported \(opsets 1 to 17 are; those below 11 are converted to opset 13 on import\)" -- "$tapestry" import "$b/opset99.onnx" -o "$tmp/x.tap"
expect "unsupported attribute value" 2 "node 'pool' \(MaxPool, node 0\): storage_order=1 is not supported \(only 0\)" -- "$tapestry" import "$b/pool_storage_order.onnx" -o "$tmp/x.tap"
expect "unknown attribute" 2 "node 'r' \(Relu, node 0\): attribute 'alpha' is not supported" -- "$tapestry" import "$b/unknown_attr.onnx" -o "$tmp/x.tap"
expect "Conv group" 2 "node 'grouped' \(Conv, node 0\): grouped_conv2d: x has 3 channels but 2 groups of the filters' 6 in channels make 2·6" -- "$tapestry" import "$b/conv_group.onnx" -o "$tmp/x.tap"
expect "shape overflow" 2 "node 'huge' \(Reshape, node 0\): shape arithmetic overflows: 4611686018427387904 × 101" -- "$tapestry" import "$b/reshape_overflow.onnx" -o "$tmp/x.tap"
expect "unsupported op" 2 "node 'cosine' \(Cos, node 0\): operator Cos is not supported" -- "$tapestry" import "$b/unsupported_op.onnx" -o "$tmp/x.tap"
expect "undefined input" 2 "node 'adder' \(Add, node 0\): input 'ghost' is not defined" -- "$tapestry" import "$b/undefined_input.onnx" -o "$tmp/x.tap"
# Shape's result as the graph's output: an int64 weight (the shape folded at import), written by
# the run as it is.
"$tapestry" import "$b/shape_output.onnx" -o "$tmp/shape.tap" --weights "$tmp/shape_in" >"$tmp/out" 2>"$tmp/err" &&
  "$python" -c "import numpy as np; np.save('$tmp/shape_in/x.npy', np.zeros((2, 3, 8, 8), np.float32))" &&
  "$tapestry" run "$tmp/shape.tap" --inputs "$tmp/shape_in" --outputs "$tmp/shape_out" --quiet >"$tmp/out" 2>"$tmp/err" &&
  "$python" -c "
import numpy as np
d = np.load('$tmp/shape_out/dims.npy'); assert d.dtype == np.int64 and d.tolist() == [2, 3, 8, 8], d"
check "an integer output computed at import: an int64 weight, the run writes it" $?
expect "a computed mask choosing integer constants" 2 "node 'select' \(Where, node 1\): Where choosing between integer constants by a computed condition is not supported" -- "$tapestry" import "$b/computed_mask.onnx" -o "$tmp/x.tap"
expect "Gather of float indices" 2 "node 'lookup' \(Gather, node 0\): the indices are float32, not int32 or int64" -- "$tapestry" import "$b/computed_indices.onnx" -o "$tmp/x.tap"
expect "a constant too large to fold" 2 "node 'huge' \(ConstantOfShape, node 0\): a constant of shape \[1000000000000, 1\] is computed at import time, which holds at most 16777216 cells" -- "$tapestry" import "$b/huge_constant.onnx" -o "$tmp/x.tap"
expect "missing file" 2 "cannot open the file" -- "$tapestry" import "$tmp/nope.onnx" -o "$tmp/x.tap"
expect "bad graph extension" 2 "must end in .tap or .json" -- "$tapestry" import "$m/mlp/model.onnx" -o "$tmp/x.txt"
expect "--check with -o" 2 "--check writes nothing: drop -o and --weights" -- "$tapestry" import "$m/mlp/model.onnx" --check -o "$tmp/x.tap"
[[ ! -e $tmp/x.tap ]]
check "no graph written by a failed import" $?

finish
