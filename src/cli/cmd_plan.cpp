// `tapestry plan GRAPH [--json] [--plan P] [--split OP.DIM=N] [--standard NAME --target T]`:
// what a plan for GRAPH can name, and the standard plans.
//
//   tapestry plan examples/mlp.tap            every operation: kernel, index dims, extents,
//                                             reductions with their monoid, dim aliases
//   tapestry plan examples/mlp.tap --json     a plan skeleton (every count 1) to edit
//   tapestry plan examples/mlp.tap --standard megatron --target h100x8
//                                             the standard plan as JSON (cost/standard_plans.h);
//                                             exit 1 with the reason when it does not apply
//   tapestry plan examples/mlp.tap --standard all --target h100x8
//                                             every standard plan's summary, or why not
//   tapestry plan examples/mlp.tap --plan P   also the operations P's rewrites derive (names a
//                                             plan may use too), each with its origin and plan
//
// The graph is loaded and checked as `run` and `shard` load it (a .tap program or loom JSON).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/cost/standard_plans.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/plan_skeleton.h"
#include "tapestry/support/diagnostic.h"
#include "tapestry/support/error.h"

namespace tapestry::cli {

namespace {

struct PlanOptions {
  std::string graph;
  std::vector<std::string> dims;  // --dim NAME=N
  KernelSources kernel_sources;
  bool json = false;
  std::string standard;  // --standard NAME | all
  std::string target;
  std::string plan;
  std::vector<std::string> splits;
};

// A plan as JSON text, one operation a line (the skeleton's layout).
std::string plan_text(const rewrite::Plan& plan) {
  const nlohmann::json j = plan.to_json();
  std::string out = "{\n  \"ops\": {";
  bool first = true;
  for (const auto& [name, entry] : j["ops"].items()) {
    out +=
        fmt::format("{}\n    {}: {}", first ? "" : ",", nlohmann::json(name).dump(), entry.dump());
    first = false;
  }
  out += first ? "}" : "\n  }";
  for (const auto& [key, value] : j.items()) {
    if (key != "ops") out += fmt::format(",\n  {}: {}", nlohmann::json(key).dump(), value.dump());
  }
  return out + "\n}\n";
}

int run_standard(const PlanOptions& options, const ir::Graph& graph,
                 const metakernel::SignatureRegistry& signatures) {
  if (options.target.empty()) throw Error("--standard needs --target (the machine to plan for)");
  const cost::Target target = cost::resolve_target(options.target);
  const rewrite::LowerOptions lower{.signatures = &signatures};
  if (options.standard != "all") {
    const cost::StandardPlan s =
        cost::checked_standard_plan(graph, target, options.standard, lower);
    if (!s.plan) {
      fmt::print(stderr, "tapestry plan: {} does not apply to {} on {}: {}\n", s.name,
                 options.graph, target.name, s.reason);
      return kExitFailed;
    }
    fmt::print("{}", plan_text(*s.plan));
    return kExitOk;
  }
  for (const std::string& name : cost::standard_plan_names()) {
    const cost::StandardPlan s = cost::checked_standard_plan(graph, target, name, lower);
    fmt::print("{:<14} {}\n", s.name,
               s.plan ? s.summary : fmt::format("does not apply: {}", s.reason));
  }
  return kExitOk;
}

// The operations the plan's rewrites derive (the plan was checked against the graph when loaded:
// load_plan).
std::vector<rewrite::OperationInfo> derived_by(const ir::Graph& graph, const rewrite::Plan& plan,
                                               const metakernel::SignatureRegistry& signatures) {
  const rewrite::LowerOptions options{.signatures = &signatures};
  std::vector<rewrite::RewriteEvent> log;
  const rewrite::RewriteState state = rewrite::rewrite_operations(graph, plan, options, log);
  if (!state.problems.empty())
    throw support::DiagnosticError("the plan does not fit the graph", state.problems);
  return rewrite::derived_operations(state.derived);
}

int run_plan(const PlanOptions& options) {
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  const ir::Graph graph = load_graph(options.graph, signatures, false, options.dims);
  if (!options.standard.empty()) return run_standard(options, graph, signatures);
  std::vector<rewrite::OperationInfo> ops = rewrite::plannable_operations(graph);
  const bool planned = !options.plan.empty() || !options.splits.empty();
  if (planned) {
    for (rewrite::OperationInfo& d :
         derived_by(graph, load_plan(graph, options.plan, options.splits), signatures)) {
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
  cmd->add_option("--standard", options->standard,
                  "print a standard plan as JSON: data-parallel, megatron, megatron-rs, 2d, zero3, "
                  "megatron-3d-full, megatron-3d-selective; or "
                  "all: each one's summary (exit 1 when NAME does not apply, with the reason)");
  cmd->add_option("--target", options->target,
                  "with --standard: the target to plan for (a preset name or a target file)");
  add_kernel_source_options(*cmd, options->kernel_sources);
  add_dim_option(*cmd, options->dims);
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "plan";
    dispatch.run = [options] { return run_plan(*options); };
  });
}

}  // namespace tapestry::cli
