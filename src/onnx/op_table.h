// Private to the ONNX importer: the converters, one per supported ONNX operator, and the table
// that maps op types to them (op_table.cpp; its rows are what `--list-ops` prints).
//
// A converter reads its node through a NodeContext (context.h), adds operations with the
// builder and binds the node's outputs with set_output. It reads every attribute it supports
// (even at its default): an attribute left unread is reported as unsupported by the driver.
#pragma once

#include <string_view>

#include "context.h"

namespace tapestry::onnx {

using Converter = void (*)(NodeContext&);

/// The converter of `op_type`, or null when the op is not supported.
Converter find_converter(std::string_view op_type);

// ops_math.cpp: elementwise maps, MatMul, Gemm.
void convert_binary(NodeContext& node);
void convert_unary(NodeContext& node);
void convert_pow(NodeContext& node);
void convert_matmul(NodeContext& node);
void convert_gemm(NodeContext& node);
void convert_gelu(NodeContext& node);
void convert_erf(NodeContext& node);

// ops_nn.cpp: Conv, pooling, Softmax, LayerNormalization.
void convert_conv(NodeContext& node);
void convert_conv_transpose(NodeContext& node);
void convert_pad(NodeContext& node);
void convert_pool(NodeContext& node);
void convert_global_average_pool(NodeContext& node);
void convert_softmax(NodeContext& node);
void convert_layer_norm(NodeContext& node);
void convert_instance_norm(NodeContext& node);
void convert_global_max_pool(NodeContext& node);
void convert_depth_space(NodeContext& node);
void convert_resize(NodeContext& node);
void convert_reduce(NodeContext& node);
void convert_arg_extreme(NodeContext& node);

// ops_shape.cpp: layout and the import-time shape arithmetic.
void convert_identity(NodeContext& node);
void convert_constant(NodeContext& node);
void convert_reshape(NodeContext& node);
void convert_flatten(NodeContext& node);
void convert_transpose(NodeContext& node);
void convert_squeeze(NodeContext& node);
void convert_unsqueeze(NodeContext& node);
void convert_slice(NodeContext& node);
void convert_split(NodeContext& node);
void convert_shape(NodeContext& node);
void convert_size(NodeContext& node);

// ops_cast.cpp: Cast, CastLike (the cast kernel; folded on host tensors).
void convert_cast(NodeContext& node);
void convert_cast_like(NodeContext& node);

// ops_index.cpp: indexing, masks and the shape code around them (folded or rewritten).
void convert_concat(NodeContext& node);
void convert_constant_of_shape(NodeContext& node);
void convert_compare(NodeContext& node);
void convert_expand(NodeContext& node);
void convert_gather(NodeContext& node);
void convert_not(NodeContext& node);
void convert_range(NodeContext& node);
void convert_tile(NodeContext& node);
void convert_trilu(NodeContext& node);
void convert_where(NodeContext& node);

/// `parts` concatenated along `axis` (their other dims equal): unslices added up.
Tensor concat_tensors(NodeContext& node, const std::vector<Tensor>& parts, std::size_t axis);
/// The cells `at` (in range, at least one) of `x` along `axis`, in that order: one slice per
/// run of consecutive cells, concatenated (Gather, Slice with steps).
Tensor take(NodeContext& node, const Tensor& x, std::size_t axis,
            const std::vector<std::int64_t>& at);

// ops_reduce.cpp: the other reductions, LogSoftmax, Softplus (rewrites).
void convert_reduce_more(NodeContext& node);
void convert_log_softmax(NodeContext& node);
void convert_softplus(NodeContext& node);

// ops_activation.cpp: activations, variadic ops, Dropout, BatchNormalization (rewrites).
void convert_abs(NodeContext& node);
void convert_variadic(NodeContext& node);
void convert_clip(NodeContext& node);
void convert_leaky_relu(NodeContext& node);
void convert_prelu(NodeContext& node);
void convert_hard_sigmoid(NodeContext& node);
void convert_elu(NodeContext& node);
void convert_celu(NodeContext& node);
void convert_reciprocal(NodeContext& node);
void convert_softsign(NodeContext& node);
void convert_dropout(NodeContext& node);
void convert_batch_norm(NodeContext& node);

/// A scalar of `like`'s dtype holding `value`, as a graph input (a weight) named
/// `<node>.<what>`: an epsilon, alpha, beta, a count.
Tensor scalar_input(NodeContext& node, const Tensor& like, std::string_view what, double value);

/// Reshapes `x` to `shape` with the reshape kernel; when the two shapes do not group into
/// splits and merges, through the flat shape. Returns x itself when the shapes are equal.
Tensor reshape_to(metakernel::Graph& g, Tensor x, const std::vector<std::int64_t>& shape);

/// Normalises an axis of a rank-`rank` tensor (negative counts from the end); Error when out of
/// range.
std::int64_t normalise_axis(NodeContext& node, std::int64_t axis, std::size_t rank);

}  // namespace tapestry::onnx
