// Human-readable descriptions of kernels, for `tapestry kernels [NAME]`.
//
//   $ tapestry kernels
//   add        add(a, b)                      a + b, elementwise with numpy broadcasting
//   linear     linear(x, w, bias)             Fully connected layer: result = x·wᵀ + bias …
//   …
//   $ tapestry kernels linear
//   linear(x, w, bias)    Fully connected layer: …
//     inputs   x     [$batch..., $in]   T    activations, …
//     …
//     index    [$batch..., $out, $in]   reductions: in (sum)
//     ipfs     x       [$batch..., $in]
//   $ tapestry kernels linear --with 'f32[-40:60, 20:32]' 'f32[32, 12]' 'f32[32]'
//     (adds the evaluated signature: index sizes and IPF matrices)
#pragma once

#include <string>

#include "tapestry/metakernel/metakernel.h"
#include "tapestry/metakernel/signature_registry.h"

namespace tapestry::metakernel {

/// One line per kernel: name, call form, summary.
std::string describe_kernels(const SignatureRegistry& registry);

/// The full declaration of one kernel: inputs, params, types, lets, checks, outputs, index,
/// reductions, IPFs in the template shorthand, sugar, hook, and the file it came from.
std::string describe_kernel(const Metakernel& kernel);

}  // namespace tapestry::metakernel
