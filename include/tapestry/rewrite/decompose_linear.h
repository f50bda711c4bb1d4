// `decompose-linear`: linear(x, w, bias) → bias_add(matmul(x, transpose(w)), bias).
//
// linear adds its bias inside the reduction over `in`, so splitting `in` directly would add the
// bias once per block (split-reduction refuses it). Decomposed, the reduction lives in the matmul
// alone and the bias is added once, after the partial sums are combined:
//
//   Y = linear(X, W, b)          Y/transpose = transpose(W)           [out, in] → [in, out]
//                         ==>    Y/matmul    = matmul(X, Y/transpose) index [batch, m, n, k]
//                                Y           = bias_add(Y/matmul, b)  writes the same tensor Y
//
// A linear without batch dims (x: [in], a vector) is multiplied as the one-row matrix [1, in]:
//
//   Y = linear(x, W, b)          Y/reshape   = reshape(x, shape=[1, in])
//   x: [in]               ==>    Y/transpose = transpose(W)
//                                Y/matmul    = matmul(Y/reshape, Y/transpose)   [1, out]
//                                Y/reshape.2 = reshape(Y/matmul, shape=[out])
//                                Y           = bias_add(Y/reshape.2, b)
//
// so its `in` splits like any other linear's (split-reduction then splits the matmul's k).
//
// Applied automatically when the plan splits linear's reduction dim, or on request
// (`"substitute": ["decompose-linear"]`). The plan's splits follow the tensors: batch → m (via X),
// in → k (via X), out → n (via Y), and batch/out → bias_add's dims (via Y); the transpose of w is
// cut along out and in as the linear cut w (via W), so it runs next to the matmul shards; a
// vector x's reshapes are cut along in and out (via X and Y).
#pragma once

#include "tapestry/rewrite/pattern.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kDecomposeLinear = "decompose-linear";

class DecomposeLinear final : public OperationPattern {
 public:
  [[nodiscard]] std::string_view name() const override { return kDecomposeLinear; }
  [[nodiscard]] MatchResult match(const RewriteState& state, ir::OperationId op) const override;
  std::string apply(RewriteState& state, ir::OperationId op) const override;
};

}  // namespace tapestry::rewrite
