// Private to autodiff: applying one VJP expression of a kernel file (metakernel.h, VjpSpec) with
// the builder, the names bound to the operation's tensors and params.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/metakernel.h"

namespace tapestry::metakernel::detail {

/// What a VJP expression's names mean for one operation.
struct VjpScope {
  const Metakernel& kernel;
  std::string operation;                  // display name, for messages
  std::map<std::string, Tensor> tensors;  // inputs, outputs, d_<output>
  nlohmann::json params;                  // the operation's (resolved) params
};

/// Applies `expr` in `scope`, adding its calls to `graph`; returns the gradient. A `sum_to` to
/// the shape its argument already has adds nothing (the argument is the result).
Tensor apply_vjp(Graph& graph, const tap::TensorExpr& expr, const VjpScope& scope);

}  // namespace tapestry::metakernel::detail
