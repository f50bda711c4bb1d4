// Parts of explain() (explain.h), each in its own file: the Communication section
// (explain_communication.cpp) and the critical path (explain_critical_path.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tapestry/cost/explain.h"

namespace tapestry::cost::detail {

/// A tensor's label, or its key when it has none.
inline std::string label_of(const ir::Graph& graph, ir::TensorId t) {
  const std::string& label = graph.tensor(t).label();
  return label.empty() ? std::string(graph.key(t)) : label;
}

/// Bytes per element of a tensor (0: a dtype the cost model does not know).
inline std::int64_t element_bytes(const ir::Graph& graph, ir::TensorId t) {
  const std::optional<ir::DType> dtype = graph.tensor(t).dtype().known();
  return dtype ? static_cast<std::int64_t>(ir::dtype_size_bytes(*dtype)) : 0;
}

/// The reduce operation that combines `tensor` when it holds the partials of a split reduction.
inline std::optional<ir::OperationId> combining_reduce(const ir::Graph& graph,
                                                       ir::TensorId tensor) {
  const auto consumers = graph.consumers(tensor);
  if (consumers.size() != 1 || graph.operation(consumers[0]).kernel() != "reduce") {
    return std::nullopt;
  }
  return consumers[0];
}

/// The Communication section: collectives (an all-reduce pair as one line, collectives of one
/// shape over device groups as one line) and point-to-point groups, in the order of their first
/// transfers.
std::vector<Communication> communication_of(const ir::Graph& graph, const Placement& placement,
                                            const Target& target, const Schedule& schedule);

/// The chain of applications, transfers and collectives that ends last, walked back to time 0.
CriticalPath critical_path_of(const Placement& placement, const Schedule& schedule,
                              const Target& target);

}  // namespace tapestry::cost::detail
