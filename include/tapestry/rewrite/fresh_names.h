// FreshNames: the one naming rule for operations and tensors that rewrites add.
//
// Plans name operations, so a name a rewrite invents must never be one the graph already uses —
// a user operation called `V1/matmul`, or a name an earlier rewrite generated — or a plan entry
// would land on the wrong operation. Every rewrite (decompose-linear, split-reduction,
// fuse-elementwise; shard-grid adds no named nodes) asks one table for its names, built from the
// graph it writes into: the labels of every operation and tensor and the keys of every
// operation (plans may name an operation by key), and the operations the plan has entries for.
// Not the plan's *derived* entries (RewriteState::derived_entries) nor its fusion groups: a name
// there that the graph lacks is one the plan expects a rewrite to create, so the rewrite must
// give exactly that name to the operation it adds (plan.h). A name is `base` when
// it is free, else `base.2`, `base.3`, … — the `.n` rule of the .tap language (metakernel/naming.h)
// — and is taken as soon as it is handed out, so the nodes of one rewrite never share a name
// either:
//
//   graph: operations V1/matmul (the user's), V1 (a linear)
//   FreshNames names(graph);
//   names.take("V1/transpose")   // "V1/transpose"
//   names.take("V1/matmul")      // "V1/matmul.2": the user's V1/matmul keeps its name
//   names.take("V1/matmul")      // "V1/matmul.3"
//
// A rewrite that *replaces* an operation keeps its name on purpose (decompose-linear's bias_add
// is still `V1`): it drops the old operation from the graph first, so that name is free again.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/naming.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::rewrite {

class FreshNames {
 public:
  /// The names `graph` uses: labels of operations and tensors, keys of operations; and the
  /// operations `plan` has entries for (so a stale entry can never be picked up by a new
  /// operation). Both are
  /// read when a name is asked for, not copied (a rewrite builds one per application, on a graph
  /// of thousands of operations): they must outlive this table, and names they gain meanwhile
  /// count as taken.
  explicit FreshNames(const ir::Graph& graph) : graph_(&graph) {}
  FreshNames(const ir::Graph& graph, const Plan& plan) : graph_(&graph), plan_(&plan) {}
  /// The same, and every name handed out is appended to `taken` with whether it is not its base
  /// (RewriteState::taken_names: the incremental rewrites check that no name depended on nodes
  /// outside the rewrite's component).
  template <typename Taken>
  FreshNames(const ir::Graph& graph, const Plan& plan, std::vector<Taken>& taken)
      : graph_(&graph), plan_(&plan) {
    log_ = [&taken](std::string name, bool renamed) {
      taken.push_back({std::move(name), renamed});
    };
  }
  FreshNames(const ir::Graph& graph, Plan&& plan) = delete;  // it would dangle

  /// `base`, or `base.2`, `base.3`, …: the first name not in use; it is in use afterwards.
  std::string take(std::string_view base);
  [[nodiscard]] bool is_taken(std::string_view name) const;

 private:
  const ir::Graph* graph_;
  const Plan* plan_ = nullptr;
  metakernel::NameTable handed_out_;
  std::function<void(std::string, bool)> log_;
};

}  // namespace tapestry::rewrite
