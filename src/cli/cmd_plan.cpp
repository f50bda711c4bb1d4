// `tapestry plan GRAPH [--json] [--plan P] [--split OP.DIM=N]`: what a plan for GRAPH can name.
//
//   tapestry plan examples/mlp.tap            every operation: kernel, index dims, extents,
//                                             reductions with their monoid, dim aliases
//   tapestry plan examples/mlp.tap --json     a plan skeleton (every count 1) to edit
//   tapestry plan examples/mlp.tap --plan P   also the operations P's rewrites derive (names a
//                                             plan may use too), each with its origin and plan
//
// The graph is loaded and checked as `run` and `shard` load it (a .tap program or loom JSON).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/plan_skeleton.h"
#include "tapestry/support/error.h"

namespace tapestry::cli {

namespace {

struct PlanOptions {
  std::string graph;
  KernelSources kernel_sources;
  bool json = false;
  std::string plan;
  std::vector<std::string> splits;
};

// The operations the plan's rewrites derive (an Error when the plan does not fit the graph).
std::vector<rewrite::OperationInfo> derived_by(const ir::Graph& graph, const rewrite::Plan& plan,
                                               const metakernel::SignatureRegistry& signatures) {
  const auto fail = [](const std::vector<std::string>& problems) {
    return Error(fmt::format("the plan does not fit the graph:\n  {}", fmt::join(problems, "\n  ")));
  };
  if (std::vector<std::string> problems = rewrite::check_plan_entries(plan, graph);
      !problems.empty()) {
    throw fail(problems);
  }
  const rewrite::LowerOptions options{.signatures = &signatures};
  std::vector<rewrite::RewriteEvent> log;
  const rewrite::RewriteState state = rewrite::rewrite_operations(graph, plan, options, log);
  if (!state.problems.empty()) throw fail(state.problems);
  return rewrite::derived_operations(state.derived);
}

int run_plan(const PlanOptions& options) {
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  const ir::Graph graph = load_graph(options.graph, signatures);
  std::vector<rewrite::OperationInfo> ops = rewrite::plannable_operations(graph);
  const bool planned = !options.plan.empty() || !options.splits.empty();
  if (planned) {
    for (rewrite::OperationInfo& d :
         derived_by(graph, load_plan(options.plan, options.splits), signatures)) {
      ops.push_back(std::move(d));
    }
  }
  // The skeleton cuts nothing, so its rewrites derive nothing: --json lists the graph's own.
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
  CLI::Option* json = cmd->add_flag(
      "--json", options->json,
      "print a plan skeleton instead (every operation, every dim split 1; edit the counts and "
      "pass it to --plan)");
  cmd->add_option("--plan", options->plan,
                     "also list the operations this plan's rewrites derive (Y/matmul, "
                     "Y/matmul/reduce, …), which a plan may name too, with the plan each gets")
      ->excludes(json);
  cmd->add_option("--split", options->splits, "shorthand for one split: OP.DIM=N (repeatable)")
      ->excludes(json);
  add_kernel_source_options(*cmd, options->kernel_sources);
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "plan";
    dispatch.run = [options] { return run_plan(*options); };
  });
}

}  // namespace tapestry::cli
