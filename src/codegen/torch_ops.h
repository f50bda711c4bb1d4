// One kernel call as PyTorch expressions (codegen/torch.h): the torch ops that compute an
// application's output boxes from the slices of its input boxes.
//
// Every kernel here is a function of the boxes its IPFs give, so the same torch op serves a
// whole operation and any shard of it: linear(x, w, bias) on a shard is F.linear of the shard's
// rows of x, its rows of w and its cells of bias. The expressions name the inputs by the Python
// expressions the caller gives (slices of a rank's buffers, or a fused stage's temporaries):
//
//   TorchCall call{.kernel = "linear", …};
//   call.inputs["x"] = {{"X[0:50, :]", box, …}};  call.inputs["w"] = …;  call.inputs["bias"] = …;
//   torch_expressions(call) == {"F.linear(X[0:50, :], W, b)"}
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/dtype.h"
#include "tapestry/ir/nodes.h"
#include "tapestry/metakernel/metakernel.h"
#include "tapestry/zspace/range.h"

namespace tapestry::codegen::detail {

struct TorchArg {
  std::string expr;   // a Python expression holding exactly `box`
  zspace::Range box;  // in the tensor's coordinates
  ir::DType dtype = ir::DType::kFloat32;
  zspace::Range whole;  // the tensor's whole range
};

struct TorchCall {
  std::string_view kernel;
  /// A kernel file's kernel with a `body:` (kernel_body.h), or null: a kernel torch_expressions
  /// has no mapping for is written from its body when every port is elementwise with the output.
  const metakernel::Metakernel* body_kernel = nullptr;
  /// The application's index box, its dims' names and reductions (for a body kernel).
  zspace::Range index;
  std::vector<std::string> index_names;
  std::vector<ir::Reduction> reductions;
  const nlohmann::json* params = nullptr;  // null or an object
  std::map<std::string, std::vector<TorchArg>, std::less<>> inputs;
  std::vector<std::string> output_names;  // in the call's order
  std::vector<zspace::Range> output_boxes;
  std::vector<ir::DType> output_dtypes;
};

/// One expression per output, in output_names' order; Error "no torch mapping for kernel 'k'"
/// (or naming the param it cannot map) otherwise. A body kernel's expression follows its body,
/// in the output's dtype (numbers and params as 0-d tensors of it; `/` truncates for integers),
/// folded over its reduction dims with their monoid (torch.sum, amax, amin, prod):
///   body "max(x, 0) + slope * min(x, 0)", x = "X[0:4, :]", slope 0.1 →
///   "(torch.maximum(X[0:4, :], torch.tensor(0.0, dtype=torch.float32)) + …)"
std::vector<std::string> torch_expressions(const TorchCall& call);

/// The torch dtype of `dtype` ("torch.float32"); Error for one torch lacks.
std::string torch_dtype(ir::DType dtype);

/// The kernels torch_expressions maps, sorted.
std::vector<std::string> mapped_kernels();

}  // namespace tapestry::codegen::detail
