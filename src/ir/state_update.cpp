#include "tapestry/ir/state_update.h"

#include <fmt/format.h>

namespace tapestry::ir {

namespace {

std::string type_text(const Graph& graph, TensorId t) {
  const zspace::Point shape = graph.tensor(t).range().shape();
  std::string dims;
  for (std::size_t i = 0; i < shape.rank(); ++i)
    dims += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return fmt::format("{}[{}]", graph.tensor(t).dtype().name(), dims);
}

}  // namespace

std::optional<std::string> update_problem(const Graph& graph, TensorId state, TensorId next,
                                          std::span<const StateUpdate> existing) {
  const std::string s = graph.display_name(state);
  const std::string n = graph.display_name(next);
  const std::string head = fmt::format("update {} <- {}", s, n);
  if (const std::span<const OperationId> producers = graph.producers(state); !producers.empty()) {
    return fmt::format("{}: {} is computed by operation {} (only a graph input can be state)", head,
                       s, graph.display_name(producers.front()));
  }
  for (const StateUpdate& u : existing) {
    if (u.state == state) {
      return fmt::format("{}: {} is already updated by {}", head, s, graph.display_name(u.next));
    }
  }
  const TensorView a = graph.tensor(state);
  const TensorView b = graph.tensor(next);
  if (!(a.dtype() == b.dtype()) || a.range().shape() != b.range().shape()) {
    return fmt::format("{}: {} is {} but {} is {}", head, s, type_text(graph, state), n,
                       type_text(graph, next));
  }
  return std::nullopt;
}

bool is_state(const Graph& graph, TensorId tensor) {
  for (const StateUpdate& u : graph.updates()) {
    if (u.state == tensor) return true;
  }
  return false;
}

}  // namespace tapestry::ir
