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
    Row{"Log", convert_unary, "log", ""},
    Row{"Floor", convert_unary, "floor", ""},
    Row{"Ceil", convert_unary, "ceil", ""},
    Row{"Round", convert_unary, "round", "halves to even"},
    Row{"Abs", convert_abs, "maximum, neg", "maximum(x, −x)"},
    Row{"Reciprocal", convert_reciprocal, "div", "1 / x"},
    Row{"Softsign", convert_softsign, "maximum, neg, add, div", "x / (1 + |x|)"},
    Row{"Max", convert_variadic, "maximum", "any number of inputs; numpy broadcasting"},
    Row{"Min", convert_variadic, "maximum, neg", "−max(−a, −b, …)"},
    Row{"Sum", convert_variadic, "add", "any number of inputs"},
    Row{"Mean", convert_variadic, "add, div", "the sum divided by the count"},
    Row{"Clip", convert_clip, "maximum, neg", "min(max(x, lo), hi); bounds optional, any tensor"},
    Row{"LeakyRelu", convert_leaky_relu, "maximum, mul", "max(x, αx) for 0 ≤ α ≤ 1; else relu/neg"},
    Row{"PRelu", convert_prelu, "relu, neg, mul, add",
        "relu(x) + min(x, 0)·slope; slope broadcasting (per channel before opset 7)"},
    Row{"HardSigmoid", convert_hard_sigmoid, "mul, add, relu, maximum, neg",
        "min(max(αx + β, 0), 1)"},
    Row{"HardSwish", convert_hard_sigmoid, "as HardSigmoid, mul", "x·HardSigmoid(x; 1/6, 1/2)"},
    Row{"Elu", convert_elu, "relu, neg, exp, sub, mul, add", "relu(x) + (exp(min(x, 0)) − 1)·α"},
    Row{"Selu", convert_elu, "as Elu, mul", "γ·Elu(x; α)"},
    Row{"Celu", convert_celu, "div, exp, sub, mul, relu, neg, add",
        "relu(x) + min(α(exp(x/α) − 1), 0)"},
    Row{"Softplus", convert_softplus, "relu, maximum, neg, exp, add, log",
        "relu(x) + log(1 + exp(−|x|)): no overflow"},
    Row{"Dropout", convert_dropout, "—", "inference: the identity; the mask output unused"},
    Row{"BatchNormalization", convert_batch_norm, "sub, add, sqrt, div, mul, add (+ reshape)",
        "inference; the statistics per channel (dim 1)"},
    Row{"Pow", convert_pow, "pow (mul, sqrt)",
        "any exponent, numpy broadcasting; a constant exponent 2, 1 or 0.5 is mul(x, x), x or "
        "sqrt(x); an integer exponent of a float base if constant"},
    Row{"Gelu", convert_gelu, "gelu", "approximate='none'"},
    Row{"Erf", convert_erf, "gelu",
        "only in PyTorch's exact-GELU pattern x·0.5·(1 + erf(x/√2)), which becomes one gelu"},
    Row{"MatMul", convert_matmul, "matmul (+ reshape)", "batched, broadcasting; 1-D operands"},
    Row{"Gemm", convert_gemm, "linear, or transpose/matmul/mul/add",
        "every alpha, beta, transA, transB; C broadcasting"},
    Row{"Conv", convert_conv, "conv2d, grouped_conv2d, conv3d, dilated_conv*",
        "1-D, 2-D, 3-D; any group (1-D, 2-D; depthwise too), dilations (group 1), pads and "
        "auto_pad (pad, pad2d, pad3d); equal strides; optional bias (add)"},
    Row{"ConvTranspose", convert_conv_transpose, "conv2d_grad_input (+ slice, add)",
        "1-D, 2-D; group 1, no dilation, equal strides, pads, output_padding, output_shape, "
        "auto_pad; optional bias"},
    Row{"Pad", convert_pad, "pad, pad2d (or nothing); slice, unslice, add",
        "constant mode: any non-negative pads on the last two dims; reflect and edge: any "
        "non-negative pads on any dims (copies of cells)"},
    Row{"MaxPool", convert_pool, "max_pool2d(_rect), max_pool3d (+ pad*)",
        "1-D, 2-D, 3-D; any window, strides, pads, auto_pad, ceil_mode; no dilations; the "
        "Indices output unused"},
    Row{"AveragePool", convert_pool, "avg_pool2d(_rect), avg_pool3d (+ pad*, div)",
        "as MaxPool; count_include_pad 0 or 1 (3-D: 1, or no pads)"},
    Row{"GlobalAveragePool", convert_global_average_pool, "mean, mean", "NCHW"},
    Row{"GlobalMaxPool", convert_global_max_pool, "max (+ reshape)", "any rank ≥ 3"},
    Row{"DepthToSpace", convert_depth_space, "reshape, permute, reshape", "modes DCR and CRD"},
    Row{"SpaceToDepth", convert_depth_space, "reshape, permute, reshape", ""},
    Row{"Resize", convert_resize,
        "mul (by ones), reshape; slice (+ unslice, add); matmul (+ permute)",
        "scales or sizes known at import; nearest: any coordinate transformation but "
        "tf_crop_and_resize, integer up- and downscales, other sizes ≤ 64 output cells per dim; "
        "linear and cubic (a, exclude_outside): any axes, all but tf_crop_and_resize"},
    Row{"Softmax", convert_softmax, "softmax (+ permute)",
        "any axis from opset 13; the last axis before"},
    Row{"LayerNormalization", convert_layer_norm,
        "mean, variance, sub, add, sqrt, div, mul, add (+ reshape, div)",
        "any axis (the dims from it on are normalised together); the Mean and InvStdDev outputs"},
    Row{"InstanceNormalization", convert_instance_norm,
        "mean, variance, sub, add, sqrt, div, mul, add (+ reshape)",
        "each (n, c) plane over its spatial dims; scale and B per channel"},
    Row{"ReduceSum", convert_reduce, "sum (+ reshape)", "axes as attribute or input; keepdims"},
    Row{"ReduceMax", convert_reduce, "max (+ reshape)", "as ReduceSum"},
    Row{"ReduceMean", convert_reduce, "mean (+ reshape)", "as ReduceSum"},
    Row{"ReduceMin", convert_reduce_more, "permute, reduce (+ reshape)",
        "as ReduceSum; the axis moved to the front, reduce(op=min)"},
    Row{"ReduceProd", convert_reduce_more, "permute, reduce (+ reshape)", "as ReduceMin, op=prod"},
    Row{"ReduceL1", convert_reduce_more, "maximum, neg, sum (+ reshape)", "Σ|x|; as ReduceSum"},
    Row{"ReduceL2", convert_reduce_more, "mul, sum, sqrt (+ reshape)", "√Σx²; as ReduceSum"},
    Row{"ReduceSumSquare", convert_reduce_more, "mul, sum (+ reshape)", "Σx²; as ReduceSum"},
    Row{"ReduceLogSum", convert_reduce_more, "sum, log (+ reshape)", "log Σx; as ReduceSum"},
    Row{"ReduceLogSumExp", convert_reduce_more, "max, sub, exp, sum, log, add (+ reshape)",
        "log Σ exp(x − m) + m, m the maximum; as ReduceSum"},
    Row{"ArgMax", convert_arg_extreme, "argmax",
        "int64 result; axis, keepdims, select_last_index; NaN wins (numpy); any float or integer "
        "input"},
    Row{"ArgMin", convert_arg_extreme, "argmin", "as ArgMax"},
    Row{"LogSoftmax", convert_log_softmax, "max, sub, exp, sum, log, sub (+ reshape)",
        "x − m − log Σ exp(x − m); any axis from opset 13, the last before"},
    Row{"Reshape", convert_reshape, "reshape", "constant shape; 0 and -1; allowzero"},
    Row{"Flatten", convert_flatten, "reshape", "any axis"},
    Row{"Transpose", convert_transpose, "permute", "any perm"},
    Row{"Squeeze", convert_squeeze, "reshape", "axes as attribute or input"},
    Row{"Unsqueeze", convert_unsqueeze, "reshape", "axes as attribute or input"},
    Row{"Slice", convert_slice, "slice (+ unslice, add)",
        "constant starts/ends/axes/steps; a step ≠ 1 (negative too) picks ≤ 64 cells, a slice "
        "each"},
    Row{"Split", convert_split, "slice", "sizes as input or attribute, or equal parts; any axis"},
    Row{"Identity", convert_identity, "—", "an alias"},
    Row{"Constant", convert_constant, "—", "a weight when a computation reads it"},
    Row{"Shape", convert_shape, "—", "folded at import time (static shapes)"},
    Row{"Size", convert_size, "—", "as Shape"},
    Row{"Gather", convert_gather, "gather; or slice (+ concat, reshape)",
        "any axis; indices computed or fed at run time (i32, i64; an embedding lookup): the "
        "gather kernel, an index out of range an error at run time; indices known at import: a "
        "slice per run of consecutive indices; folded on constants"},
    Row{"Concat", convert_concat, "unslice, add", "any axis; folded on constants"},
    Row{"Expand", convert_expand, "mul (by ones)", "numpy broadcasting; folded on constants"},
    Row{"Tile", convert_tile, "unslice, add", "constant repeats; folded on constants"},
    Row{"ConstantOfShape", convert_constant_of_shape, "—", "folded at import time"},
    Row{"Range", convert_range, "—", "folded at import time"},
    Row{"Equal", convert_compare, "equal",
        "a 0/1 mask in the operands' dtype; numpy broadcasting; folded when both are known"},
    Row{"Less", convert_compare, "less", "as Equal"},
    Row{"LessOrEqual", convert_compare, "less_equal", "as Equal"},
    Row{"Greater", convert_compare, "greater", "as Equal"},
    Row{"GreaterOrEqual", convert_compare, "greater_equal", "as Equal"},
    Row{"And", convert_compare, "logical_and", "masks (true where ≠ 0); as Equal"},
    Row{"Or", convert_compare, "logical_or", "as And"},
    Row{"Xor", convert_compare, "logical_xor", "as And"},
    Row{"Not", convert_not, "logical_not", "as And"},
    Row{"Where", convert_where, "where",
        "a select (exact with ±inf, NaN); computed or constant condition of any dtype; "
        "numpy broadcasting; folded on constants"},
    Row{"Trilu", convert_trilu, "mul", "the 0/1 mask of the kept cells; folded on constants"},
    Row{"Cast", convert_cast, "cast",
        "between float dtypes (f32 f64 bf16 f16); folded on constants; nothing to the same dtype; "
        "to bool: a mask (a mask itself, else logical_not twice)"},
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
