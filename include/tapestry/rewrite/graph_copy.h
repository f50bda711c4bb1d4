// Copying a graph while leaving nodes out.
//
// Ids are dense indexes, so a node ir::Graph::remove takes out keeps its id until the graph is
// copied. `copy_graph` copies every node except the Applications (lowering regenerates them),
// the removed nodes and the nodes in `drop`, preserving keys, labels, tags and extension fields,
// and returns the old → new id map. The rewrite driver copies once, after its last rewrite; lower
// copies its input once, before the first:
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

/// Copies `source` without its Applications, its removed nodes and the nodes in `drop`.
/// Operations that read or write a dropped tensor must be dropped too (asserted). The order:
/// the Tensors, Notes and Opaque nodes, then the Operations, each in id order.
GraphCopy copy_graph(const ir::Graph& source, std::span<const ir::NodeId> drop = {});

/// Copies `source` without its Applications and removed nodes, its Operations in the order of
/// `operations` (which lists each of them once) after every other node (in id order): how the
/// recompute pass puts each copy before its first backward use.
GraphCopy copy_graph_in_order(const ir::Graph& source, std::span<const ir::OperationId> operations);

/// Copies the nodes of `source` listed in `nodes` (each at most once, none removed, no
/// Application), in that order: every node before the operations that read or write it. The
/// rewrite driver's canonical order (pattern.h, run_patterns).
GraphCopy copy_graph_nodes(const ir::Graph& source, std::span<const ir::NodeId> nodes);

/// Copies node `id` of `source` into `copy.graph` (an Application: nothing), reading the ids of
/// the tensors it selects from `copy.map` (by `source`'s node index, which must hold them) and
/// recording its own there: how one graph is assembled from nodes of several (the incremental
/// rewrites, incremental.h), a map per source.
void copy_node_into(const ir::Graph& source, ir::NodeId id, GraphCopy& copy);

/// Re-targets every selection of `selections` through `copy` (asserted: none was dropped).
ir::SelectionMap remap_selections(const ir::SelectionMap& selections, const GraphCopy& copy);

}  // namespace tapestry::rewrite
