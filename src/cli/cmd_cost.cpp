// `tapestry cost`: what a plan costs on a target — without running it.
//
//   tapestry cost examples/mlp.tap --plan examples/plans/mlp-megatron.json --target h100x8
//   tapestry cost examples/mlp.tap --target targets/cpu-local.json --json
//
// Lowers the graph under the plan, places every application on a device of the target
// (cost/placement.h) and simulates the schedule (cost/simulate.h). Prints a short table, or with
// --json the CostVector: makespan_s, peak_memory_bytes, devices_used, energy_j, bytes_moved, fits,
// per_device. Exit 0; 2 on bad input (graph, plan, target, placement).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "graph_input.h"
#include "priced_plan.h"
#include "tapestry/cost/explain.h"

namespace tapestry::cli {

namespace {

struct CostOptions {
  PricingOptions pricing;
  bool json = false;
};

int run_cost(const CostOptions& options) {
  const PricedPlan priced = price_plan(options.pricing);
  write_predicted_trace(options.pricing, priced);
  if (options.json) {
    fmt::print("{}\n", cost::to_json(priced.cost).dump(2));
    return kExitOk;
  }
  const cost::Explanation e = cost::explain(priced.lowered.graph, priced.placement, priced.target,
                                            priced.cost, priced.schedule);
  const std::string text = cost::to_text(e);
  fmt::print("{}", text.substr(text.find("\nCost\n") + 1));
  return kExitOk;
}

}  // namespace

void register_cost(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<CostOptions>();
  CLI::App* cmd = app.add_subcommand(
      "cost", "Price a plan on a target without running it (exit 0; 2 = bad input)");
  add_pricing_options(cmd, options->pricing);
  cmd->add_flag("--json", options->json, "print the CostVector as JSON");
  cmd->callback([&dispatch, options] {
    dispatch.name = "cost";
    dispatch.run = [options] { return run_cost(*options); };
  });
}

}  // namespace tapestry::cli
