// Pricing a graph under a plan on a target without running it: lower → place → simulate, and
// optionally the baselines `explain` compares with — what `tapestry cost`, `tapestry explain`
// and the MPI run's placement share.
//
//   const Priced p = price(graph, plan, cost::resolve_target("h100x8"), {});
//   p.cost.makespan_s          // the predicted time of one run
//   p.placement.applications   // where each application runs
//
// The search and Python's Graph.cost price many plans of one graph through cost::Evaluator
// instead (equal to this, bit for bit, and memoised).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tapestry/cost/explain.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/cost/target.h"
#include "tapestry/rewrite/lower.h"

namespace tapestry::workflow {

struct PriceOptions {
  rewrite::LowerOptions lower;
  /// Also price the baselines explain compares with (one device, data parallel): Priced::gains.
  bool baselines = false;
  /// Where the plan came from (a file, "--split"): a placement Error names it.
  std::string plan_source;
};

struct Priced {
  rewrite::LowerResult lowered;
  cost::Target target;
  cost::Placement placement;
  cost::Schedule schedule;
  cost::CostVector cost;
  /// With PriceOptions::baselines: this plan against one device and against data parallelism.
  std::vector<cost::Gain> gains;
  /// With PriceOptions::baselines, for a plan that recomputes: against the plan keeping every
  /// activation (cost::recomputation_of).
  std::optional<cost::Recomputation> recomputation;
  /// With PriceOptions::baselines, for a plan with `zero`: against the plan without it
  /// (cost::zero_sharding_of).
  std::optional<cost::ZeroSharding> zero;
  /// For a plan with `pipeline`: its stages and bubble (cost::pipeline_of).
  std::optional<cost::PipelineStages> pipeline;
};

/// `lowered` placed on `target` (cost::place); an Error it raises (a place list naming a device
/// the target lacks) names `plan_source` when not empty.
cost::Placement place_lowered(const rewrite::LowerResult& lowered, const cost::Target& target,
                              const std::string& plan_source);

/// Lowers, places and simulates. Error when the plan does not fit the graph or the target.
Priced price(const ir::Graph& graph, const rewrite::Plan& plan, cost::Target target,
             const PriceOptions& options);

/// The same for `graph` already lowered under `plan` (its plan's errors reported before the
/// target is read).
Priced price_lowered(const ir::Graph& graph, const rewrite::Plan& plan,
                     rewrite::LowerResult lowered, cost::Target target,
                     const PriceOptions& options);

}  // namespace tapestry::workflow
