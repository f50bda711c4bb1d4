// `tapestry plan GRAPH [--json]`: what a plan for GRAPH can name.
//
//   tapestry plan examples/mlp.tap            every operation: kernel, index dims, extents,
//                                             reductions with their monoid, dim aliases
//   tapestry plan examples/mlp.tap --json     a plan skeleton (every count 1) to edit
//
// The graph is loaded and checked as `run` and `shard` load it (a .tap program or loom JSON).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/rewrite/plan_skeleton.h"

namespace tapestry::cli {

namespace {

struct PlanOptions {
  std::string graph;
  KernelSources kernel_sources;
  bool json = false;
};

int run_plan(const PlanOptions& options) {
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  const ir::Graph graph = load_graph(options.graph, signatures);
  const std::vector<rewrite::OperationInfo> ops = rewrite::plannable_operations(graph);
  fmt::print("{}",
             options.json ? rewrite::plan_skeleton_json(ops) : rewrite::format_operations(ops));
  return kExitOk;
}

}  // namespace

void register_plan(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "List what a plan can name: operations, kernels, index dims; --json: a skeleton");
  cmd->add_option("graph", options->graph, "the graph: a .tap program or loom JSON")->required();
  cmd->add_flag("--json", options->json,
                "print a plan skeleton instead (every operation, every dim split 1; edit the "
                "counts and pass it to --plan)");
  add_kernel_source_options(*cmd, options->kernel_sources);
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "plan";
    dispatch.run = [options] { return run_plan(*options); };
  });
}

}  // namespace tapestry::cli
