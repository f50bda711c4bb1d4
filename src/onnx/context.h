// Private to the ONNX importer: the state of one import and what a converter sees of one node.
//
// Every ONNX tensor name maps to a Value: a Tapestry tensor of the graph being built, or a host
// tensor known at import time (host_tensor.h). A converter (op_table.h) reads its node's inputs
// and attributes through a NodeContext, builds operations with the builder, and binds its
// outputs. Attributes are marked as they are read; one the converter never read is unsupported,
// and the driver reports it (so no attribute is ever ignored silently).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include "host_tensor.h"
#include "tapestry/metakernel/builder.h"
#include "tapestry/onnx/import.h"
#include "tapestry/support/diagnostic.h"

namespace tapestry::onnx {

using metakernel::Tensor;

/// An Error already located at an ONNX node (NodeContext::error: the model file, the node's
/// name, its operator and position); the driver passes it on as it is and locates every other
/// Error at the node being converted.
class NodeError : public support::DiagnosticError {
 public:
  using DiagnosticError::DiagnosticError;
};

/// "model.onnx: node 'pool' (MaxPool, node 0): message".
NodeError node_error(const std::string& source, const ::onnx::NodeProto& node, std::size_t position,
                     std::string message);

/// A tensor of the model: in the graph, or known at import time.
using Value = std::variant<Tensor, HostTensor>;

/// The state of one import.
class ImportContext {
 public:
  ImportContext(std::string source, std::int64_t opset);

  [[nodiscard]] metakernel::Graph& graph() { return graph_; }
  [[nodiscard]] std::int64_t opset() const { return opset_; }
  /// The opset the model declares: opset(), or the older one it was converted from (opset.h).
  /// A few operators changed meaning in ways the converter keeps as they were (PRelu's slope
  /// before opset 7 is per channel), so their converters read it.
  [[nodiscard]] std::int64_t declared_opset() const { return declared_opset_; }
  void set_declared_opset(std::int64_t opset) { declared_opset_ = opset; }
  [[nodiscard]] const std::string& source() const { return source_; }

  /// ImportOptions::dtype: the dtype the model's float32 data takes in the graph.
  void set_float32_as(ir::DType dtype) { float32_as_ = dtype; }
  /// `dtype` as the graph holds it: float32 becomes the --dtype one, others stay.
  [[nodiscard]] ir::DType graph_dtype(ir::DType dtype) const {
    return dtype == ir::DType::kFloat32 ? float32_as_ : dtype;
  }

  void bind(const std::string& onnx_name, Value value);
  [[nodiscard]] bool is_bound(const std::string& onnx_name) const;
  [[nodiscard]] const Value& value(const std::string& onnx_name) const;

  /// The value as a graph tensor: a host tensor becomes a graph input named after `onnx_name`
  /// (sanitised), its value recorded as a weight (once per name).
  Tensor as_tensor(const std::string& onnx_name);
  /// A new graph input holding `value` (a scalar eps, a reshaped bias …) named `base` (made
  /// unique), recorded as a weight. A `base` with a weight name (set_weight_names) takes it.
  Tensor constant_input(const std::string& base, const HostTensor& value);

  /// Names for initializers whose own names say nothing (PyTorch's `onnx::Conv_217`): ONNX
  /// name → the name its graph input takes instead (`conv1/Conv.weight`).
  void set_weight_names(std::map<std::string, std::string> names) {
    weight_names_ = std::move(names);
  }

  /// A legal, unused Tapestry name for `onnx_name`; records the rename (from `original`, by
  /// default `onnx_name`) when it differs.
  std::string fresh_name(const std::string& onnx_name, const std::string& what,
                         const std::string& original = {});

  /// The tensor names something reads (a node input or a graph output).
  void set_used_names(std::set<std::string, std::less<>> used) { used_ = std::move(used); }
  [[nodiscard]] bool is_used(const std::string& onnx_name) const {
    return used_.contains(onnx_name);
  }
  /// True when `t` is a graph input or a tensor bound to some name already.
  [[nodiscard]] bool is_known(const Tensor& t) const { return known_.contains(t.id()); }

  /// ONNX values that are masks in the graph (a boolean input, a comparison's or logical op's
  /// result: 0/1 tensors, kernels/masks.yaml): a Cast of one to bool is the mask itself.
  void mark_mask(const std::string& onnx_name) { masks_.insert(onnx_name); }
  [[nodiscard]] bool is_mask(const std::string& onnx_name) const {
    return masks_.contains(onnx_name);
  }

  [[nodiscard]] std::vector<Weight>& weights() { return weights_; }
  [[nodiscard]] std::vector<Rename>& renames() { return renames_; }

 private:
  std::string source_;
  std::int64_t opset_;
  std::int64_t declared_opset_ = opset_;
  ir::DType float32_as_ = ir::DType::kFloat32;
  metakernel::Graph graph_;
  std::map<std::string, Value, std::less<>> values_;
  std::map<std::string, Tensor, std::less<>> materialised_;
  std::set<std::string, std::less<>> names_;
  std::set<std::string, std::less<>> used_;
  std::map<std::string, std::string> weight_names_;
  std::set<ir::TensorId> known_;
  std::set<std::string, std::less<>> masks_;
  std::vector<Weight> weights_;
  std::vector<Rename> renames_;
};

/// One node being converted: its inputs, attributes and outputs.
class NodeContext {
 public:
  NodeContext(ImportContext& import, const ::onnx::NodeProto& node, std::size_t position);

  [[nodiscard]] ImportContext& import() { return import_; }
  [[nodiscard]] metakernel::Graph& graph() { return import_.graph(); }
  [[nodiscard]] const ::onnx::NodeProto& node() const { return node_; }
  [[nodiscard]] std::int64_t opset() const { return import_.opset(); }
  [[nodiscard]] std::int64_t declared_opset() const { return import_.declared_opset(); }

  /// Input k is present (ONNX marks an omitted optional input with an empty name).
  [[nodiscard]] bool has_input(int k) const;
  [[nodiscard]] int input_count() const { return node_.input_size(); }
  [[nodiscard]] const Value& input(int k) const;
  [[nodiscard]] bool is_host(int k) const;
  /// Input k as a graph tensor (host tensors become weights), or as a host tensor (Error when
  /// it is computed: "input 2 must be known at import time").
  Tensor tensor(int k);
  const HostTensor& host(int k) const;
  /// The shape of input k, either kind.
  [[nodiscard]] std::vector<std::int64_t> shape(int k) const;

  // Attributes (each marks itself read). `required_*` throws when absent.
  [[nodiscard]] bool has_attr(std::string_view name) const;
  std::int64_t int_attr(std::string_view name, std::int64_t fallback);
  double float_attr(std::string_view name, double fallback);
  std::string string_attr(std::string_view name, const std::string& fallback);
  std::optional<std::vector<std::int64_t>> ints_attr(std::string_view name);
  HostTensor tensor_attr(std::string_view name);
  /// Names of the attributes no converter read.
  [[nodiscard]] std::vector<std::string> unread_attributes() const;

  /// Binds output k (it must exist in the node); the driver names new graph tensors after it.
  void set_output(int k, Value value);
  /// The outputs bound to graph tensors this node created (the driver names them).
  [[nodiscard]] const std::vector<std::pair<int, Tensor>>& new_tensors() const {
    return new_tensors_;
  }
  /// True when output k exists and something reads it (or it is a graph output).
  [[nodiscard]] bool output_used(int k) const;

  /// An Error located at this node: `<source>: node 'NAME' (OP, node N): <message>`.
  [[nodiscard]] NodeError error(const std::string& message) const;

 private:
  const ::onnx::AttributeProto* attr(std::string_view name,
                                     ::onnx::AttributeProto::AttributeType type);

  ImportContext& import_;
  const ::onnx::NodeProto& node_;
  std::size_t position_;
  std::set<std::string, std::less<>> read_;
  std::vector<std::pair<int, Tensor>> new_tensors_;
};

/// The node's display name: its sanitised name, else its first output's.
std::string node_display_name(const ::onnx::NodeProto& node);

}  // namespace tapestry::onnx
