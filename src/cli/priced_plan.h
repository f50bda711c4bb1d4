// Pricing GRAPH under a plan on a target: what `cost` and `explain` share.
#pragma once

#include <string>
#include <vector>

#include "kernel_sources.h"
#include "tapestry/cost/explain.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/cost/target.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/workflow/price.h"

namespace CLI {
class App;
}

namespace tapestry::cli {

struct PricingOptions {
  std::string graph;
  std::vector<std::string> dims;  // --dim NAME=N
  std::string plan;
  std::vector<std::string> splits;
  std::string target;
  /// Instead of `target`: N devices rank:0 … rank:N-1 (workflow::rank_target, as `launch -n N`
  /// places a plan); 0: use `target`.
  std::uint32_t ranks = 0;
  KernelSources kernel_sources;
  bool trust_ipfs = false;
  bool ignore_placement = false;  // --ignore-placement
  std::string trace;              // --trace FILE: the predicted schedule as a Chrome trace
  /// Also price the baselines explain compares with (one device, data parallel): PricedPlan::gains.
  bool baselines = false;
};

using PricedPlan = workflow::Priced;

/// The options of `cost` and `explain`: GRAPH, --plan, --split, --target, --kernel-dir, --plugin,
/// --trust-ipfs, --ignore-placement.
void add_pricing_options(CLI::App* cmd, PricingOptions& options);

/// Loads the graph, plan and target, then workflow::price; an Error names the file (graph, plan or
/// target) at fault. The loaded graph goes to `graph` when given (codegen names its tensors).
PricedPlan price_plan(const PricingOptions& options, ir::Graph* graph = nullptr);

/// Writes --trace (cost::chrome_trace of the predicted schedule), all or nothing, and names the
/// file on stderr; nothing without --trace.
void write_predicted_trace(const PricingOptions& options, const PricedPlan& priced);

}  // namespace tapestry::cli
