// ONNX Cast and CastLike (op_table.h).
//
// A Tapestry mask (kernels/masks.yaml) is 0/1 in a float dtype, so a cast of a mask to a float
// dtype is the float cast (or nothing), and a cast of computed data to bool is a mask.
//
// Integer ↔ float casts happen only at import time, on host tensors (shape arithmetic). A cast
// of graph data between float dtypes is the `cast` kernel (kernels/cast.yaml); to its own dtype,
// nothing. Under `import --dtype bf16|f16` a cast to float32 means the import's dtype, as every
// float32 of the model does (ImportContext::graph_dtype): PyTorch exports of mixed-precision
// models cast to float and back around their f32 islands, which then fold away.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "op_table.h"
#include "tapestry/metakernel/builder_ops.h"
#include "tapestry/runtime/element.h"

namespace tapestry::onnx {

namespace {

// The dtype of an ONNX element type, or nullopt for one Tapestry has no dtype for.
std::optional<ir::DType> dtype_of(std::int64_t element_type) {
  switch (element_type) {
    case ::onnx::TensorProto::FLOAT:
      return ir::DType::kFloat32;
    case ::onnx::TensorProto::DOUBLE:
      return ir::DType::kFloat64;
    case ::onnx::TensorProto::BFLOAT16:
      return ir::DType::kBFloat16;
    case ::onnx::TensorProto::FLOAT16:
      return ir::DType::kFloat16;
    case ::onnx::TensorProto::INT64:
      return ir::DType::kInt64;
    case ::onnx::TensorProto::INT32:
      return ir::DType::kInt32;
    default:
      return std::nullopt;
  }
}

// A float value rounded to `dtype` (nearest even), kept as a double.
double rounded(double v, ir::DType dtype) {
  double out = v;
  runtime::visit_storage_dtype(dtype, [&]<typename T>() {
    if constexpr (runtime::is_float_element_v<T>)
      out = static_cast<double>(runtime::storage_cast<T>(v));
  });
  return out;
}

// Input 0 converted to `dtype` (already mapped through graph_dtype) and bound to output 0.
void cast_to(NodeContext& node, ir::DType dtype) {
  if (node.is_host(0)) {
    HostTensor h = node.host(0);
    if (h.is_int() && ir::is_float(dtype)) {
      for (std::int64_t i : h.ints) h.floats.push_back(static_cast<double>(i));
      h.ints.clear();
    } else if (!h.is_int() && !ir::is_float(dtype)) {
      for (double f : h.floats) {
        if (!(std::abs(f) < 0x1p62)) throw node.error(fmt::format("{} does not fit an integer", f));
        h.ints.push_back(static_cast<std::int64_t>(f));
      }
      h.floats.clear();
    }
    if (ir::is_float(dtype)) {
      for (double& f : h.floats) f = rounded(f, dtype);
    }
    h.dtype = dtype;
    return node.set_output(0, h);
  }
  Tensor x = node.tensor(0);
  if (x.type().dtype == dtype) return node.set_output(0, x);
  if (!ir::is_float(x.type().dtype) || !ir::is_float(dtype)) {
    throw node.error(
        fmt::format("cast of a computed {} tensor to {} is not supported (only "
                    "between float dtypes)",
                    ir::dtype_name(x.type().dtype), ir::dtype_name(dtype)));
  }
  node.set_output(0, metakernel::cast(x, dtype));
}

}  // namespace

// Cast: attribute `to`, an ONNX element type.
void convert_cast(NodeContext& node) {
  const std::int64_t to = node.int_attr("to", 0);
  // To bool, a computed tensor becomes a mask (kernels/masks.yaml): itself when it is one
  // already (PyTorch's masked_fill casts its comparison to bool), else 1 where it is not 0, in
  // its own dtype — not(not(x)).
  if (to == ::onnx::TensorProto::BOOL && !node.is_host(0)) {
    const Tensor x = node.tensor(0);
    node.import().mark_mask(node.node().output(0));
    if (node.import().is_mask(node.node().input(0))) return node.set_output(0, x);
    return node.set_output(
        0, node.graph().call("logical_not", {node.graph().call("logical_not", {x})}));
  }
  const std::optional<ir::DType> dtype = dtype_of(to);
  if (!dtype) throw node.error(fmt::format("cast to element type {} is not supported", to));
  cast_to(node, node.import().graph_dtype(*dtype));
}

// CastLike (opset 15): to the dtype of input 1, a graph tensor or a host one.
void convert_cast_like(NodeContext& node) {
  const ir::DType dtype =
      node.is_host(1) ? node.import().graph_dtype(node.host(1).dtype) : node.tensor(1).type().dtype;
  cast_to(node, dtype);
}

}  // namespace tapestry::onnx
