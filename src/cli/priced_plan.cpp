#include "priced_plan.h"

#include <CLI/CLI.hpp>

#include "common_options.h"
#include "graph_input.h"

namespace tapestry::cli {

void add_pricing_options(CLI::App* cmd, PricingOptions& options) {
  cmd->add_option("graph", options.graph, "the graph: a .tap program or loom JSON")->required();
  cmd->add_option("--plan", options.plan, "a plan file (JSON; see docs/rewrites.md)");
  cmd->add_option("--split", options.splits, "shorthand for one split: OP.DIM=N (repeatable)");
  cmd->add_option("--target", options.target,
                  "a target: a preset name (cpu-local, h100x8, …; `tapestry targets`) or a target "
                  "JSON file")
      ->required();
  add_kernel_source_options(*cmd, options.kernel_sources);
  cmd->footer(exit_codes_footer());
  cmd->add_flag("--trust-ipfs", options.trust_ipfs, kTrustIpfsHelp);
}

PricedPlan price_plan(const PricingOptions& options) {
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  const ir::Graph graph = load_graph(options.graph, signatures, options.trust_ipfs);
  const rewrite::Plan plan = load_plan(options.plan, options.splits);
  PricedPlan priced{.lowered = rewrite::lower(graph, plan,
                                              {.driver = {},
                                               .validate = true,
                                               .check_kernels = !options.trust_ipfs,
                                               .signatures = &signatures}),
                    .target = cost::resolve_target(options.target),
                    .placement = {},
                    .schedule = {},
                    .cost = {}};
  try {
    priced.placement = cost::place(priced.lowered.graph, priced.lowered.plan, priced.target);
  } catch (const Error& e) {
    throw e.with_context(options.plan.empty() ? "--split" : options.plan);
  }
  priced.cost = cost::simulate(priced.placement, priced.target, &priced.schedule);
  return priced;
}

}  // namespace tapestry::cli
