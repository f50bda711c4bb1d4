// `decompose-linear`: linear(x, w, bias) → bias_add(linear_nobias(x, w), bias).
//
// linear adds its bias inside the reduction over `in`, so splitting `in` directly would add the
// bias once per block (split-reduction refuses it). Decomposed, the reduction lives in the
// bias-less product alone and the bias is added once, after the partial sums are combined:
//
//   Y = linear(X, W, b)   ==>    Y/matmul = linear_nobias(X, W)   index [batch…, out, in]
//                                Y        = bias_add(Y/matmul, b) writes the same tensor Y
//
// `linear_nobias` (kernels/linear.yaml) is linear without its bias: the same index, the same dim
// names and the same IPFs for x, w and the result, so W is read [out, in] as it is stored — no
// transpose is made, and none is shipped between devices — and the plan carries over as it is:
// Y/matmul takes Y's entry whole (splits, `mesh`, `place`; the substitution is done), and the
// bias_add, whose dims follow the result's (batch… → batch…, out → n), takes the splits and mesh
// axes of the dims it has and Y's `place` list (its grid is Y's without `in`, in the same order).
// A plan entry for `Y/matmul` (a derived entry, plan.h) replaces what it would take from Y.
//
// x may be a vector ([in], no batch dim): linear_nobias multiplies it as linear does, index
// [out, in], so its `in` splits like any other linear's.
//
// Applied automatically when the plan splits linear's reduction dim, or on request
// (`"substitute": ["decompose-linear"]`).
#pragma once

#include "tapestry/rewrite/pattern.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kDecomposeLinear = "decompose-linear";

class DecomposeLinear final : public OperationPattern {
 public:
  [[nodiscard]] std::string_view name() const override { return kDecomposeLinear; }
  [[nodiscard]] MatchResult match(const RewriteState& state, ir::OperationId op) const override;
  std::string apply(RewriteState& state, ir::OperationId op) const override;
  [[nodiscard]] bool may_act_across(const ir::Graph& graph, ir::OperationId producer,
                                    ir::TensorId t, ir::OperationId consumer) const override;
};

}  // namespace tapestry::rewrite
