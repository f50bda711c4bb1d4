// NaiveExecutor: whole operations in topological order (the oracle).
#include "tapestry/runtime/naive_executor.h"

#include <fmt/format.h>

#include "run_support.h"

namespace tapestry::runtime {

NaiveExecutor::NaiveExecutor(const ir::Graph& graph, const ExecutableKernels& kernels)
    : graph_(graph) {
  detail::check_tensor_dtypes(graph);
  const ir::TopologicalOrder topo = graph.topological_order();
  if (!topo.cycle.empty()) {
    std::vector<std::string> names;
    for (ir::NodeId node : topo.cycle) names.push_back(detail::node_name(graph, node));
    throw Error(fmt::format("the graph has a cycle: {}", fmt::join(names, " -> ")));
  }
  for (ir::NodeId node : topo.order) {
    std::optional<ir::OperationId> op = graph.as_operation(node);
    if (!op) continue;
    detail::check_operation_tags(graph, *op);
    order_.push_back(*op);
    kernels_.push_back(
        kernels.lookup(graph.operation(*op).kernel(), detail::node_name(graph, *op)));
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
    detail::run_kernel(kernels_[i], graph_, work, buffers);
  }
  return buffers;
}

}  // namespace tapestry::runtime
