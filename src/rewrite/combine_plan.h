// The plan split-reduction gives the combine (`Y/reduce`) of an even split when the plan names
// none: it follows the combine's consumers (docs/rewrites.md, "The combine's default").
//
// P writes partial[block, …] (block j on the device of P's shard j), the combine C reduces it
// over `block` into R, the original output. C's dims are R's: those that follow one of P's split
// dims are *inherited* (C keeps P's count there). Where R goes decides the rest:
//
//   consumers of R                       C's plan                               communication
//   none (R is a graph output)           R's dims cut p ways more, shard j on    reduce-scatter
//                                        block j's device
//   some consumer is cut                 the same, along a dim of R a consumer   reduce-scatter
//                                        cuts when it can                        (+ the readers'
//                                                                                all-gather)
//   every consumer unsplit               no further cut; unsplit C on the        reduce
//                                        consumer's device (its `place`)
//
// "Shard j on block j's device" is said the way P was placed: P on a `mesh` → C's extra dim on
// the mesh axis of P's block dim, inherited dims on their axes; P by `place` or the default
// placement → OpPlan::colocate with P (the extra dim ↦ block, inherited dims ↦ theirs), which
// placement resolves to P's devices whatever the counts (the cost model's evaluator sees them as
// symbols). The extra dim: one of R's dims not inherited, of extent ≥ p — one a consumer cuts
// if there is one, else the outermost (contiguous slices of a row-major R, as NCCL's
// reduce-scatter hands out). When none is wide enough, C is not cut further (a reduce onto
// block 0's device of each inherited group).
//
// The elementwise operations that follow C and come from the same operation of the plan
// (decompose-linear's bias_add) are part of the combine: the consumers are theirs, and they take
// C's plan, dim by dim (mirror_plan), so that they fuse with it and stay on its devices.
//
// Example: Megatron's second linear, `Y = linear(H, W2, b2)` with `"split": {"in": 8}` and Y a
// graph output: P = Y/matmul [block 8, batch, out, in], C = Y/matmul/reduce [d0, d1, block]
// inherits nothing, Y (bias_add) follows C and nothing reads Y → C: {"split": {"d0": 8}},
// colocated with Y/matmul (d0 ↦ block): a reduce-scatter of the 8 partials, row block j on gpu j.
#pragma once

#include <string>
#include <vector>

#include "op_spec.h"
#include "tapestry/rewrite/pattern.h"

namespace tapestry::rewrite::detail {

/// One combine of an even split, as its default plan needs it.
struct CombineSite {
  const OpSpec* old = nullptr;                              // the operation before the split
  std::string partial_op;                                   // P's name (old's label)
  std::string block;                                        // P's block dim
  std::int64_t blocks = 1;                                  // p
  const OpPlan* partial_plan = nullptr;                     // P's plan, block included
  const zspace::IndexProjection* old_result_ipf = nullptr;  // how old wrote R
  ir::OperationId combine;                                  // C, already in the graph
  ir::TensorId result;                                      // R
};

/// The operations following C (above): each the only reader of the previous one's output (R
/// first), elementwise on it, from the same operation of the plan as P (`origin`). Graph order.
std::vector<ir::OperationId> followers(const RewriteState& state, ir::TensorId result,
                                       std::string_view origin);

/// C's default plan (the table above), given its followers.
OpPlan default_combine_plan(const RewriteState& state, const CombineSite& site,
                            const std::vector<ir::OperationId>& following);

/// Gives every follower C's plan for the dims it shares with C (through R; its other entries,
/// e.g. substitutions, are kept).
void mirror_plan(RewriteState& state, ir::OperationId combine, const OpPlan& plan,
                 const std::vector<ir::OperationId>& following);

}  // namespace tapestry::rewrite::detail
