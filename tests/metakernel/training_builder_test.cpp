// The C++ builder's training wrappers (builder_ops.h, kernels/training.yaml): the kernels they
// call, the result types, every output of a multi-output update, and the checks that tie a
// gradient to its forward operation. The values are tests/python/test_training_kernels.py's.
#include <gmock/gmock.h>

#include "tapestry/metakernel/builder_ops.h"
#include "test_util.h"

namespace tapestry::metakernel {
namespace {

using namespace testing;  // NOLINT
using ::testing::HasSubstr;

std::string kernel_of(Tensor t) {
  const ir::Graph& g = t.graph().ir();
  for (ir::OperationId op : g.operations()) {
    for (const auto& e : g.operation(op).outputs().entries()) {
      if (e.value.tensor == t.id()) return std::string(g.operation(op).kernel());
    }
  }
  return "";
}

TEST(TrainingBuilder, GradientsHaveTheirInputsTypes) {
  Graph g(signatures());
  Tensor x = g.input("X", DType::kFloat32, {2, 3, 9, 9});
  Tensor w = g.input("W", DType::kFloat32, {4, 3, 3, 3});
  Tensor p = pad(x, 1);  // starts at (0, 0, -1, -1)
  Tensor d = g.input("D", DType::kFloat32, {2, 4, 5, 5});
  Tensor dx = conv2d_grad_input(p, w, d, 2);
  EXPECT_EQ(dx.type(), p.type());
  EXPECT_EQ(kernel_of(dx), "conv2d_grad_input");
  Tensor dw = conv2d_grad_weight(p, d, 3, 3, 2);
  EXPECT_EQ(dw.type(), w.type());
  EXPECT_EQ(kernel_of(dw), "conv2d_grad_weight");

  Tensor y = g.input("Y", DType::kFloat32, {4, 6});
  Tensor dy = g.input("dY", DType::kFloat32, {4, 6});
  EXPECT_EQ(softmax_grad(y, dy).type(), y.type());
  Tensor m = max(y, 0);
  EXPECT_EQ(max_grad(y, m, g.input("dM", DType::kFloat32, {6}), 0).type(), y.type());
  Tensor pooled = g.input("dP", DType::kFloat32, {2, 3, 4, 4});
  EXPECT_EQ(max_pool2d_grad(x, pooled, 2, 2).type(), x.type());
  EXPECT_EQ(avg_pool2d_grad(x, pooled, 2, 2).type(), x.type());
}

TEST(TrainingBuilder, LossesAreScalarsAndTheirGradientsTheirInputs) {
  Graph g(signatures());
  Tensor logits = g.input("L", DType::kFloat32, {8, 10});
  Tensor labels = g.input("C", DType::kInt32, {8});
  Tensor one = g.input("one", DType::kFloat32, {});
  EXPECT_EQ(cross_entropy(logits, labels).type().rank(), 0u);
  EXPECT_EQ(cross_entropy_grad(logits, labels, one).type(), logits.type());
  EXPECT_EQ(mse(logits, logits).type().rank(), 0u);
  EXPECT_EQ(mse_grad(logits, logits, one).type(), logits.type());
  Tensor floats = g.input("F", DType::kFloat32, {8});
  EXPECT_THAT([&] { (void)cross_entropy(logits, floats); },
              ThrowsMessage<Error>(HasSubstr("F is f32, but L must be one of i32, i64")));
}

TEST(TrainingBuilder, UpdatesReturnEveryOutput) {
  Graph g(signatures());
  Tensor p = g.input("P", DType::kFloat32, {5, 7});
  Tensor gr = g.input("G", DType::kFloat32, {5, 7});
  Tensor m = g.input("M", DType::kFloat32, {5, 7});
  Tensor v = g.input("V", DType::kFloat32, {5, 7});
  Tensor step = g.input("Step", DType::kInt64, {});
  const AdamResult a = adam(p, gr, m, v, step, {.lr = 0.01, .decoupled = true});
  g.assign("S", a.param);
  EXPECT_EQ(a.param.name(), "S.result");
  EXPECT_EQ(a.m.name(), "S.m_next");
  EXPECT_EQ(a.v.name(), "S.v_next");
  EXPECT_EQ(a.v.type(), p.type());
  const SgdMomentumResult s = sgd_momentum(p, gr, v, {.lr = 0.1, .momentum = 0.9});
  EXPECT_EQ(kernel_of(s.velocity), "sgd_momentum");
  EXPECT_NE(s.velocity, s.param);
  EXPECT_EQ(kernel_of(sgd(p, gr, {.lr = 0.1})), "sgd");
}

TEST(TrainingBuilder, AGradientMustMatchItsForwardOperation) {
  Graph g(signatures());
  Tensor x = g.input("X", DType::kFloat32, {1, 2, 6, 6});
  Tensor w = g.input("W", DType::kFloat32, {3, 2, 3, 3});
  Tensor d = g.input("D", DType::kFloat32, {1, 3, 3, 3});  // conv2d(X, W) is 4 × 4
  EXPECT_THAT([&] { (void)conv2d_grad_input(x, w, d); },
              ThrowsMessage<Error>(HasSubstr("D is not the result of a conv2d of X with W")));
  EXPECT_THAT([&] { (void)conv2d_grad_weight(x, d, 3, 3); },
              ThrowsMessage<Error>(HasSubstr("D is not the result of a conv2d of X with 3×3")));
}

}  // namespace
}  // namespace tapestry::metakernel
