// lower(graph, plan): an operation graph and a plan become an application graph.
//
// The pipeline, one named pass after another (each can be disabled by name, and the result is
// validated in the application dialect plus operation-kernel-agreement — a failure there is a bug
// in a rewrite, reported with the issues):
//
//   1. check-plan         every operation, dimension and count the plan names exists and fits
//   1a. zero              the parameters the plan's `zero` names sharded with their optimizer
//                         state: updates sliced, new values replicated (stages 1–2) or
//                         gathered before their uses and re-gathered for the backward pass
//                         (stage 3; zero.h); only when the plan has `zero`
//   1b. recompute         the operations the plan's `recompute` names copied for their later
//                         (backward) uses, with ordering edges (recompute.h); only when it
//                         names some
//   2. decompose-linear   linear → transpose(w), matmul, bias_add where the plan splits `in`
//                         or asks for it
//   3. split-reduction    a split reduction dim → partial op with a `block` dim + reduce
//   4. fuse-elementwise   explicit fusion groups / "fuse": "auto"
//   5. shard-grid         every cut checked first, for every operation (an impossible one is an
//                         error naming the operation the plan named and the refusal behind
//                         it); then every operation's index cut into its grid of Applications
//
// Steps 2–4 are rewrite patterns run by the driver (pattern.h) to a fixed point (step 1b is one
// pass over the whole graph: whether a reader is a later use is not a local fact); every applied
// rewrite and every refusal of something the plan asked for is in the log (`--explain`). Every
// pass is timed (LowerResult::passes, `tapestry shard --time-passes`); in debug builds the graph
// is also validated after every rewrite (kVerifyEachRewrite), so a rewrite that breaks it is
// named at once rather than found at the end.
//
//   Plan plan = parse_plan(R"({"ops": {"Y": {"split": {"batch": 2}}}})");
//   LowerResult r = lower(graph, plan);
//   r.graph.applications().size()   // 2 for linear_relu's Y, 1 for every other operation
//   r.lowered(x)                     // graph's tensor x as a tensor of r.graph
//   r.reduction_split                // false: no reduction dim was split
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/pattern.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::rewrite {

struct LowerOptions {
  DriverOptions driver;
  /// Validate the result in the application dialect (on by default; cheap).
  bool validate = true;
  /// With `validate`: also check operation-kernel-agreement (kernel_agreement.h) — every
  /// rewrite must keep operations what their kernels derive. Off for graphs whose IPFs the caller
  /// chose to trust (`--trust-ipfs`): their disagreement would survive lowering.
  bool check_kernels = true;
  /// Kernels the rewrites may instantiate.
  const metakernel::SignatureRegistry* signatures = &metakernel::builtin_signatures();
};

struct LowerResult {
  ir::Graph graph;                // the application graph
  Plan plan;                      // the plan as the rewrites left it (names of final operations)
  std::vector<RewriteEvent> log;  // applied rewrites and refusals
  /// Every tensor of the input graph that `graph` keeps → its id in `graph`. The rewrites keep a
  /// tensor's node (and key) or remove it — fusion removes the tensors inside a group — so the
  /// graph's inputs and outputs are always here.
  std::unordered_map<ir::TensorId, ir::TensorId> tensors;
  /// split-reduction applied: a reduction's partial results are added in another order than the
  /// unsharded graph adds them, so the result need not be bitwise the naive run's (verify.h).
  bool reduction_split = false;
  /// Each pass's time, in pipeline order: check-plan, every pattern, shard-grid, validate.
  std::vector<PassTime> passes;

  /// Input tensor `t` in `graph`; asserts that it is kept (`tensors`).
  [[nodiscard]] ir::TensorId lowered(ir::TensorId t) const;
  /// The input graph's tensor that `graph`'s tensor `t` is, if it is one of them.
  [[nodiscard]] std::optional<ir::TensorId> original(ir::TensorId t) const;
};

/// The rewrite patterns of steps 2–4, in order.
std::span<const OperationPattern* const> default_patterns();

/// Steps 1b–4 alone: the operation graph the rewrite patterns leave (no Application), the plan
/// naming its operations, and the log. No shard-grid or validation, and of check-plan only what
/// the rewrites find — the plan's derived entries (plan.h) that do not fit or name nothing are
/// in the state's `problems` — for callers that check the plan's other entries and cut the
/// operations themselves (cost::Evaluator, which memoises this part; check_plan).
/// Precondition: check_plan_entries(plan, graph) is empty.
RewriteState rewrite_operations(const ir::Graph& graph, const Plan& plan,
                                const LowerOptions& options, std::vector<RewriteEvent>& log);

/// Lowers `graph` (an operation graph; existing Applications are replaced) under `plan`.
/// Error listing every problem when the plan does not fit the graph.
LowerResult lower(const ir::Graph& graph, const Plan& plan, const LowerOptions& options = {});

}  // namespace tapestry::rewrite
