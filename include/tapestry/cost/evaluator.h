// Evaluator: prices many plans of one graph on one target — the search's inner loop.
//
// `evaluate(plan)` returns exactly `simulate(place(lower(graph, plan), target), target)` (lowered
// with `validate = false`), bit for bit, and throws the same Error for a plan that does not fit.
// It does not validate what the rewrites build (a search 1.6–1.8× slower, docs/optimizer.md): a
// plan it prices is one `lower` builds because every rewrite's match refuses what its apply
// cannot build (docs/rewrites.md, "The legality rule") and depends only on what the memo key
// below keeps; tests/search/optimize_properties_test.cpp checks that every plan it prices
// lowers with validation. It is fast because it does not redo what the plans of one graph share:
//
// * The rewrites (decompose-linear, split-reduction, fuse-elementwise: lower.h steps 2–4) are
//   memoised by the part of the plan they depend on: which operations the plan names, the
//   substitutions, the fusion groups, whether an operation is placed and its mesh, the count of
//   every reduction dim, and — for the other dims — only which counts equal 1 and which equal one
//   another (fuse-elementwise refuses consumers whose splits disagree with their producer's). So
//   `{"Y": {"split": {"batch": 2}}}` and `{"Y": {"split": {"batch": 4}}}` share one rewritten
//   graph, and so do plans that differ only in `place` lists. On a miss the rewrites run once on
//   the plan with those counts as symbols (rewrite/symbolic.h, pattern.h), and the rewritten plan
//   says where each split and place list comes from. The memo holds rewritten graphs of at most
//   `memo_operations` operations in all (the least recently used go first): a search meets
//   thousands of rewrite structures, and each of a deep model's takes megabytes.
// * A miss is rewritten *incrementally* (rewrite/incremental.h) from the rewrites of the last
//   plan priced: the graph's operations fall into rewrite components (what the patterns may act
//   across, pattern.h), the counts are numbered per component (SymbolicPlans::
//   number_per_component), and only the components whose entries — or a neighbour's — changed
//   are rewritten; the others' rewritten nodes are copied from the last rewritten graph. The
//   result is the graph a fresh rewrite gives, node for node. A mutation of one operation's entry
//   on ViT-B/16 rewrites a few of its components instead of all 547 operations; plans with
//   fusion groups, zero, recompute or a pipeline are rewritten whole (stats(): `incremental`,
//   `components_rewritten`, `components_reused`).
// * Shard-grid, placement and simulation run for every plan, but from the rewritten operations
//   directly — boxes are computed from each operation's IPFs and grid cell, never stored as
//   Applications — into storage reused from one evaluation to the next
//   (cost/placement_builder.h holds the placement rules place() shares).
//
// Anything the fast path cannot decide — a name or dim the graph lacks, a count out of range, a
// cut shard-grid refuses, a device the target lacks — is answered by the reference path
// (lower → place → simulate), so errors are exactly lower's and place's.
//
//   Evaluator ev(graph, *preset_target("h100x8"));
//   CostVector a = ev.evaluate(parse_plan(R"({"ops": {"Y": {"split": {"batch": 2}}}})"));
//   CostVector b = ev.evaluate(parse_plan(R"({"ops": {"Y": {"split": {"batch": 8}}}})"));
//   ev.stats().rewrites_run == 1   // b reused a's rewritten graph
//
// Not thread-safe: one Evaluator per thread (the search gives each worker its own).
#pragma once

#include <cstddef>
#include <memory>

#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::cost {

struct EvaluatorStats {
  std::size_t evaluations = 0;
  std::size_t rewrites_run = 0;  // memo misses: the rewrite patterns ran
  std::size_t reference = 0;     // evaluations answered by lower → place → simulate
  std::size_t evicted = 0;       // rewritten graphs dropped from the memo to bound it
  /// Of the misses, those rewritten from the last one's rewrites (rewrite/incremental.h), and
  /// over them, the rewrite components rewritten and reused.
  std::size_t incremental = 0;
  std::size_t components_rewritten = 0;
  std::size_t components_reused = 0;
  /// Operations placed from a fragment of an earlier plan (their boxes, work and reads reused).
  std::size_t operations_reused = 0;
};

class Evaluator {
 public:
  /// The memo's default bound, in operations of the rewritten graphs it holds: ~16 rewrite
  /// structures of a 500-operation model (5-15 MB each), hundreds of a small one. A 24-layer
  /// transformer search on 2 threads peaks near 1 GB with it (1.6 GB at twice the bound).
  static constexpr std::size_t kMemoOperations = 8192;

  /// Copies `graph` (an operation graph) and `target`. `options` are lower's (driver, signatures);
  /// `validate` is ignored (off).
  Evaluator(const ir::Graph& graph, const Target& target, const rewrite::LowerOptions& options = {},
            std::size_t memo_operations = kMemoOperations);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  /// simulate(place(lower(graph, plan)), target). Error as lower or place throws it.
  CostVector evaluate(const rewrite::Plan& plan);
  /// place(lower(graph, plan)) — equal field by field, Application ids included. The reference
  /// stays valid until the next call.
  const Placement& place(const rewrite::Plan& plan);
  /// The rewritten graphs memoised so far are dropped.
  void clear_memo();

  [[nodiscard]] const EvaluatorStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tapestry::cost
