// NaiveExecutor: the oracle. Runs every Operation once, whole, in topological order.
//
// For each Operation, in the order of Graph::topological_order(), it calls the operation's
// kernel with `index` = the operation's IPFIndex and, for every input and output selection, the
// view of the selected box (which must equal IPF(index): the operation-ipf agreement of the
// dialect, re-checked here). Applications in the graph are ignored. With the reference kernels
// this *defines* what a graph computes; every rewrite and every other executor is checked
// against it (docs/design.md §5, §7).
//
//   Graph g = …;                                  // Y = relu(linear(X, W, b))
//   NaiveExecutor naive(g);                       // Error: cycle, unknown kernel, missing tags
//   BufferMap out = naive.run(generate_inputs(g, {.seed = 7}));
#pragma once

#include <vector>

#include "tapestry/runtime/executor.h"

namespace tapestry::runtime {

class NaiveExecutor final : public Executor {
 public:
  /// Checks the graph (every tensor has an executable dtype; no cycle; every operation has
  /// IPFIndex and IPFSignature tags and a known kernel) and fixes the order. Throws Error naming
  /// the offending node.
  explicit NaiveExecutor(const ir::Graph& graph,
                         const ExecutableKernels& kernels = ExecutableKernels::reference());

  [[nodiscard]] BufferMap run(BufferMap inputs) const override;

  /// The operations in the order `run` executes them.
  [[nodiscard]] const std::vector<ir::OperationId>& order() const { return order_; }

 private:
  const ir::Graph& graph_;
  std::vector<ir::OperationId> order_;
  std::vector<KernelFn> kernels_;  // parallel to order_
};

}  // namespace tapestry::runtime
