// Read-only views of graphs for Python: tensors, operations, applications, their index ranges
// and selections. A view keeps its graph alive and reads it lazily, so listing the applications
// of a million-shard plan builds one small object per element asked for.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <pybind11/pybind11.h>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/builder.h"
#include "tapestry/rewrite/lower.h"

namespace tapestry::python {

class PyGraph;

/// A graph and what keeps it alive (a PyGraph, or a lowered result).
struct GraphRef {
  std::shared_ptr<const void> owner;
  const ir::Graph* graph = nullptr;
};

/// A tensor; `builder` and `handle` are set for the tensors of a graph being built.
struct TensorRef {
  GraphRef ref;
  ir::TensorId id;
  std::shared_ptr<PyGraph> builder;
  std::optional<metakernel::Tensor> handle;
};

struct OperationRef {
  GraphRef ref;
  ir::OperationId id;
};

struct ApplicationRef {
  GraphRef ref;
  ir::ApplicationId id;
};

/// A lowered plan: the application graph, the plan as the rewrites left it, and their log.
struct ShardedGraph {
  std::shared_ptr<const rewrite::LowerResult> lowered;

  [[nodiscard]] GraphRef ref() const { return {lowered, &lowered->graph}; }
};

/// The views of `graph` as Python lists.
pybind11::list tensor_list(const GraphRef& graph);
pybind11::list operation_list(const GraphRef& graph);
pybind11::list application_list(const GraphRef& graph);

/// The Graphviz picture of `graph` as SVG text.
std::string render_svg(const ir::Graph& graph);

/// Binds Range, Selection, Tensor (properties only), Operation, Application and ShardedGraph.
void bind_views(pybind11::module_& m);

}  // namespace tapestry::python
