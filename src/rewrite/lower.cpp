#include "tapestry/rewrite/lower.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>

#include "tapestry/ir/dialect.h"
#include "tapestry/rewrite/cut_refusal.h"
#include "tapestry/rewrite/decompose_linear.h"
#include "tapestry/rewrite/fuse_elementwise.h"
#include "tapestry/rewrite/graph_copy.h"
#include "tapestry/rewrite/kernel_agreement.h"
#include "tapestry/rewrite/pipeline.h"
#include "tapestry/rewrite/recompute.h"
#include "tapestry/rewrite/shard_grid.h"
#include "tapestry/rewrite/split_reduction.h"
#include "tapestry/rewrite/zero.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/cancel.h"
#include "tapestry/support/diagnostic.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/grid.h"
#include "tapestry/zspace/json.h"

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

void throw_if_any(std::vector<support::Diagnostic> problems) {
  if (problems.empty()) return;
  throw support::DiagnosticError("the plan does not fit the graph", std::move(problems));
}

// After the rewrites: a derived entry no rewrite took, or a fusion group member naming an
// operation neither the graph nor the rewrites have, names nothing (plan.h).
void check_derived_names(RewriteState& state, const Plan& plan, const ir::Graph& graph) {
  if (state.derived_entries.empty()) {
    bool grouped = false;  // a fusion group member the graph lacks
    for (const auto& group : plan.fuse) {
      for (const std::string& name : group) grouped |= !find_operation(graph, name);
    }
    if (!grouped) return;
  }
  std::vector<std::string> known, derived;
  for (ir::OperationId op : graph.operations()) known.push_back(operation_name(graph, op));
  for (const DerivedOperation& d : state.derived) derived.push_back(d.name);
  const auto missing = [&](std::string path, const std::string& name) {
    return support::Diagnostic::at_pointer(
        std::move(path),
        fmt::format("no operation named '{}' (operations: {}; {})", name, fmt::join(known, ", "),
                    derived.empty() ? std::string("the rewrites of this plan derive none")
                                    : fmt::format("derived by the rewrites of this plan: {}",
                                                  fmt::join(derived, ", "))));
  };
  for (const auto& [name, entry] : state.derived_entries) {
    state.problems.push_back(missing("/ops/" + zspace::json_pointer_token(name), name));
  }
  for (std::size_t g = 0; g < plan.fuse.size(); ++g) {
    for (std::size_t i = 0; i < plan.fuse[g].size(); ++i) {
      const std::string& name = plan.fuse[g][i];
      if (find_operation(graph, name) ||
          std::find(derived.begin(), derived.end(), name) != derived.end()) {
        continue;
      }
      state.problems.push_back(missing(fmt::format("/fuse/{}/{}", g, i), name));
    }
  }
}

// The shard counts the plan gives `op`, one per index dim.
std::vector<std::int64_t> parts_of(const RewriteState& state, ir::OperationId op) {
  const std::string name = operation_name(state.graph, op);
  const ir::OperationView view = state.graph.operation(op);
  std::vector<std::int64_t> parts;
  for (std::size_t d = 0; d < view.index_rank(); ++d) {
    parts.push_back(state.plan.split_of(name, view.index_name(d)));
  }
  return parts;
}

// Why shard-grid cannot cut `op`, for the user: the operation the plan named, and — for a cut
// of a reduction dim, which only split-reduction can do — the refusals of the rewrites that
// would have done it (the real reason), else shard-grid's own.
}  // namespace

std::string cut_subject(std::string_view origin, std::string_view name) {
  return origin == name ? fmt::format("operation '{}'", name)
                        : fmt::format("operation '{}' (as '{}' after the rewrites)", origin, name);
}

std::string shard_grid_refusal(std::string_view subject, std::string_view why) {
  return fmt::format("{}: shard-grid cannot cut it: {}", subject, why);
}

std::string plan_refusal(std::span<const std::string> problems) {
  return fmt::format("the plan cannot be carried out:\n  {}", fmt::join(problems, "\n  "));
}

namespace {

std::string explain_cut(const RewriteState& state, ir::OperationId op,
                        std::span<const std::int64_t> parts, const std::string& why,
                        const std::vector<RewriteEvent>& log) {
  const std::string name = operation_name(state.graph, op);
  const std::string origin = state.origin(name);
  const std::string subject = cut_subject(origin, name);
  const ir::OperationView view = state.graph.operation(op);
  for (std::size_t d = 0; d < parts.size(); ++d) {
    if (parts[d] == 1 || !view.reduction(d)) continue;
    // The refusals of the operation as the plan named it; else of what it became (a fused
    // operation repeats its producer's refusal in the fused op's terms: not shown).
    std::vector<std::string> refusals;
    for (bool as_named : {true, false}) {
      for (const RewriteEvent& e : log) {
        if (!e.applied && e.origin == origin && (e.target == origin) == as_named &&
            (e.pattern == kSplitReduction || e.pattern == kDecomposeLinear)) {
          std::string line = fmt::format("{} refused: {}", e.pattern, e.detail);
          if (std::find(refusals.begin(), refusals.end(), line) == refusals.end())
            refusals.push_back(std::move(line));
        }
      }
      if (!refusals.empty()) break;
    }
    if (!refusals.empty()) {
      return fmt::format("{}: cannot split reduction dim '{}' into {}: {}", subject,
                         view.index_name(d), parts[d], fmt::join(refusals, "; "));
    }
  }
  return shard_grid_refusal(subject, why);
}

// Step 5a: every cut is possible — checked for every operation before any Application is made,
// so a plan fails whole and early, with every problem.
void check_cuts(const RewriteState& state, const std::vector<RewriteEvent>& log) {
  std::vector<std::string> problems;
  for (ir::OperationId op : state.graph.operations()) {
    const std::vector<std::int64_t> parts = parts_of(state, op);
    if (auto why = match_shard_grid(state.graph, op, parts)) {
      problems.push_back(explain_cut(state, op, parts, *why, log));
    }
  }
  if (problems.empty()) return;
  throw Error(plan_refusal(problems));
}

// Step 5b: every operation gets the grid of Applications its plan asks for, numbered as
// first_application_ids says (the numbering cost::Evaluator prices by).
void shard_all(RewriteState& state, std::vector<RewriteEvent>& log) {
  const std::vector<ir::OperationId> ops(state.graph.operations().begin(),
                                         state.graph.operations().end());
  std::vector<std::vector<std::int64_t>> parts;
  std::vector<std::int64_t> counts;
  for (ir::OperationId op : ops) {
    parts.push_back(parts_of(state, op));
    const zspace::Grid grid(*state.graph.operation(op).ipf_index(), parts.back());
    counts.push_back(static_cast<std::int64_t>(grid.size()));
  }
  const std::vector<std::int64_t> first = first_application_ids(state.graph, counts);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    support::check_cancelled();  // the state is lower's own: abandoned whole
    const std::string name = operation_name(state.graph, ops[i]);
    const std::vector<ir::ApplicationId> added = apply_shard_grid(state.graph, ops[i], parts[i]);
    TAPESTRY_ASSERT(static_cast<std::int64_t>(added.front().index()) == first[i],
                    "shard-grid numbered Applications other than first_application_ids");
    const std::size_t shards = added.size();
    if (shards > 1) {
      log.push_back({std::string(kShardGrid), name, state.origin(name), true,
                     fmt::format("{} shards", shards)});
    }
  }
}

// The dialect a graph is validated in: application when it has Applications, else operation;
// with operation-kernel-agreement unless the options say not.
ir::Dialect dialect_of(const ir::Graph& graph, const LowerOptions& options) {
  const ir::Dialect& base =
      graph.applications().empty() ? ir::Dialect::operation() : ir::Dialect::application();
  return options.check_kernels ? with_kernel_agreement(base, *options.signatures) : base;
}

// Runs `step`, adding its time to a new entry `name` of `passes`; returns the entry.
template <typename Step>
PassTime& timed(std::vector<PassTime>& passes, std::string_view name, Step&& step) {
  const auto start = std::chrono::steady_clock::now();
  std::forward<Step>(step)();
  passes.push_back(
      {.pass = std::string(name),
       .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
       .work = 0});
  return passes.back();
}

// Every tensor of `input` that `lowered` keeps: the tensor of the same key (copy_graph keeps
// keys; a rewrite keeps a tensor's node or removes it, and a removed node's key stays taken until
// the driver's last copy, after which only Applications are added) and, to be sure, label.
std::unordered_map<ir::TensorId, ir::TensorId> kept_tensors(const ir::Graph& input,
                                                            const ir::Graph& lowered) {
  std::unordered_map<ir::TensorId, ir::TensorId> kept;
  for (ir::TensorId t : input.tensors()) {
    const std::optional<ir::NodeId> node = lowered.find(input.key(t));
    if (!node) continue;
    const std::optional<ir::TensorId> same = lowered.as_tensor(*node);
    if (same && lowered.tensor(*same).label() == input.tensor(t).label()) kept.emplace(t, *same);
  }
  return kept;
}

bool applied(const std::vector<RewriteEvent>& log, std::string_view pattern) {
  return std::any_of(log.begin(), log.end(),
                     [&](const RewriteEvent& e) { return e.applied && e.pattern == pattern; });
}

}  // namespace

ir::TensorId LowerResult::lowered(ir::TensorId t) const {
  const auto found = tensors.find(t);
  TAPESTRY_ASSERT(found != tensors.end(), "a tensor of the input graph that lowering removed");
  return found->second;
}

std::optional<ir::TensorId> LowerResult::original(ir::TensorId t) const {
  for (const auto& [from, to] : tensors) {
    if (to == t) return from;
  }
  return std::nullopt;
}

RewriteState rewrite_operations(const ir::Graph& graph, const Plan& plan,
                                const LowerOptions& options, std::vector<RewriteEvent>& log) {
  RewriteState state{.graph = copy_graph(graph).graph,
                     .plan = resolve_plan_names(plan, graph),
                     .signatures = options.signatures,
                     .origins = {},
                     .derived_entries = {},
                     .derived = {},
                     .problems = {}};
  const OperationFinder finder(graph);
  for (auto it = state.plan.ops.begin(); it != state.plan.ops.end();) {
    if (finder.find(it->first)) {
      ++it;
    } else {  // a derived entry: the rewrite that adds an operation of its name takes it
      state.derived_entries.emplace(it->first, std::move(it->second));
      it = state.plan.ops.erase(it);
    }
  }
  log.clear();
  // The whole-graph passes (steps 1a, 1b), each timed with the rewrites it applied as its work.
  const auto whole_graph_pass = [&](std::string_view name, bool asked, auto&& pass) {
    if (!asked || options.driver.disabled.contains(name)) return;
    support::check_cancelled();
    const auto start = std::chrono::steady_clock::now();
    pass(state, log);
    if (options.driver.times == nullptr) return;
    options.driver.times->push_back(
        {.pass = std::string(name),
         .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
         .work = std::count_if(log.begin(), log.end(),
                               [](const RewriteEvent& e) { return e.applied; })});
  };
  whole_graph_pass(kZero, state.plan.zero.has_value(), shard_parameters);
  whole_graph_pass(kRecompute, !state.plan.recompute.empty(), recompute_operations);
  whole_graph_pass(kPipeline, state.plan.pipeline.has_value(), pipeline_operations);
  support::check_cancelled();
  std::vector<RewriteEvent> rewrites = run_patterns(state, default_patterns(), options.driver);
  support::check_cancelled();
  log.insert(log.end(), rewrites.begin(), rewrites.end());
  write_ordering_edges(state);
  check_derived_names(state, plan, graph);
  return state;
}

LowerResult lower(const ir::Graph& graph, const Plan& plan, const LowerOptions& options) {
  std::vector<PassTime> passes;
  // A plan entry with a problem: every problem at once, those of derived entries included.
  timed(passes, "check-plan", [&] {
    if (!check_plan_entries(plan, graph).empty()) throw_if_any(check_plan(plan, graph));
  });
  LowerOptions rewriting = options;
  rewriting.driver.times = &passes;
  // Debug builds only (a release build makes no dialect here), and only from a valid input: a
  // fault the input already had is the validate step's to report.
  std::optional<ir::Dialect> operation_dialect;
  if (kVerifyEachRewrite && rewriting.driver.verify_each == nullptr &&
      graph.applications().empty()) {
    operation_dialect = dialect_of(graph, options);
    if (ir::validate(graph, *operation_dialect).is_valid()) {
      rewriting.driver.verify_each = &*operation_dialect;
    }
  }
  std::vector<RewriteEvent> log;
  RewriteState state = rewrite_operations(graph, plan, rewriting, log);
  throw_if_any(state.problems);
  if (!options.driver.disabled.contains(kShardGrid)) {
    const std::size_t before = log.size();
    PassTime& time = timed(passes, kShardGrid, [&] {
      check_cuts(state, log);
      shard_all(state, log);
      support::check_cancelled();
      write_pipeline_schedule(state);
    });
    time.work = static_cast<std::int64_t>(log.size() - before);
  }
  if (options.validate) {
    timed(passes, "validate", [&] {
      ir::ValidationReport report = ir::validate(state.graph, dialect_of(state.graph, options));
      if (report.is_valid()) return;
      // A fault the input already had (a caller that skipped validating it) is bad input, not a
      // rewrite's bug: say so, with the input's issues.
      ir::ValidationReport input = ir::validate(graph, dialect_of(graph, options));
      if (!input.is_valid()) {
        throw Error(fmt::format("the graph to lower is invalid:\n{}",
                                ir::format_issues_text(input.issues)));
      }
      // A valid input lowered into an invalid graph is a rewrite's bug: the internal channel
      // (not tapestry::Error), so the CLI says "internal error" and exits 3.
      throw std::logic_error(
          fmt::format("the lowered graph is invalid:\n{}", ir::format_issues_text(report.issues)));
    });
  }
  std::unordered_map<ir::TensorId, ir::TensorId> tensors = kept_tensors(graph, state.graph);
  const bool reduction_split = applied(log, kSplitReduction);
  return LowerResult{.graph = std::move(state.graph),
                     .plan = std::move(state.plan),
                     .log = std::move(log),
                     .tensors = std::move(tensors),
                     .reduction_split = reduction_split,
                     .passes = std::move(passes)};
}

}  // namespace tapestry::rewrite
