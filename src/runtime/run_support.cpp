// Buffer preparation and kernel invocation shared by the naive and application executors.
#include "run_support.h"

#include <limits>
#include <map>

#include <fmt/format.h>

#include "operation_blocks.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime::detail {

std::string describe_application(const ir::Graph& graph, ir::ApplicationId app) {
  const ir::ApplicationView view = graph.application(app);
  if (!view.label().empty()) return fmt::format("application '{}'", view.label());
  const std::optional<zspace::Range> index = view.ipf_index();
  if (!view.operation().is_valid() || !index)
    return fmt::format("application '{}'", graph.key(app));
  return fmt::format("the application of '{}' over {}", graph.display_name(view.operation()),
                     *index);
}

void check_tensor_dtypes(const ir::Graph& graph) {
  for (ir::TensorId tensor : graph.tensors()) (void)tensor_dtype(graph, tensor);
}

void check_operation_tags(const ir::Graph& graph, ir::OperationId op) {
  const ir::OperationView view = graph.operation(op);
  if (!view.has_ipf_index() || view.ipf_signature() == nullptr) {
    throw Error(
        fmt::format("operation '{}' has no {} tag; the runtime needs IPFIndex and "
                    "IPFSignature on every operation",
                    graph.display_name(op), !view.has_ipf_index() ? "IPFIndex" : "IPFSignature"));
  }
}

void poison(Buffer& buffer) {
  visit_storage_dtype(buffer.dtype(), [&]<typename T>() {
    T value{};
    if constexpr (is_half_float_v<T>) {
      value = storage_cast<T>(std::numeric_limits<float>::quiet_NaN());
    } else {
      value = std::numeric_limits<T>::has_quiet_NaN ? std::numeric_limits<T>::quiet_NaN()
                                                    : std::numeric_limits<T>::lowest();
    }
    for (T& v : buffer.values<T>()) v = value;
  });
}

// Every operation whose index is non-empty must be covered by applications, or its outputs
// would stay poisoned without anyone noticing where.
void check_operations_have_applications(const ir::Graph& graph) {
  for (ir::OperationId op : graph.operations()) {
    check_operation_tags(graph, op);
    if (graph.applications_of(op).empty() && !graph.operation(op).ipf_index()->is_empty()) {
      throw Error(
          fmt::format("operation '{}' has no applications; the application executor "
                      "runs applications only",
                      graph.display_name(op)));
    }
  }
}

BufferMap prepare_buffers(const ir::Graph& graph, BufferMap inputs) {
  BufferMap buffers;
  for (ir::TensorId tensor : graph.tensors()) {
    auto given = inputs.find(tensor);
    const bool is_input = graph.producers(tensor).empty();
    if (is_input && given == inputs.end()) {
      throw Error(fmt::format("input tensor '{}' has no buffer", tensor_name(graph, tensor)));
    }
    if (!is_input && given != inputs.end()) {
      throw Error(fmt::format("tensor '{}' is computed by operation '{}'; it cannot be an input",
                              tensor_name(graph, tensor),
                              graph.display_name(graph.producers(tensor).front())));
    }
    if (is_input) {
      buffers.emplace(tensor, bind_buffer(graph, tensor, std::move(given->second)));
      inputs.erase(given);
    } else {
      Buffer buffer(tensor_dtype(graph, tensor), graph.tensor(tensor).range());
      poison(buffer);
      buffers.emplace(tensor, std::move(buffer));
    }
  }
  if (!inputs.empty()) {
    throw Error(fmt::format("a buffer is given for node #{}, which is not a tensor of the graph",
                            inputs.begin()->first.index()));
  }
  return buffers;
}

std::vector<std::vector<ir::TensorId>> releases_after(const ir::Graph& graph,
                                                      const std::vector<ir::OperationId>& order) {
  std::map<ir::TensorId, std::size_t> last;  // the last operation reading or writing a tensor
  for (std::size_t i = 0; i < order.size(); ++i) {
    const ir::OperationView op = graph.operation(order[i]);
    for (const auto& e : op.inputs().entries()) last[e.value.tensor] = i;
    for (const auto& e : op.outputs().entries()) last[e.value.tensor] = i;
  }
  for (ir::TensorId t : graph_outputs(graph)) last.erase(t);
  std::vector<std::vector<ir::TensorId>> release(order.size());
  for (const auto& [t, i] : last) release[i].push_back(t);
  return release;
}

const zspace::IndexProjection& checked_ipf(const ir::SelectionMap::Entry& entry,
                                           const ir::IpfMap& ipfs, const Range& index) {
  auto list = ipfs.list(entry.name);
  if (entry.position >= list.size()) {
    throw Error(fmt::format("selection {}[{}] has no IPF in the operation's IPFSignature",
                            entry.name, entry.position));
  }
  const zspace::IndexProjection& ipf = list[entry.position];
  const Range expected = ipf.apply(index);
  if (entry.value.range != expected) {
    throw Error(fmt::format("selection {}[{}] is {}, but its IPF gives {} for index {}", entry.name,
                            entry.position, entry.value.range, expected, index));
  }
  return ipf;
}

void check_inside(const ir::Graph& graph, const ir::SelectionMap::Entry& entry, const Range& box,
                  ir::TensorId tensor, const Range& range) {
  if (!range.contains(box)) {
    throw Error(fmt::format("selection {}[{}] {} lies outside tensor '{}' {}", entry.name,
                            entry.position, box, tensor_name(graph, tensor), range));
  }
}

namespace {

template <typename Port>
void add_ports(const ir::Graph& graph, const Work& work, const ir::SelectionMap& selections,
               const ir::IpfMap& ipfs, BufferMap& buffers, ir::NamedLists<Port>& ports) {
  for (const auto& entry : selections.entries()) {
    const zspace::IndexProjection& ipf = checked_ipf(entry, ipfs, *work.index);
    auto found = buffers.find(entry.value.tensor);
    if (found == buffers.end()) {
      throw Error(
          fmt::format("selection {}[{}] names no tensor of the graph", entry.name, entry.position));
    }
    Buffer& buffer = found->second;
    check_inside(graph, entry, entry.value.range, entry.value.tensor, buffer.range());
    ports.append(entry.name, Port{buffer.view(entry.value.range), &ipf});
  }
}

}  // namespace

void run_kernel(KernelFn kernel, const ir::Graph& graph, const Work& work, BufferMap& buffers,
                bool in_blocks) {
  const ir::OperationView op = graph.operation(work.operation);
  const ir::IpfSignature& signature = *op.ipf_signature();
  KernelCall call{.kernel = op.kernel(),
                  .operation = graph.node(work.operation).display_name(),
                  .index = *work.index,
                  .params = &op.params(),
                  .index_names = op.body().index_names,
                  .reductions = op.body().reductions};
  try {
    add_ports(graph, work, *work.inputs, signature.inputs, buffers, call.inputs);
    add_ports(graph, work, *work.outputs, signature.outputs, buffers, call.outputs);
  } catch (const Error& e) {
    const char* kind = work.node == ir::NodeId(work.operation) ? "operation" : "application";
    throw e.with_context(fmt::format("{} '{}'", kind, graph.display_name(work.node)));
  }
  if (in_blocks) {
    call_in_blocks(kernel, call);
  } else {
    kernel(call);
  }
}

}  // namespace tapestry::runtime::detail
