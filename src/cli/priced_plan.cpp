#include "priced_plan.h"

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "common_options.h"
#include "graph_input.h"
#include "tapestry/cost/explain.h"
#include "tapestry/workflow/mpi.h"
#include "tensor_files.h"

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
  add_dim_option(*cmd, options.dims);
  cmd->footer(exit_codes_footer());
  cmd->add_flag("--trust-ipfs", options.trust_ipfs, kTrustIpfsHelp);
  cmd->add_flag("--ignore-placement", options.ignore_placement, kIgnorePlacementHelp);
  cmd->add_option("--trace", options.trace,
                  "write the predicted schedule as a Chrome trace-event FILE (the format of `run "
                  "--trace`: open both in Perfetto)");
}

PricedPlan price_plan(const PricingOptions& options, ir::Graph* graph_out) {
  check_writable_file("--trace", options.trace);
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  const ir::Graph graph = load_graph(options.graph, signatures, options.trust_ipfs, options.dims);
  const rewrite::Plan plan =
      load_plan(graph, options.plan, options.splits, options.ignore_placement);
  const workflow::PriceOptions price_options{
      .lower = {.driver = {},
                .validate = true,
                .check_kernels = !options.trust_ipfs,
                .signatures = &signatures},
      .baselines = options.baselines,
      .plan_source = options.plan.empty() ? "--split" : options.plan};
  // The plan's errors before the target's, as a reader of the command line meets them.
  rewrite::LowerResult lowered = rewrite::lower(graph, plan, price_options.lower);
  PricedPlan priced =
      workflow::price_lowered(graph, plan, std::move(lowered),
                              options.ranks > 0 ? workflow::rank_target(options.ranks)
                                                : cost::resolve_target(options.target),
                              price_options);
  if (graph_out != nullptr) *graph_out = graph;
  return priced;
}

void write_predicted_trace(const PricingOptions& options, const PricedPlan& priced) {
  if (options.trace.empty()) return;
  StagedFiles files;
  files.add(options.trace, cost::chrome_trace(priced.lowered.graph, priced.placement, priced.target,
                                              priced.schedule)
                                   .dump() +
                               "\n");
  for (const std::filesystem::path& path : files.commit()) {
    fmt::print(stderr, "wrote {}\n", path.string());
  }
}

}  // namespace tapestry::cli
