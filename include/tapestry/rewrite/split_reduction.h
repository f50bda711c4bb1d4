// `split-reduction`: cut a reduction dimension into blocks of partial results plus a `reduce`.
//
// A shard must never write an output cell another shard writes, so a reduction dim k (a zero
// column of every output IPF) cannot simply be cut. Instead the operation writes *partial*
// results, one per block of k, into a tensor with a leading block dim, and a `reduce` operation
// combines them with the reduction's monoid (sum, max, min, prod). Generic over every kernel:
// only IPFs change, never kernels.
//
// Even split (K = p·q): one operation with an added leading index dim `block`, and
//   k = block·q + k'                 (inner map, affine)
//   input IPF'   = IPF ∘ inner        (reads the same boxes)
//   partial IPF' = [block row] stacked on (result IPF ∘ inner)
//
// linear with index [batch 4, out 8, in 12] and "split": {"in": 3}: the index becomes
// [block 3, batch 4, out 8, in 4]; x's IPF (batch, in) ↦ x[batch, in] becomes
// (block, batch, out, in') ↦ x[batch, 4·block + in']; the operation writes partial[3, 4, 8]
// and `Y/reduce` (kernel reduce, op sum) reads partial and writes Y. Sharding the reduce along
// the other dims is a reduce-scatter.
//
// Uneven split (K = 10 into 4: 3, 3, 2, 2): no single affine map fits, so there is one operation
// per block, `Y/block0` …, each over its slice of k (an index box that starts at the slice) with
// the original IPFs, writing its own partial tensor (a tensor has one producer); a balanced tree
// of the monoid's elementwise kernel (add, maximum, mul; min has none, so an uneven min split is
// refused) combines them into the original output. Both forms validate and stay affine.
//
// The plan follows: the operation keeps its name, loses the split of k and gains
// {"block": p} (and k's mesh axis moves to `block`). `Y/reduce` takes the plan's entry for it
// when there is one (a derived entry, plan.h), else a default that follows its consumers —
// reduce-scatter, all-reduce or reduce, its shard j where block j is (src/rewrite/combine_plan.h,
// docs/rewrites.md "The combine's default"); the elementwise operations that follow it from the
// same operation of the plan (decompose-linear's bias_add) take its plan. The uneven form's
// blocks take the operation's entry, its combines the splits of the dims that reach the output;
// a plan may name any of them.
#pragma once

#include "tapestry/rewrite/pattern.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kSplitReduction = "split-reduction";

class SplitReduction final : public OperationPattern {
 public:
  [[nodiscard]] std::string_view name() const override { return kSplitReduction; }
  [[nodiscard]] MatchResult match(const RewriteState& state, ir::OperationId op) const override;
  std::string apply(RewriteState& state, ir::OperationId op) const override;
  [[nodiscard]] bool may_act_across(const ir::Graph& graph, ir::OperationId producer,
                                    ir::TensorId t, ir::OperationId consumer) const override;
};

}  // namespace tapestry::rewrite
