#include "tapestry/rewrite/lower.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include "tapestry/ir/dialect.h"
#include "tapestry/rewrite/decompose_linear.h"
#include "tapestry/rewrite/fuse_elementwise.h"
#include "tapestry/rewrite/graph_copy.h"
#include "tapestry/rewrite/kernel_agreement.h"
#include "tapestry/rewrite/shard_grid.h"
#include "tapestry/rewrite/split_reduction.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {

std::span<const OperationPattern* const> default_patterns() {
  static const DecomposeLinear decompose_linear;
  static const SplitReduction split_reduction;
  static const FuseElementwise fuse_elementwise;
  static const OperationPattern* const patterns[] = {&decompose_linear, &split_reduction,
                                                     &fuse_elementwise};
  return patterns;
}

namespace {

void check_plan_or_throw(const Plan& plan, const ir::Graph& graph) {
  std::vector<std::string> problems = check_plan(plan, graph);
  if (problems.empty()) return;
  throw Error(fmt::format("the plan does not fit the graph:\n  {}", fmt::join(problems, "\n  ")));
}

// Step 5: every operation gets the grid of Applications its plan asks for.
void shard_all(RewriteState& state, std::vector<RewriteEvent>& log) {
  for (ir::OperationId op : state.graph.operations()) {
    const std::string name = operation_name(state.graph, op);
    const ir::OperationView view = state.graph.operation(op);
    std::vector<std::int64_t> parts;
    for (std::size_t d = 0; d < view.index_rank(); ++d) {
      parts.push_back(state.plan.split_of(name, view.index_name(d)));
    }
    if (auto why = match_shard_grid(state.graph, op, parts)) {
      throw Error(fmt::format("shard-grid cannot cut operation '{}': {}", name, *why));
    }
    const std::size_t shards = apply_shard_grid(state.graph, op, parts).size();
    if (shards > 1)
      log.push_back({std::string(kShardGrid), name, true, fmt::format("{} shards", shards)});
  }
}

// The dialect a graph is validated in: application when it has Applications, else operation;
// with operation-kernel-agreement unless the options say not.
ir::Dialect dialect_of(const ir::Graph& graph, const LowerOptions& options) {
  const ir::Dialect& base =
      graph.applications().empty() ? ir::Dialect::operation() : ir::Dialect::application();
  return options.check_kernels ? with_kernel_agreement(base, *options.kernels) : base;
}

}  // namespace

LowerResult lower(const ir::Graph& graph, const Plan& plan, const LowerOptions& options) {
  check_plan_or_throw(plan, graph);
  RewriteState state{copy_graph(graph).graph, plan, options.kernels};
  std::vector<RewriteEvent> log = run_patterns(state, default_patterns(), options.driver);
  if (!options.driver.disabled.contains(kShardGrid)) shard_all(state, log);
  if (options.validate) {
    ir::ValidationReport report = ir::validate(state.graph, dialect_of(state.graph, options));
    if (!report.is_valid()) {
      // A fault the input already had (a caller that skipped validating it) is bad input, not a
      // rewrite's bug: say so, with the input's issues.
      ir::ValidationReport input = ir::validate(graph, dialect_of(graph, options));
      if (!input.is_valid()) {
        throw Error(fmt::format("the graph to lower is invalid:\n{}",
                                ir::format_issues_text(input.issues)));
      }
      throw Error(fmt::format("internal error: the lowered graph is invalid:\n{}",
                              ir::format_issues_text(report.issues)));
    }
  }
  return LowerResult{std::move(state.graph), std::move(state.plan), std::move(log)};
}

}  // namespace tapestry::rewrite
