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
/// x converted to float dtype `to` (kernels/cast.yaml): `cast(x, DType::kBFloat16)`.
Tensor cast(Tensor x, DType to);

// Convolution.
struct Conv2dOptions {
  std::int64_t stride = 1;
  std::int64_t padding = 0;
};
Tensor pad(Tensor x, std::int64_t padding, double value = 0.0);
Tensor conv2d(Tensor x, Tensor w, Conv2dOptions options = {});

// Training (kernels/training.yaml): gradients (`d_result` is the cotangent of the forward
// result; each returns the cotangent of one forward input), losses, optimizer updates.
Tensor softmax_grad(Tensor y, Tensor d_result);
/// conv2d(x, w, stride)'s gradient with respect to x (x gives the shape and range only).
Tensor conv2d_grad_input(Tensor x, Tensor w, Tensor d_result, std::int64_t stride = 1);
/// conv2d(x, w, stride)'s gradient with respect to its kh × kw filters.
Tensor conv2d_grad_weight(Tensor x, Tensor d_result, std::int64_t kh, std::int64_t kw,
                          std::int64_t stride = 1);
/// y = max(x, dim)'s gradient with respect to x: d_result at the first maximal cell.
Tensor max_grad(Tensor x, Tensor y, Tensor d_result, std::int64_t dim);
Tensor max_pool2d_grad(Tensor x, Tensor d_result, std::int64_t kernel, std::int64_t stride);
Tensor avg_pool2d_grad(Tensor x, Tensor d_result, std::int64_t kernel, std::int64_t stride);
/// Rank-0 means over [n, f] / [n, c] tensors; labels are i32 or i64 classes.
Tensor mse(Tensor pred, Tensor target);
Tensor mse_grad(Tensor pred, Tensor target, Tensor d_result);
Tensor cross_entropy(Tensor logits, Tensor labels);
Tensor cross_entropy_grad(Tensor logits, Tensor labels, Tensor d_result);

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0;  // sgd_momentum only
  double weight_decay = 0;
};
/// The updated parameter (kernel `sgd`).
Tensor sgd(Tensor param, Tensor grad, SgdOptions options);
struct SgdMomentumResult {
  Tensor param, velocity;
};
/// The updated parameter and momentum buffer (kernel `sgd_momentum`).
SgdMomentumResult sgd_momentum(Tensor param, Tensor grad, Tensor velocity, SgdOptions options);

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;  // AdamW
};
struct AdamResult {
  Tensor param, m, v;
};
/// One Adam (AdamW) step; `step` is a rank-0 i32/i64 tensor holding this update's number (1 …).
AdamResult adam(Tensor param, Tensor grad, Tensor m, Tensor v, Tensor step, AdamOptions options);

}  // namespace tapestry::metakernel
