// pipeline: pipeline parallelism — microbatches, stages and a schedule — as a rewrite of the
// operation graph and its plan (lower.h, step 1c) and ordering edges between the microbatch
// Applications (after shard-grid).
//
// A plan's `"pipeline": {"stages": [["H1/*"], ["H2/*", "Y"]], "microbatches": 4,
// "schedule": "1f1b"}` (plan.h) names each stage's forward operations (names, or patterns where
// `*` stands for any characters), in the order of the forward pass. The pass:
//
//   * gives every other operation a stage: the latest stage among the named operations that
//     read or write a tensor it reads (a weight counts for its readers' stage, and so does what
//     is computed from weights only: transpose(W2)), else the latest stage of its producers.
//     So a layer's backward operations go with the layer — relu_grad(H2/linear, dH2) reads
//     H2/linear, a tensor of stage 1; linear_grad_w(H1, dZ2) reads H1, which stage 1 reads —
//     and the loss, its seed and its gradient go with the last stage;
//   * cuts the batch of every operation that has one (rewrite/graph_roles.h: an activation's
//     dim 0 and what follows it) into `microbatches` equal pieces — a split of its batch dim,
//     whose shards are the microbatch Applications. A weight gradient sums over the batch, so
//     its cut is a split reduction: per-microbatch partial gradients summed by the combine, in
//     microbatch order — the gradient accumulation;
//   * places every operation of stage s on the stage's device (`devices[s]`, else `#s`: the
//     target's device s), so an activation crossing a stage boundary, and its gradient coming
//     back, are the placement's transfers — point-to-point messages under MPI;
//   * a stage on a *group* of G devices (`"devices": [["#0", "#1"], ["#2", "#3"]]`) runs data
//     parallel inside the stage: each batched operation's batch is cut into M × G pieces, piece i
//     (microbatch i / G) on the group's device i mod G (the placement cycles `place` over the
//     shards), so a weight gradient sums M × G partials, and what has no batch (an update, a
//     transpose(W)) runs on the group's first device. Tensor parallelism inside a stage (an
//     operation the plan splits or places itself) is still refused;
//   * makes the gradient seed not wait for the whole batch's loss: `ones_like(L)` reads L for
//     its shape only, so it is made to read `L/shape = sum_to(P, shape=[])` of a graph input P of
//     the loss's dtype instead (the same ones), and microbatch 0's backward pass can start before
//     microbatch 3's forward pass is done.
//
// After shard-grid, write_pipeline_schedule adds the schedule as ordering edges between
// Applications of one stage (an Application body field `"after"`, ir/ordering.h), by the
// microbatch each computes (the rows of a cut tensor it touches):
//
//   gpipe: every backward Application of stage s starts after the forward Applications of the
//          last microbatch on stage s (all forwards, then all backwards);
//   1f1b:  with w = min(stages − s − 1, microbatches − 1) warm-up forwards on stage s, the
//          forward of microbatch k > w starts after the backward of microbatch k − w − 1, and
//          the backward of microbatch j after the forward of microbatch min(j + w, M − 1): at
//          most w + 1 microbatches' activations live on stage s at a time.
//
// "Group B after group A" is written as edges from B's sources to A's sinks only (the
// applications of B that read nothing another application of B writes, and those of A whose
// outputs no other application of A reads): a group runs on one device and its data edges order
// the rest, so the start times and the program's order are those of every-to-every edges, which
// a 24-layer step cut 64 ways had millions of.
//
// Errors (a plan the pass cannot build; nothing is half-written): stages that are not
// contiguous in the forward order (a stage-0 operation that depends on a stage-1 one), a batch
// the microbatch count does not divide, an operation whose batch the plan already splits or
// that the plan places itself (place, mesh, colocate), a step with no gradient seed (`ones_like`
// of a scalar loss). A stage device the target lacks is the placement's error (cost/placement.h).
#pragma once

#include <string_view>
#include <vector>

#include "tapestry/rewrite/pattern.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kPipeline = "pipeline";

/// Stages, microbatch splits, placement and the seed's rewiring (see above), recorded in
/// `state.pipeline` for write_pipeline_schedule; what it did goes to `log`. Precondition: the
/// plan's names are resolved and the zero and recompute passes (steps 1a, 1b) have run.
void pipeline_operations(RewriteState& state, std::vector<RewriteEvent>& log);

/// After shard-grid: the schedule's ordering edges between the microbatch Applications of each
/// stage (the Application body field `after`, ir/ordering.h). Error when they form a cycle.
void write_pipeline_schedule(RewriteState& state);

/// The devices stage `s` of `pipeline` runs on: its `devices` entry (one device, or a group),
/// else `#s`.
[[nodiscard]] std::vector<std::string> stage_devices(const PipelinePlan& pipeline, std::size_t s);

}  // namespace tapestry::rewrite
