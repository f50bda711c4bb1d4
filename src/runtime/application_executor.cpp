// ApplicationExecutor: every Application over its own sub-box, in schedule order.
#include "tapestry/runtime/application_executor.h"

#include <fmt/format.h>

#include "run_support.h"

namespace tapestry::runtime {

ApplicationExecutor::ApplicationExecutor(const ir::Graph& graph, const ExecutableKernels& kernels)
    : graph_(graph) {
  detail::check_tensor_dtypes(graph);
  detail::check_operations_have_applications(graph);
  schedule_ = schedule_applications(graph);
  for (ir::ApplicationId app : schedule_.applications) {
    const ir::ApplicationView view = graph.application(app);
    if (!view.has_ipf_index()) {
      throw Error(fmt::format("application '{}' has no IPFIndex tag", graph.display_name(app)));
    }
    if (!graph.contains(view.operation()) || !graph.as_operation(view.operation())) {
      throw Error(
          fmt::format("application '{}' names no operation of the graph", graph.display_name(app)));
    }
    const ir::OperationId op = view.operation();
    kernels_.push_back(kernels.lookup(graph.operation(op).kernel(), graph.display_name(op)));
  }
}

BufferMap ApplicationExecutor::run(BufferMap inputs) const {
  BufferMap buffers = detail::prepare_buffers(graph_, std::move(inputs));
  for (std::uint32_t i : schedule_.order) {
    const ir::ApplicationView app = graph_.application(schedule_.applications[i]);
    const detail::Work work{.operation = app.operation(),
                            .node = app.id(),
                            .index = app.ipf_index(),
                            .inputs = &app.inputs(),
                            .outputs = &app.outputs()};
    detail::run_kernel(kernels_[i], graph_, work, buffers);
  }
  return buffers;
}

}  // namespace tapestry::runtime
