// `tapestry explain`: a priced plan in PyTorch DTensor / JAX vocabulary.
//
//   tapestry explain examples/mlp.tap --plan examples/plans/mlp-megatron.json --target h100x8
//
// First the strategy in one line (data parallel ×8, tensor parallel ×8 (Megatron), 2-D, mixed, …)
// and the gain against one device and against the data-parallel standard plan; then per
// operation, its grid and each tensor's Shard(k) / Replicate() / Partial(sum) along it; every
// group of transfers with its pattern (all-gather, reduce, redistribute, host load/gather), bytes
// and devices; then the cost per device and the critical path (cost/explain.h). --format json for
// tools. Exit 0; 2 on bad input.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "priced_plan.h"
#include "tapestry/cost/explain.h"
#include "tapestry/support/error.h"

namespace tapestry::cli {

namespace {

struct ExplainOptions {
  PricingOptions pricing;
  std::string format = "text";
};

int run_explain(const ExplainOptions& options) {
  const PricedPlan priced = price_plan(options.pricing);
  write_predicted_trace(options.pricing, priced);
  cost::Explanation e = cost::explain(priced.lowered.graph, priced.placement, priced.target,
                                      priced.cost, priced.schedule);
  e.gains = priced.gains;
  e.recomputation = priced.recomputation;
  e.zero = priced.zero;
  e.pipeline = priced.pipeline;
  if (options.format == "json") {
    fmt::print("{}\n", cost::to_json(e).dump(2));
  } else {
    fmt::print("{}", cost::to_text(e));
  }
  return kExitOk;
}

}  // namespace

void register_explain(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "explain",
      "Explain a plan on a target: sharding (DTensor terms), communication, cost (exit 0; 2 = "
      "bad input)");
  add_pricing_options(cmd, options->pricing);
  options->pricing.baselines = true;
  cmd->add_option("--format", options->format, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&dispatch, options] {
    dispatch.name = "explain";
    dispatch.run = [options] { return run_explain(*options); };
  });
}

}  // namespace tapestry::cli
