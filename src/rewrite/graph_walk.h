// Walks over an operation graph that the whole-graph passes (recompute.h, zero.h) share:
// what depends on an operation, and operations named for a message.
#pragma once

#include <fmt/format.h>

#include <span>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::rewrite::detail {

/// The operations reachable from `from` through the tensors they write (`from` excluded), as a
/// flag per node index: descendants(g, op)[other.index()] != 0 when `other` depends on `op`.
inline std::vector<char> descendants(const ir::Graph& g, ir::OperationId from) {
  std::vector<char> seen(g.size(), 0);
  std::vector<ir::OperationId> stack = {from};
  while (!stack.empty()) {
    const ir::OperationId op = stack.back();
    stack.pop_back();
    for (const auto& out : g.operation(op).outputs().entries()) {
      for (ir::OperationId next : g.consumers(out.value.tensor)) {
        if (seen[next.index()] != 0) continue;
        seen[next.index()] = 1;
        stack.push_back(next);
      }
    }
  }
  return seen;
}

/// "dW1/relu_grad, dW2": the operations by the names plans use, comma-separated.
inline std::string names_of(const ir::Graph& g, std::span<const ir::OperationId> ops) {
  std::vector<std::string> names;
  for (ir::OperationId op : ops) names.push_back(operation_name(g, op));
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace tapestry::rewrite::detail
