// Graph insertion: turning an evaluated Signature into IR nodes.
//
// `add_operation(graph, sig, inputs, name)` adds, for one use of a kernel:
//   * one Tensor per output port (dtype as its loom name, e.g. "float32"; the range the
//     signature computed), labelled `name` (or `name.<port>` when the kernel has several outputs);
//   * the Operation: kernel, params, inputs/outputs as one selection per port (the port's IPF
//     applied to the whole index), the index names and reductions (Tapestry's extension of the
//     loom body), and the IPFIndex and IPFSignature tags;
//   * unless options say otherwise, one Application covering the whole index (IPFIndex tag =
//     the operation's index), so the graph is immediately valid in the application dialect.
//
// Graph outputs (the .tap `output` statement) are marked with the Tensor body extension
// `"graphOutput": true` (see is_graph_output); the loom schema has no notion of graph outputs.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature.h"
#include "tapestry/metakernel/tensor_type.h"

namespace tapestry::metakernel {

struct ApplyOptions {
  /// Add one whole-index Application per operation (default). Off: a pure operation graph.
  bool add_application = true;
  /// Write into these existing tensors (one per output port, each with the range the signature
  /// computed) instead of adding new ones. Rewrites use it to keep a tensor's identity when they
  /// replace the operation that produces it.
  std::vector<ir::TensorId> outputs;
};

struct AddedOperation {
  ir::OperationId operation;
  std::vector<ir::TensorId> outputs;  // one per output port, in the signature's order
  std::optional<ir::ApplicationId> application;
};

/// Adds the operation `sig` describes on `inputs` (one tensor per input port, in order).
AddedOperation add_operation(ir::Graph& graph, const Signature& sig,
                             std::span<const ir::TensorId> inputs, const std::string& name,
                             const ApplyOptions& options = {});

/// The metakernel type of an IR tensor; Error when its dtype is not one metakernels know.
TensorType tensor_type(const ir::Graph& graph, ir::TensorId tensor);

/// The name of the JSON body extension that marks a graph output.
inline constexpr const char* kGraphOutputField = "graphOutput";
/// Marks `tensor` as a graph output (idempotent).
void mark_graph_output(ir::Graph& graph, ir::TensorId tensor);
[[nodiscard]] bool is_graph_output(const ir::Graph& graph, ir::TensorId tensor);
/// The results, in graph order: the declared outputs (`output` in a .tap program, the builder's
/// `output`, `"graphOutput": true` in JSON; consumed or not, graph inputs included) when the
/// graph declares any, else the tensors some operation produces and none consumes.
std::vector<ir::TensorId> graph_outputs(const ir::Graph& graph);

}  // namespace tapestry::metakernel
