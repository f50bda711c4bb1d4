// NaiveExecutor: whole operations in topological order (the oracle).
#include "tapestry/runtime/naive_executor.h"

#include <fmt/format.h>

#include <algorithm>

#include "run_support.h"

namespace tapestry::runtime {

NaiveExecutor::NaiveExecutor(const ir::Graph& graph, const ExecutableKernels& kernels)
    : graph_(graph) {
  detail::check_tensor_dtypes(graph);
  const ir::TopologicalOrder topo = graph.topological_order();
  if (!topo.cycle.empty()) {
    std::vector<std::string> names;
    for (ir::NodeId node : topo.cycle) names.push_back(graph.display_name(node));
    throw Error(fmt::format("the graph has a cycle: {}", fmt::join(names, " -> ")));
  }
  for (ir::NodeId node : topo.order) {
    std::optional<ir::OperationId> op = graph.as_operation(node);
    if (!op) continue;
    detail::check_operation_tags(graph, *op);
    order_.push_back(*op);
    kernels_.push_back(kernels.lookup(graph.operation(*op).kernel(), graph.display_name(*op)));
  }
}

BufferMap NaiveExecutor::run(BufferMap inputs) const {
  BufferMap buffers = detail::prepare_buffers(graph_, std::move(inputs));
  for (std::size_t i = 0; i < order_.size(); ++i) {
    const ir::OperationView op = graph_.operation(order_[i]);
    const detail::Work work{.operation = order_[i],
                            .node = order_[i],
                            .index = op.ipf_index(),
                            .inputs = &op.inputs(),
                            .outputs = &op.outputs()};
    detail::run_kernel(kernels_[i], graph_, work, buffers, /*in_blocks=*/true);
  }
  return buffers;
}

BufferMap NaiveExecutor::run_outputs(const BufferMap& inputs) const {
  // 1. The inputs, borrowed: executors never write them.
  BufferMap buffers;
  for (ir::TensorId t : graph_inputs(graph_)) {
    auto given = inputs.find(t);
    if (given == inputs.end())
      throw Error(fmt::format("input tensor '{}' has no buffer", tensor_name(graph_, t)));
    const Buffer& b = given->second;
    buffers.emplace(t, bind_buffer(graph_, t,
                                   Buffer::borrow(b.dtype(), b.range(),
                                                  const_cast<std::byte*>(b.bytes()))));  // NOLINT
  }
  for (const auto& [t, b] : inputs) {
    if (buffers.contains(t)) continue;
    const std::span<const ir::TensorId> tensors = graph_.tensors();
    if (std::find(tensors.begin(), tensors.end(), t) == tensors.end()) {
      throw Error(fmt::format("a buffer is given for node #{}, which is not a tensor of the graph",
                              t.index()));
    }
    throw Error(fmt::format("tensor '{}' is computed by operation '{}'; it cannot be an input",
                            tensor_name(graph_, t),
                            graph_.display_name(graph_.producers(t).front())));
  }
  // 2. Each operation: its outputs allocated (poisoned, as `run` does), the kernel, and every
  //    tensor no later operation reads freed.
  const std::vector<std::vector<ir::TensorId>> release = detail::releases_after(graph_, order_);
  for (std::size_t i = 0; i < order_.size(); ++i) {
    const ir::OperationView op = graph_.operation(order_[i]);
    for (const auto& e : op.outputs().entries()) {
      const ir::TensorId t = e.value.tensor;
      if (buffers.contains(t)) continue;
      Buffer buffer(tensor_dtype(graph_, t), graph_.tensor(t).range());
      detail::poison(buffer);
      buffers.emplace(t, std::move(buffer));
    }
    const detail::Work work{.operation = order_[i],
                            .node = order_[i],
                            .index = op.ipf_index(),
                            .inputs = &op.inputs(),
                            .outputs = &op.outputs()};
    detail::run_kernel(kernels_[i], graph_, work, buffers, /*in_blocks=*/true);
    for (ir::TensorId t : release[i]) buffers.erase(t);
  }
  // 3. The outputs, owned (an output that is an input is copied).
  BufferMap outputs;
  for (ir::TensorId t : graph_outputs(graph_)) {
    Buffer& b = buffers.at(t);
    outputs.emplace(t, b.is_borrowed() ? Buffer(b) : std::move(b));
  }
  return outputs;
}

}  // namespace tapestry::runtime
