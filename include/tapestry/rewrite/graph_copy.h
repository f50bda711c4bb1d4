// Copying a graph while leaving nodes out — how rewrites remove nodes.
//
// The IR only grows (ids are dense indexes), so a rewrite that replaces operations builds a new
// graph: it copies what stays, then adds what is new. `copy_graph` copies every node except the
// Applications (lowering regenerates them) and the nodes in `drop`, preserving keys, labels,
// tags and extension fields, and returns the old → new id map:
//
//   GraphCopy c = copy_graph(g, {z_tensor, relu_op});
//   c.tensor(x)      // x's id in c.graph
//   c.has(z_tensor)  // false
#pragma once

#include <span>
#include <vector>

#include "tapestry/ir/graph.h"

namespace tapestry::rewrite {

struct GraphCopy {
  ir::Graph graph;
  std::vector<ir::NodeId> map;  // by old node index; invalid for nodes left out

  [[nodiscard]] bool has(ir::NodeId old) const { return map[old.index()].is_valid(); }
  [[nodiscard]] ir::TensorId tensor(ir::TensorId old) const {
    return ir::TensorId(map[old.index()]);
  }
  [[nodiscard]] ir::OperationId operation(ir::OperationId old) const {
    return ir::OperationId(map[old.index()]);
  }
};

/// Copies `source` without its Applications and without the nodes in `drop`. Operations that
/// read or write a dropped tensor must be dropped too (asserted).
GraphCopy copy_graph(const ir::Graph& source, std::span<const ir::NodeId> drop = {});

/// Re-targets every selection of `selections` through `copy` (asserted: none was dropped).
ir::SelectionMap remap_selections(const ir::SelectionMap& selections, const GraphCopy& copy);

}  // namespace tapestry::rewrite
