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
//
// `run` returns every tensor of the graph; `run_outputs` returns the graph outputs only and holds
// no more than it must on the way: the inputs are read where they are (not copied), each other
// tensor is allocated when its producer runs and freed after its last reader — the same kernel
// calls in the same order, so the same bits. `--verify` uses it: its peak is the inputs plus
// the tensors live at once, not the whole graph.
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

  /// The graph outputs of the same run, bitwise equal to run(inputs)'s; `inputs` (every graph
  /// input, nothing else) are only read, intermediates freed after their last reader.
  [[nodiscard]] BufferMap run_outputs(const BufferMap& inputs) const;

  /// The operations in the order `run` executes them.
  [[nodiscard]] const std::vector<ir::OperationId>& order() const { return order_; }

 private:
  const ir::Graph& graph_;
  std::vector<ir::OperationId> order_;
  std::vector<KernelFn> kernels_;  // parallel to order_
};

}  // namespace tapestry::runtime
