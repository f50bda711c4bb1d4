// Executors: run a graph on buffers with a kernel registry.
//
// Three executors share this interface and the kernels:
//
//   NaiveExecutor        every Operation once over its whole IPFIndex, in topological order;
//                        the oracle (docs/design.md §7)
//   ApplicationExecutor  every Application once over its own IPFIndex sub-box, sequentially, in
//                        the dependency order of application_schedule.h
//   BlockExecutor        the Applications as a task DAG on a oneTBB pool, fast kernels by
//                        default (block_executor.h); returns the inputs and outputs only
//
//   NaiveExecutor naive(graph);                     // checks the graph, resolves kernels once
//   BufferMap values = naive.run(bind_by_name(graph, {{"X", x}}));
//
// `run` takes the buffers of the graph inputs (graph_inputs(); tensor_map.h), moves them into the
// result, and returns a buffer for every tensor the run wrote as well. Tensors a run writes are
// filled with a poison value first (NaN; the lowest integer), so a cell no kernel writes cannot
// pass for a computed zero. Errors (a missing input, an unknown kernel, an IPF that disagrees with
// a selection) are tapestry::Error naming the tensor or node.
//
// An executor holds a reference to its graph, which must outlive it and stay unchanged. `run` is
// const and may be called concurrently on one executor.
#pragma once

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime {

class Executor {
 public:
  virtual ~Executor() = default;
  /// Runs the graph; `inputs` must hold exactly the graph inputs (see the file comment).
  [[nodiscard]] virtual BufferMap run(BufferMap inputs) const = 0;
};

}  // namespace tapestry::runtime
