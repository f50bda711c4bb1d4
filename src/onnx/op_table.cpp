// The supported ONNX operators: converter, kernels and limits, one row each (op_table.h).
#include "op_table.h"

#include <array>

namespace tapestry::onnx {

namespace {

struct Row {
  std::string_view op_type;
  Converter convert;
  std::string_view kernels;
  std::string_view notes;
};

const std::array kRows = {
    Row{"Add", convert_binary, "add", "numpy broadcasting; folded when both are constants"},
    Row{"Sub", convert_binary, "sub", "as Add"},
    Row{"Mul", convert_binary, "mul", "as Add"},
    Row{"Div", convert_binary, "div", "as Add"},
    Row{"Relu", convert_unary, "relu", ""},
    Row{"Tanh", convert_unary, "tanh", ""},
    Row{"Sigmoid", convert_unary, "sigmoid", ""},
    Row{"Exp", convert_unary, "exp", ""},
    Row{"Neg", convert_unary, "neg", ""},
    Row{"Sqrt", convert_unary, "sqrt", ""},
    Row{"Abs", convert_abs, "maximum, neg", "maximum(x, −x)"},
    Row{"Reciprocal", convert_reciprocal, "div", "1 / x"},
    Row{"Max", convert_variadic, "maximum", "any number of inputs; numpy broadcasting"},
    Row{"Min", convert_variadic, "maximum, neg", "−max(−a, −b, …)"},
    Row{"Sum", convert_variadic, "add", "any number of inputs"},
    Row{"Mean", convert_variadic, "add, div", "the sum divided by the count"},
    Row{"Clip", convert_clip, "maximum, neg", "min(max(x, lo), hi); bounds optional, any tensor"},
    Row{"LeakyRelu", convert_leaky_relu, "maximum, mul", "max(x, αx) for 0 ≤ α ≤ 1; else relu/neg"},
    Row{"PRelu", convert_prelu, "relu, neg, mul, add",
        "relu(x) + min(x, 0)·slope; slope broadcasting"},
    Row{"HardSigmoid", convert_hard_sigmoid, "mul, add, relu, maximum, neg",
        "min(max(αx + β, 0), 1)"},
    Row{"HardSwish", convert_hard_sigmoid, "as HardSigmoid, mul", "x·HardSigmoid(x; 1/6, 1/2)"},
    Row{"Elu", convert_elu, "relu, neg, exp, sub, mul, add", "relu(x) + (exp(min(x, 0)) − 1)·α"},
    Row{"Selu", convert_elu, "as Elu, mul", "γ·Elu(x; α)"},
    Row{"Celu", convert_celu, "div, exp, sub, mul, relu, neg, add",
        "relu(x) + min(α(exp(x/α) − 1), 0)"},
    Row{"Dropout", convert_dropout, "—", "inference: the identity; the mask output unused"},
    Row{"BatchNormalization", convert_batch_norm, "sub, add, sqrt, div, mul, add (+ reshape)",
        "inference; the statistics per channel (dim 1)"},
    Row{"Pow", convert_pow, "mul / sqrt", "constant exponent 2, 1 or 0.5"},
    Row{"Gelu", convert_gelu, "gelu", "approximate='none'"},
    Row{"Erf", convert_erf, "gelu",
        "only in PyTorch's exact-GELU pattern x·0.5·(1 + erf(x/√2)), which becomes one gelu"},
    Row{"MatMul", convert_matmul, "matmul (+ reshape)", "batched, broadcasting; 1-D operands"},
    Row{"Gemm", convert_gemm, "linear, or transpose/matmul/mul/add",
        "every alpha, beta, transA, transB; C broadcasting"},
    Row{"Conv", convert_conv, "conv2d (+ pad, add)",
        "2-D NCHW, group 1, no dilation, equal strides, equal symmetric pads, optional bias"},
    Row{"Pad", convert_pad, "pad (or nothing)",
        "constant mode; zero pads, or one amount on every side of the last two dims"},
    Row{"MaxPool", convert_pool, "max_pool2d (+ pad)",
        "square kernel, equal strides, equal symmetric pads, ceil_mode 0; the Indices output "
        "unused"},
    Row{"AveragePool", convert_pool, "avg_pool2d (+ pad)",
        "as MaxPool; pads with count_include_pad=1"},
    Row{"GlobalAveragePool", convert_global_average_pool, "mean, mean", "NCHW"},
    Row{"Softmax", convert_softmax, "softmax (+ permute)",
        "any axis from opset 13; the last axis before"},
    Row{"LayerNormalization", convert_layer_norm, "mean, variance, sub, add, sqrt, div, mul, add",
        "any axis (the dims from it on are normalised together); output 0 only"},
    Row{"ReduceSum", convert_reduce, "sum (+ reshape)", "axes as attribute or input; keepdims"},
    Row{"ReduceMax", convert_reduce, "max (+ reshape)", "as ReduceSum"},
    Row{"ReduceMean", convert_reduce, "mean (+ reshape)", "as ReduceSum"},
    Row{"Reshape", convert_reshape, "reshape", "constant shape; 0 and -1; allowzero"},
    Row{"Flatten", convert_flatten, "reshape", "any axis"},
    Row{"Transpose", convert_transpose, "permute", "any perm"},
    Row{"Squeeze", convert_squeeze, "reshape", "axes as attribute or input"},
    Row{"Unsqueeze", convert_unsqueeze, "reshape", "axes as attribute or input"},
    Row{"Slice", convert_slice, "slice", "constant starts/ends/axes, step 1"},
    Row{"Split", convert_split, "slice", "sizes as input or attribute, or equal parts; any axis"},
    Row{"Identity", convert_identity, "—", "an alias"},
    Row{"Constant", convert_constant, "—", "a weight when a computation reads it"},
    Row{"Shape", convert_shape, "—", "folded at import time (static shapes)"},
    Row{"Gather", convert_gather, "—", "folded: 1-D integer constants only"},
    Row{"Concat", convert_concat, "—", "folded: 1-D integer constants only"},
    Row{"Cast", convert_cast, "cast",
        "between float dtypes (f32 f64 bf16 f16); folded on constants; nothing to the same dtype"},
    Row{"CastLike", convert_cast_like, "cast", "as Cast, to input 1's dtype"},
};

}  // namespace

Converter find_converter(std::string_view op_type) {
  for (const Row& r : kRows) {
    if (r.op_type == op_type) return r.convert;
  }
  return nullptr;
}

const std::vector<OpSupport>& supported_onnx_ops() {
  static const std::vector<OpSupport> ops = [] {
    std::vector<OpSupport> out;
    for (const Row& r : kRows)
      out.push_back({std::string(r.op_type), std::string(r.kernels), std::string(r.notes)});
    return out;
  }();
  return ops;
}

}  // namespace tapestry::onnx
