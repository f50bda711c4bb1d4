// Walks over an operation graph that the whole-graph passes (recompute.h, zero.h) share:
// what depends on an operation, and operations named for a message.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
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

/// A whole-graph pass's new order: `original`, with the operations `before` lists for an
/// operation (by node index) just before it, and each operation `replaced` maps to its
/// replacement in its place (the executors and the cost model break ties in graph order, so a
/// rewired operation keeps its place and a copy comes just before its first need).
inline std::vector<ir::OperationId> reordered(
    std::span<const ir::OperationId> original,
    const std::unordered_map<std::uint32_t, std::vector<ir::OperationId>>& before,
    const std::unordered_map<std::uint32_t, ir::OperationId>& replaced) {
  std::vector<ir::OperationId> order;
  for (ir::OperationId op : original) {
    if (auto it = before.find(op.index()); it != before.end()) {
      order.insert(order.end(), it->second.begin(), it->second.end());
    }
    auto it = replaced.find(op.index());
    order.push_back(it == replaced.end() ? op : it->second);
  }
  return order;
}

}  // namespace tapestry::rewrite::detail
