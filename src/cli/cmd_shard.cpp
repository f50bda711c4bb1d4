// `tapestry shard`: lower a graph under a plan into a sharded application graph.
//
//   tapestry shard examples/linear_relu.tap --split Y/linear.batch=2 -o sharded.json
//   tapestry shard examples/mlp.tap --plan examples/plans/mlp-megatron.json --explain -o mlp.json
//   tapestry shard examples/mlp.tap --plan P --target h100x8 -o placed.json   (placement dialect)
//
// The result validates in the application dialect. --explain prints every applied rewrite and
// every refusal of something the plan asked for (to stderr); --time-passes each pass's time.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/cost/placement.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/support/error.h"

namespace tapestry::cli {

namespace {

struct ShardOptions {
  std::string graph;
  std::vector<std::string> dims;  // --dim NAME=N
  std::string plan;
  std::vector<std::string> splits;
  std::string output;
  KernelSources kernel_sources;
  bool explain = false;
  bool time_passes = false;
  bool quiet = false;
  bool trust_ipfs = false;
  std::string target;
};

// --time-passes: each pass of lower's pipeline, its time and its work, on stderr.
void print_pass_times(const std::vector<rewrite::PassTime>& passes) {
  fmt::print(stderr, "{:<18} {:>10}  {}\n", "pass", "time", "work");
  double total = 0;
  for (const rewrite::PassTime& p : passes) {
    fmt::print(stderr, "{:<18} {:>7.3f} ms  {}\n", p.pass, p.seconds * 1e3, p.work);
    total += p.seconds;
  }
  fmt::print(stderr, "{:<18} {:>7.3f} ms\n", "total", total * 1e3);
}

int run_shard(const ShardOptions& options) {
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  const ir::Graph graph = load_graph(options.graph, signatures, options.trust_ipfs, options.dims);
  const rewrite::Plan plan = load_plan(graph, options.plan, options.splits);
  rewrite::LowerResult lowered = rewrite::lower(graph, plan,
                                                {.driver = {},
                                                 .validate = true,
                                                 .check_kernels = !options.trust_ipfs,
                                                 .signatures = &signatures});
  if (options.explain) {
    for (const rewrite::RewriteEvent& e : lowered.log) fmt::print(stderr, "{}\n", e.to_string());
    fmt::print(stderr, "{} operations, {} applications\n", lowered.graph.operations().size(),
               lowered.graph.applications().size());
  } else if (!options.quiet) {
    print_refused_fusions(lowered.log);
  }
  if (options.time_passes) print_pass_times(lowered.passes);
  if (!options.target.empty()) {  // place it: every application gets its Placement tag
    const cost::Target target = cost::resolve_target(options.target);
    cost::Placement placement;
    try {
      placement = cost::place(lowered.graph, lowered.plan, target);
    } catch (const Error& e) {
      throw e.with_context(options.plan.empty() ? "--split" : options.plan);
    }
    cost::annotate_placement(lowered.graph, placement, target);
  }
  if (options.output.empty()) {
    fmt::print("{}", ir::write_graph_json(lowered.graph));
  } else {
    ir::write_graph_file(lowered.graph, options.output);
  }
  return kExitOk;
}

}  // namespace

void register_shard(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<ShardOptions>();
  CLI::App* cmd =
      app.add_subcommand("shard", "Lower a graph under a plan into a sharded application graph");
  cmd->add_option("graph", options->graph, "the graph: a .tap program or loom JSON")->required();
  cmd->add_option("--plan", options->plan, "a plan file (JSON; see docs/rewrites.md)");
  cmd->add_option("--split", options->splits, "shorthand for one split: OP.DIM=N (repeatable)");
  cmd->add_option("-o,--output", options->output,
                  "where to write the application graph (default: stdout)");
  add_kernel_source_options(*cmd, options->kernel_sources);
  add_dim_option(*cmd, options->dims);
  cmd->add_flag("--explain", options->explain, "print the rewrites applied and refused (stderr)");
  cmd->add_flag("--time-passes", options->time_passes,
                "print each pass of the lowering with its time and work (rewrites applied, "
                "operations cut) on stderr");
  cmd->add_flag("--quiet", options->quiet,
                "do not print the fusions the plan asked for and the rewrites refused (printed "
                "by default, one line each on stderr)");
  cmd->add_flag("--trust-ipfs", options->trust_ipfs, kTrustIpfsHelp);
  cmd->add_option("--target", options->target,
                  "place the shards on this target (preset or file): every application gets a "
                  "Placement tag (its device and the transfers it receives); see docs/cost.md");
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "shard";
    dispatch.run = [options] { return run_shard(*options); };
  });
}

}  // namespace tapestry::cli
