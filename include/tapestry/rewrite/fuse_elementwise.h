// `fuse-elementwise`: a producer and the elementwise consumer of its output become one operation.
//
// When a producer P writes a tensor T that exactly one operation C reads, T is not a graph
// output, C is elementwise on T (T's IPF in C is the identity up to an offset, unit cells,
// no reductions) and C reads all of T (the box P writes), then C's index is an affine image of
// P's index, the whole of it:
//
//   c = M·p,   M = (P's IPF for T) − (C's offset for T),   M(P's index) = C's index
//
// so C can run shard by shard inside P's shards: the fused operation (kernel "fused", see
// fused.h) has P's index space, P's inputs, C's other inputs and outputs with their IPFs composed
// with M, and T disappears. The running example, linear ⇒ relu split on batch in two, becomes
// exactly two fused applications, each reading half of X and all of W and b, writing half of Y.
// Chains fuse one link at a time (`matmul ⇒ bias_add ⇒ gelu`).
//
// The last condition is the legality rule for readers of a sub-box: `s = slice(h, dim=1, start=0,
// end=1)` is elementwise on h but reads one row of it, and a fused operation over h's index
// would write rows of s that do not exist. Such a fusion is refused ("s reads only
// zr[0:2, 0:1, 0:8] of h (zr[0:2, 0:17, 0:8]) …"), in `lower` and in the cost::Evaluator alike,
// since both run this match. Strided or windowed readers (pooling, conv2d, pad) are not
// elementwise and are refused before it.
//
// Requested by plan fusion groups (producer first: [["Y/linear", "Y"]]) or "fuse": "auto". The
// fused operation takes C's name and P's splits; C's splits must agree (same count on the dims
// that correspond through T) or the fusion is refused with the reason.
#pragma once

#include "tapestry/rewrite/pattern.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kFuseElementwise = "fuse-elementwise";

class FuseElementwise final : public OperationPattern {
 public:
  [[nodiscard]] std::string_view name() const override { return kFuseElementwise; }
  [[nodiscard]] MatchResult match(const RewriteState& state, ir::OperationId op) const override;
  std::string apply(RewriteState& state, ir::OperationId op) const override;
  [[nodiscard]] bool may_act_across(const ir::Graph& graph, ir::OperationId producer,
                                    ir::TensorId t, ir::OperationId consumer) const override;
};

}  // namespace tapestry::rewrite
