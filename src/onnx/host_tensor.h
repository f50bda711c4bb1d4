// Private to the ONNX importer: tensors whose values are known at import time — initializers,
// Constant nodes and the integer shape arithmetic computed from them.
//
// Integers (shapes, axes, indices) are kept exactly as int64; floats as double. A host tensor
// reaches the Tapestry graph only when a computation reads it as data, as a graph input with its
// value written beside the graph (ImportContext::as_tensor).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "tapestry/ir/dtype.h"

namespace tapestry::onnx {

struct HostTensor {
  ir::DType dtype = ir::DType::kFloat32;  // float32, float64 (floats); int64, int32, bool (ints)
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> ints;  // when is_int()
  std::vector<double> floats;      // otherwise

  [[nodiscard]] bool is_int() const { return !ir::is_float(dtype); }
  [[nodiscard]] std::int64_t size() const;
  /// Element k as an integer (floats must be whole) / as a double.
  [[nodiscard]] std::int64_t int_at(std::size_t k) const;
  [[nodiscard]] double float_at(std::size_t k) const;
  /// All elements as integers (a shape, axes …).
  [[nodiscard]] std::vector<std::int64_t> as_ints() const;

  static HostTensor of_ints(std::vector<std::int64_t> values, std::vector<std::int64_t> shape);
};

/// Decodes a TensorProto (float, double, int32, int64, bool; raw or typed data). Error naming
/// `what` for other dtypes, external data, or a size that does not match the dims.
HostTensor decode_tensor(const ::onnx::TensorProto& proto, const std::string& what);

/// numpy broadcasting of two shapes; Error when they do not broadcast.
std::vector<std::int64_t> broadcast_shapes(const std::vector<std::int64_t>& a,
                                           const std::vector<std::int64_t>& b);

/// a op b elementwise with numpy broadcasting; op is one of + - * / (integer division rounds
/// toward zero, as C does; the shape arithmetic it serves is non-negative). Error on an integer
/// division by zero or an int64 overflow.
HostTensor fold_binary(const HostTensor& a, const HostTensor& b, char op);

}  // namespace tapestry::onnx
