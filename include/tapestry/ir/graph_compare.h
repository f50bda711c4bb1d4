// Comparing operation graphs: what `build(print(g)) == g` means.
//
// Two graphs have the same operation graph when their Tensor and Operation nodes agree in
// everything but their keys (loom "id"s) and their order: labels, bodies (dtype and range;
// kernel, params, every port's selections, index names, reductions, extension fields such as
// `graphOutput`) and tags (IPFIndex, IPFSignature, IOSequencePoint, unknown tags), and their
// state updates (state_update.h). A selection
// refers to its tensor by the tensor's label, so graphs built independently compare equal when
// they name their tensors alike. Applications (a plan's shards), Notes and opaque nodes are not
// part of the operation graph.
//
//   OperationGraphDifference d = compare_operation_graphs(read, rebuilt);
//   d.is_empty()  // or d.only_in_first / d.only_in_second: canonical one-line JSON of each node
//
// Nodes are compared as a multiset of canonical lines, so a graph whose labels repeat compares
// by content too (it is then equal only up to which equally labelled node is which).
#pragma once

#include <string>
#include <vector>

#include "tapestry/ir/graph.h"

namespace tapestry::ir {

/// The operation graph as canonical lines: one compact JSON object per Tensor and Operation
/// (the loom node without its "id", selections' "tensorId" replaced by the tensor's label),
/// sorted; and one `{"update":["label:W","label:Wn"]}` per state update.
std::vector<std::string> operation_graph_lines(const Graph& graph);

/// The canonical line of one Tensor or Operation node (see operation_graph_lines).
std::string operation_graph_line(const Graph& graph, NodeId node);

struct OperationGraphDifference {
  std::vector<std::string> only_in_first;   // lines of the first graph the second lacks
  std::vector<std::string> only_in_second;  // and the other way round

  [[nodiscard]] bool is_empty() const { return only_in_first.empty() && only_in_second.empty(); }
  /// "- line" / "+ line", one per line (empty when equal).
  [[nodiscard]] std::string to_string() const;
};

OperationGraphDifference compare_operation_graphs(const Graph& first, const Graph& second);

}  // namespace tapestry::ir
