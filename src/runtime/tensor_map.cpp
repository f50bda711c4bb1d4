// Finding a graph's inputs and outputs, naming tensors, and binding buffers to them.
#include "tapestry/runtime/tensor_map.h"

#include <fmt/format.h>

#include "tapestry/metakernel/apply.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

std::vector<ir::TensorId> graph_inputs(const ir::Graph& graph) {
  std::vector<ir::TensorId> inputs;
  for (ir::TensorId t : graph.tensors()) {
    if (graph.producers(t).empty()) inputs.push_back(t);
  }
  return inputs;
}

std::string tensor_name(const ir::Graph& graph, ir::TensorId tensor) {
  return graph.display_name(tensor);
}

ir::TensorId find_tensor(const ir::Graph& graph, std::string_view name) {
  const ir::Graph::Named found = graph.find_named(ir::NodeKind::kTensor, name);
  if (found.node) return ir::TensorId(*found.node);
  if (found.labelled > 1) {
    throw Error(
        fmt::format("{} tensors are labelled '{}'; name one by its key", found.labelled, name));
  }
  throw Error(fmt::format("no tensor is labelled or keyed '{}'", name));
}

DType tensor_dtype(const ir::Graph& graph, ir::TensorId tensor) {
  return executable_dtype(graph.tensor(tensor).dtype(),
                          fmt::format("tensor '{}'", tensor_name(graph, tensor)));
}

Buffer bind_buffer(const ir::Graph& graph, ir::TensorId tensor, Buffer buffer) {
  const Range& range = graph.tensor(tensor).range();
  const DType dtype = tensor_dtype(graph, tensor);
  if (buffer.dtype() != dtype || buffer.range().shape() != range.shape()) {
    throw Error(fmt::format("tensor '{}' is {} {} (shape {}), but its buffer is {} (shape {})",
                            tensor_name(graph, tensor), ir::dtype_name(dtype), range, range.shape(),
                            buffer.describe(), buffer.range().shape()));
  }
  return std::move(buffer).relocated(range.start());
}

BufferMap bind_by_name(const ir::Graph& graph, std::map<std::string, Buffer> by_name) {
  BufferMap bound;
  for (auto& [name, buffer] : by_name) {
    const ir::TensorId tensor = find_tensor(graph, name);
    if (bound.contains(tensor)) {
      throw Error(fmt::format("tensor '{}' is given twice", tensor_name(graph, tensor)));
    }
    bound.emplace(tensor, bind_buffer(graph, tensor, std::move(buffer)));
  }
  return bound;
}

}  // namespace tapestry::runtime
