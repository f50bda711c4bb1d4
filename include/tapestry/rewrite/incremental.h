// Incremental rewrites: a plan's rewrites redone only where it differs from an earlier plan's.
//
// The search prices thousands of plans that differ from the one before in a few operations'
// entries, and a cold evaluation spent half (megatron8) to three quarters (ViT-B/16) of its
// instructions in the rewrites of the whole graph (docs/optimizer.md, "The evaluator's speed").
// Every pattern states the edges of the input graph it may act across (pattern.h,
// may_act_across); the operations those edges join are *rewrite components*, and what the
// patterns do inside one depends on that component's plan entries alone. So:
//
// * rewrite_components partitions the input graph once;
// * IncrementalRewrites::rewrite, given the record an earlier call left (`base`), finds the
//   components whose entries — or a neighbour's, one edge away — differ from the base plan's,
//   assembles the driver's starting graph from the base's rewritten nodes of the other
//   components and the input's nodes of these, and resumes the driver (DriverResume) with the
//   other components settled: only the changed components are rewritten.
//
// Why the result is the one a fresh run gives, node for node: the driver applies the first
// (pattern, operation) match in pattern order then graph order. A rewrite inside one component
// changes no match in another (the partition), so the rewrites a fresh run applies inside a
// component are, in order, those it applies to the component alone: the first match of the
// component is the first of its pattern among the component's operations, whose relative order
// (input operations in input order, then the added ones in the order added) the assembled graph
// keeps. The driver lays the graph out canonically (run_patterns), per input operation, so each
// component's nodes land where a fresh run puts them. What could still tie a component to
// another is checked, and the whole graph is rewritten when it might: a name FreshNames handed
// out that is not its base or that is also an input name or another component's (a fresh run
// could have found it taken), a rewrite whose operation is outside the changed components, and
// plans with derived entries, the whole-graph passes (zero, recompute, pipeline) or fusion
// groups two of which end in one operation (a group belongs to its head's component: its
// fusions happen there, each dropping the head). Generated node keys are the one difference: an
// added node's key is the graph's next free one when it was added, so it follows the order of the
// rewrites across components; the cost model reads nodes by index and names by label, never an
// added node's key.
//
//   IncrementalRewrites rewrites(graph, options);
//   RewriteRecord first, second;
//   rewrites.rewrite(plan, log, first, nullptr);          // the whole graph
//   rewrites.rewrite(mutated, log, second, &first);       // the components `mutated` changed
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/pattern.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::rewrite {

/// The rewrite components of a graph under some patterns.
struct RewriteComponents {
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  /// By node index: an operation's component; a tensor's producer's (kNone: no producer); kNone
  /// for other nodes.
  std::vector<std::uint32_t> of;
  std::uint32_t count = 0;
  /// By node index of an operation: the operations one edge away (either direction).
  std::vector<std::vector<std::uint32_t>> neighbours;
};

/// Joins every producer → consumer pair of `graph` that some pattern may act across.
RewriteComponents rewrite_components(const ir::Graph& graph,
                                     std::span<const OperationPattern* const> patterns);

/// What a call of IncrementalRewrites::rewrite leaves for a later one (its graph is the state's,
/// which the caller keeps and hands back as `base_graph`).
struct RewriteRecord {
  Plan plan;     // the plan rewritten, names resolved (compared entry by entry with the next)
  Plan written;  // the plan the rewrites left (RewriteState::plan)
  std::map<std::string, std::string, std::less<>> origins;
  std::vector<DerivedOperation> derived;
  std::vector<RewriteEvent> log;
  DriverTrace trace;
  std::vector<RewriteState::TakenName> names;
  /// False when a later call cannot start from it: a plan the incremental path does not take,
  /// or a name that may depend on another component (see above).
  bool reusable = false;
};

class IncrementalRewrites {
 public:
  struct Stats {
    std::size_t whole = 0;                 // calls that rewrote the whole graph
    std::size_t incremental = 0;           // calls that resumed from a base
    std::size_t components_rewritten = 0;  // over the incremental calls
    std::size_t components_reused = 0;
  };

  IncrementalRewrites(const ir::Graph& graph, const LowerOptions& options);

  /// rewrite_operations(graph, plan, options, log) — the same graph, node for node (ids, labels,
  /// bodies, order; keys of the original nodes), plan, origins and log events (the log's order
  /// aside) — with `record` filled for a later call. With `base` (a record of an earlier call)
  /// and `base_graph` (that call's graph), only the components whose entries differ are
  /// rewritten, when the checks above allow.
  RewriteState rewrite(const Plan& plan, std::vector<RewriteEvent>& log, RewriteRecord& record,
                       const RewriteRecord* base = nullptr, const ir::Graph* base_graph = nullptr);

  /// The operation graph rewritten: the caller's, copied as rewrite_operations copies it (its
  /// node ids are those of DriverTrace and RewriteComponents).
  [[nodiscard]] const ir::Graph& input() const { return input_; }
  [[nodiscard]] const RewriteComponents& components() const { return components_; }
  /// The component of the operation a plan names `name` (kNone: none).
  [[nodiscard]] std::uint32_t component_of(const std::string& name) const;
  [[nodiscard]] const Stats& stats() const { return stats_; }

 private:
  RewriteState whole(const Plan& plan, std::vector<RewriteEvent>& log, RewriteRecord& record);
  bool resume(const Plan& resolved, const RewriteRecord& base, const ir::Graph& base_graph,
              const std::vector<char>& changed, RewriteState& state, std::vector<RewriteEvent>& log,
              RewriteRecord& record);
  [[nodiscard]] bool names_reusable(const RewriteRecord& record) const;
  [[nodiscard]] bool groups_reusable(const Plan& plan) const;
  /// The input operation (node index) a plan names `name`; kNone: none, or ambiguous.
  [[nodiscard]] std::uint32_t op_of(const std::string& name) const;

  ir::Graph source_;  // the caller's graph (plan names resolve against it)
  ir::Graph input_;
  LowerOptions options_;
  RewriteComponents components_;
  std::unordered_map<std::string, std::uint32_t> op_by_name_;
  std::unordered_set<std::string> input_names_;  // labels and keys of operations, tensor labels
  Stats stats_;
};

}  // namespace tapestry::rewrite
