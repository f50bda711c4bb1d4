// zero: sharded parameters, gradients and optimizer state — ZeRO stages 1–3 and FSDP — as a
// rewrite of the operation graph and its plan (lower.h, step 1a).
//
// A plan's `"zero": {"stage": 3, "params": ["W1", "b1", "L*/W"], "shards": 2, "axis": "dp"}`
// (plan.h) names graph inputs — parameters, each updated by an optimizer kernel (sgd,
// sgd_momentum, adam: the operation reading it as its `param`) — and cuts each into `shards`
// blocks of rows (dim 0), block i on the device of shard i (the default placement's device i,
// or coordinate i of mesh axis `axis`). For each parameter W with update U:
//
//   * every stage: U is split along its dim 0 into `shards` (mesh `axis`), so shard i of the
//     optimizer update reads block i of W, of its gradient and of its optimizer state (momentum,
//     Adam's m and v: U's other graph inputs) and writes block i of the new W and state. A
//     graph input is resident where it is read (cost.md), so each device holds one block of the
//     state; the gradient's combine follows its consumers (split_reduction.h), so a gradient
//     split along the batch (data parallelism) is reduce-scattered, never all-reduced.
//   * stages 1 and 2: the new W (U's result, a graph output) is replicated on every device that
//     writes part of it (`"outputs": {"Wn": {"replicate": "all"}}`, or along `axis`): an
//     all-gather after the update, and W itself stays whole on every device that reads it. The
//     two stages build the same step: the reduced gradient only ever exists in the blocks the
//     sliced update reads, so stage 1 (DeepSpeed: all-reduce, then partition) gets stage 2's
//     gradient sharding for free.
//   * stage 3 (FSDP's FULL_SHARD): W stays sharded — its readers other than U read a gathered
//     copy instead, `W/gather = cast(W, to=<W's dtype>)` (a copy) split along dim 0 like U and
//     placed on the same devices, so each reader's device receives the other blocks: an
//     all-gather before the uses, its received blocks freed after their last reader. The new W
//     stays sharded (no replicate). A reader whose every path to the graph's results meets an
//     operation depending on another reader of W (the backward pass: `transpose(W2)` feeding
//     `linear_nobias(dY, ·)` after `Y = linear(H, W2, b2)`) reads a second gather instead,
//     `W/regather`, which starts after the first operation on those paths has its other
//     computed inputs (an ordering edge, ir/ordering.h): the backward pass re-gathers W rather
//     than keep the forward's copy alive. So on a 2-layer MLP step under stage 3:
//
//       W2/gather   = cast(W2, to=f32)       split d0 = 2     forward: Y = linear(H, W2/gather, …)
//       W2/regather = cast(W2, to=f32)       after dW1/add    dW1/transpose =
//       transpose(W2/regather) W2n         = adam(W2, dW2, W2_m, W2_v, step)         split d0 = 2,
//       stays sharded
//
// A gather writes each block once (a copy of the resident block) and the readers' devices
// receive the rest: the same bits as the parameter, so a sharded step equals the plain
// data-parallel step with the same kernels bitwise.
//
// Refused, with the reason in the log (`tapestry shard --explain`), and the parameter then left
// whole: a parameter no optimizer update reads as its `param` (or more than one does), one that
// does not start at the origin. The plan's errors (a name that is no graph input, a dim 0 that
// `shards` does not divide, a stage not 1–3) are check_plan's (plan.h).
#pragma once

#include <string_view>
#include <vector>

#include "tapestry/rewrite/pattern.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kZero = "zero";

/// The optimizer kernels whose `param` input the zero rewrite shards with its state.
inline constexpr std::string_view kOptimizerKernels[] = {"sgd", "sgd_momentum", "adam"};

/// Whether `kernel` is one of kOptimizerKernels.
[[nodiscard]] bool is_optimizer_kernel(std::string_view kernel);

/// Shards the parameters `state.plan.zero` names (see above): the update splits, the outputs'
/// replication (stages 1–2) or the gathers and their rewired readers (stage 3); every parameter
/// sharded and every refusal goes to `log`. Precondition: the plan's names are resolved
/// (resolve_plan_names) and no rewrite has run. Error when a re-gather's ordering edge would
/// form a cycle.
void shard_parameters(RewriteState& state, std::vector<RewriteEvent>& log);

}  // namespace tapestry::rewrite
