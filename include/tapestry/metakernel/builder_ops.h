// The built-in kernels as C++ functions over builder Tensors (builder.h). Each is a thin,
// typed wrapper over Graph::call with the kernel's name and parameters, so the checks and the
// error messages are the metakernel's own:
//
//   Tensor h = relu(linear(x, w, b));
//   Tensor y = conv2d(x, k, {.stride = 2, .padding = 1});   // pad + conv2d
//   Tensor s = softmax(matmul(q, transpose(k)));
//
// Parameters and input names are documented in kernels/*.yaml (`tapestry kernels NAME`).
#pragma once

#include <cstdint>
#include <vector>

#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/metakernel.h"

namespace tapestry::metakernel {

// Linear algebra.
Tensor linear(Tensor x, Tensor w, Tensor bias);
Tensor matmul(Tensor a, Tensor b);
Tensor bias_add(Tensor x, Tensor bias);

// Elementwise unary.
Tensor relu(Tensor x);
Tensor gelu(Tensor x);
Tensor exp(Tensor x);
Tensor neg(Tensor x);
Tensor tanh(Tensor x);
Tensor sigmoid(Tensor x);

// Elementwise binary, numpy broadcasting.
Tensor add(Tensor a, Tensor b);
Tensor sub(Tensor a, Tensor b);
Tensor mul(Tensor a, Tensor b);
Tensor div(Tensor a, Tensor b);
/// Elementwise maximum (kernel `maximum`).
Tensor max(Tensor a, Tensor b);

// Reductions over one dim (negative counts from the end).
Tensor sum(Tensor x, std::int64_t dim = -1);
Tensor max(Tensor x, std::int64_t dim);
/// Combines partial results along the leading block dim with `op`.
Tensor reduce(Tensor x, Monoid op = Monoid::kSum);
Tensor softmax(Tensor x);

// Layout.
/// Swaps the last two dims.
Tensor transpose(Tensor x);
Tensor permute(Tensor x, const std::vector<std::int64_t>& perm);
/// Splits or merges adjacent dims; one entry of `shape` may be -1.
Tensor reshape(Tensor x, const std::vector<std::int64_t>& shape);

// Convolution.
struct Conv2dOptions {
  std::int64_t stride = 1;
  std::int64_t padding = 0;
};
Tensor pad(Tensor x, std::int64_t padding, double value = 0.0);
Tensor conv2d(Tensor x, Tensor w, Conv2dOptions options = {});

}  // namespace tapestry::metakernel
