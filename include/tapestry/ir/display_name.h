// The name users see for a node of a graph: its label, else its key. Messages, plans, reports and
// renderings all name nodes this one way (the operation `Y/linear`, the tensor `H`, or a loom id
// for a node without a label).
//
//   ir::display_name(graph.node(op))     // "Y/linear"
//   ir::display_name(graph, tensor_id)   // "H", or "00000000-0000-4000-8000-00000000000d"
#pragma once

#include <string>
#include <string_view>

#include "tapestry/ir/graph.h"

namespace tapestry::ir {

/// `node`'s label, else its key.
[[nodiscard]] inline std::string display_name(const NodeView& node) {
  return node.label().empty() ? std::string(node.key()) : std::string(node.label());
}

/// The same as a view into the graph (valid while the graph lives and the node is not
/// relabelled): for the names kernel calls and reports hold without copying.
[[nodiscard]] inline std::string_view display_name_view(const NodeView& node) {
  return node.label().empty() ? node.key() : std::string_view(node.label());
}

/// The display name of node `id` of `graph`.
[[nodiscard]] inline std::string display_name(const Graph& graph, NodeId id) {
  return display_name(graph.node(id));
}

}  // namespace tapestry::ir
