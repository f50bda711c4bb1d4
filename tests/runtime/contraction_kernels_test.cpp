// Reference kernels that reduce (linear, matmul, sum, max, reduce, conv2d) and softmax, run whole
// on the naive executor against plain loops written here.
#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernel_graphs.h"
#include "run_helpers.h"
#include "tapestry/runtime/input_generation.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: test helpers
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Linear, MatchesTheFormulaWithNegativeStarts) {
  // The signature.h example, scaled down: X f32[-40:-37, 20:24], W [2, 4], b [2].
  GraphBuilder b;
  TensorId x = b.tensor("X", "float64", Range({-40, 20}, {-37, 24}));
  TensorId w = b.tensor("W", "float64", Range::of_shape({2, 4}));
  TensorId bias = b.tensor("b", "float64", Range({-5}, {-3}));
  Built lin = add_linear(b, x, w, bias);
  BufferMap in = generate_inputs(b.graph, {.seed = 1});
  const std::vector<double> xs = values_of<double>(in, x), ws = values_of<double>(in, w),
                            bs = values_of<double>(in, bias);
  BufferMap out = NaiveExecutor(b.graph).run(in);
  const std::vector<double> got = values_of<double>(out, lin.result);
  ASSERT_EQ(got.size(), 6u);
  for (int i = 0; i < 3; ++i) {
    for (int o = 0; o < 2; ++o) {
      double acc = xs[i * 4] * ws[o * 4];
      for (int k = 1; k < 4; ++k) acc += xs[i * 4 + k] * ws[o * 4 + k];
      EXPECT_EQ(got[i * 2 + o], acc + bs[o]) << "bitwise: ascending `in`, bias last";
    }
  }
}

TEST(Linear, SmallIntegers) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "int32", Range::of_shape({2, 3}));
  TensorId w = b.tensor("W", "int32", Range::of_shape({2, 3}));
  TensorId bias = b.tensor("b", "int32", Range::of_shape({2}));
  Built lin = add_linear(b, x, w, bias);
  BufferMap out = run_naive(
      b.graph,
      {{"X", Buffer::from_values<std::int32_t>(Range::of_shape({2, 3}), {1, 2, 3, 4, 5, 6})},
       {"W", Buffer::from_values<std::int32_t>(Range::of_shape({2, 3}), {1, 0, -1, 2, 2, 2})},
       {"b", Buffer::from_values<std::int32_t>(Range::of_shape({2}), {100, 0})}});
  EXPECT_THAT(values_of<std::int32_t>(out, lin.result), ElementsAre(98, 12, 98, 30));
}

TEST(Linear, TwoBatchDims) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range({1, -1, 0}, {3, 1, 2}));  // [2, 2, 2]
  TensorId w = b.tensor("W", "float32", Range::of_shape({1, 2}));
  TensorId bias = b.tensor("b", "float32", Range::of_shape({1}));
  Built lin = add_linear(b, x, w, bias);
  BufferMap out = run_naive(
      b.graph,
      {{"X", Buffer::from_values<float>(Range::of_shape({2, 2, 2}), {1, 2, 3, 4, 5, 6, 7, 8})},
       {"W", Buffer::from_values<float>(Range::of_shape({1, 2}), {1, 10})},
       {"b", Buffer::from_values<float>(Range::of_shape({1}), {0.5f})}});
  EXPECT_THAT(values_of<float>(out, lin.result), ElementsAre(21.5f, 43.5f, 65.5f, 87.5f));
}

TEST(Linear, EmptyInputFeatures) {
  // in = 0: the index is empty, so nothing is computed and the (non-empty) result box the
  // operation selects is IPF(empty index) = empty; the result stays poisoned.
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({2, 0}));
  TensorId w = b.tensor("W", "float32", Range::of_shape({3, 0}));
  TensorId bias = b.tensor("b", "float32", Range::of_shape({3}));
  Built lin = add_linear(b, x, w, bias);
  BufferMap out = run_naive(b.graph, {{"X", Buffer(DType::kFloat32, Range::of_shape({2, 0}))},
                                      {"W", Buffer(DType::kFloat32, Range::of_shape({3, 0}))},
                                      {"b", Buffer(DType::kFloat32, Range::of_shape({3}))}});
  EXPECT_TRUE(std::isnan(values_of<float>(out, lin.result)[0]));
}

TEST(Matmul, BatchedWithBroadcast) {
  // a [2, 2, 3] · b [3, 1] -> [2, 2, 1]; b's missing batch dim broadcasts.
  GraphBuilder b;
  TensorId a = b.tensor("A", "int64", Range({-1, 0, 0}, {1, 2, 3}));
  TensorId c = b.tensor("B", "int64", Range({7, 7}, {10, 8}));
  Built mm = add_matmul(b, a, c, Point{2});
  BufferMap out = run_naive(
      b.graph, {{"A", Buffer::from_values<std::int64_t>(Range::of_shape({2, 2, 3}),
                                                        {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 0, 1})},
                {"B", Buffer::from_values<std::int64_t>(Range::of_shape({3, 1}), {1, 10, 100})}});
  EXPECT_THAT(values_of<std::int64_t>(out, mm.result), ElementsAre(321, 654, 1, 100));
}

TEST(SumMax, OverEveryDim) {
  const std::vector<float> xs = {1, -2, 3, 4, 5, -6};  // [2, 3]
  struct Case {
    const char* kernel;
    std::size_t dim;
    std::vector<float> expected;
  };
  const Case cases[] = {
      {"sum", 0, {5, 3, -3}}, {"sum", 1, {2, 3}}, {"max", 0, {4, 5, 3}}, {"max", 1, {3, 5}}};
  for (const Case& c : cases) {
    GraphBuilder b;
    TensorId x = b.tensor("X", "float32", Range({-3, 10}, {-1, 13}));
    Built op = add_reduction(b, c.kernel, x, c.dim);
    BufferMap out =
        run_naive(b.graph, {{"X", Buffer::from_values<float>(Range::of_shape({2, 3}), xs)}});
    EXPECT_EQ(values_of<float>(out, op.result), c.expected) << c.kernel << " dim " << c.dim;
  }
}

TEST(SumMax, ReductionDimFirstInTheIndex) {
  // Built-in metakernels put reduction dims last; a graph may order them otherwise. Index
  // (r, d) over x [3, 2], result [2] ignores r: the kernels' general loop path.
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range({-1, 4}, {2, 6}));
  TensorId y = b.tensor("Y", "float32", Range::of_shape({2}));
  const OperationId op =
      b.op("sum", Range::of_shape({3, 2}), {{"x", x, ipf({{1, 0}, {0, 1}}, {-1, 4})}},
           {{"result", y, ipf({{0, 1}}, {0})}}, nullptr, {"reduced", "d0"},
           {{"reduced", ir::Monoid::kSum}});
  b.shard(op, {1, 2});
  const std::map<std::string, Buffer> in = {
      {"X", Buffer::from_values<float>(Range::of_shape({3, 2}), {1e8f, 1, 1, 2, -1e8f, 3})}};
  EXPECT_THAT(values_of<float>(run_naive(b.graph, in), y), ElementsAre(0.0f, 6.0f));
  EXPECT_THAT(values_of<float>(run_sharded(b.graph, in), y), ElementsAre(0.0f, 6.0f));
}

TEST(SumMax, ToAScalar) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "int32", Range({-2}, {3}));
  Built sum = add_reduction(b, "sum", x, 0);
  Built mx = add_reduction(b, "max", x, 0);
  BufferMap out = run_naive(
      b.graph, {{"X", Buffer::from_values<std::int32_t>(Range::of_shape({5}), {3, -1, 4, -1, 5})}});
  EXPECT_EQ(out.at(sum.result).range(), Range());
  EXPECT_THAT(values_of<std::int32_t>(out, sum.result), ElementsAre(10));
  EXPECT_THAT(values_of<std::int32_t>(out, mx.result), ElementsAre(5));
}

TEST(SumMax, SumsInAscendingOrder) {
  // 1e8 + 1 - 1e8 in float32 is 0 left to right (1e8 + 1 rounds to 1e8), 1 in other orders.
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({3}));
  Built sum = add_reduction(b, "sum", x, 0);
  BufferMap out = run_naive(
      b.graph, {{"X", Buffer::from_values<float>(Range::of_shape({3}), {1e8f, 1.0f, -1e8f})}});
  EXPECT_THAT(values_of<float>(out, sum.result), ElementsAre(0.0f));
}

TEST(Reduce, EveryMonoid) {
  const std::vector<double> partials = {1, -2, 3, 4, 0.5, -6};  // [block 2, 3]
  const std::pair<ir::Monoid, std::vector<double>> cases[] = {{ir::Monoid::kSum, {5, -1.5, -3}},
                                                              {ir::Monoid::kMax, {4, 0.5, 3}},
                                                              {ir::Monoid::kMin, {1, -2, -6}},
                                                              {ir::Monoid::kProd, {4, -1, -18}}};
  for (const auto& [monoid, expected] : cases) {
    GraphBuilder b;
    TensorId x = b.tensor("P", "float64", Range({0, -1}, {2, 2}));
    Built op = add_reduce(b, x, monoid);
    BufferMap out =
        run_naive(b.graph, {{"P", Buffer::from_values<double>(Range::of_shape({2, 3}), partials)}});
    EXPECT_EQ(values_of<double>(out, op.result), expected) << ir::monoid_name(monoid);
  }
}

TEST(Reduce, EmptyBlockGivesTheIdentityNothing) {
  // An empty index computes nothing: the result box is empty too.
  GraphBuilder b;
  TensorId x = b.tensor("P", "float32", Range::of_shape({0, 3}));
  Built op = add_reduce(b, x, ir::Monoid::kMax);
  BufferMap out = run_naive(b.graph, {{"P", Buffer(DType::kFloat32, Range::of_shape({0, 3}))}});
  EXPECT_EQ(out.at(op.result).range(), Range::of_shape({3}));
}

TEST(Softmax, RowsSumToOne) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float64", Range({-2, -2}, {0, 1}));
  Built sm = add_softmax(b, x);
  BufferMap out = run_naive(
      b.graph,
      {{"X", Buffer::from_values<double>(Range::of_shape({2, 3}), {1, 2, 3, 1000, 1000, 1000})}});
  const std::vector<double> got = values_of<double>(out, sm.result);
  const double s = std::exp(-2.0) + std::exp(-1.0) + 1;
  EXPECT_DOUBLE_EQ(got[0], std::exp(-2.0) / s);
  EXPECT_DOUBLE_EQ(got[2], 1 / s);
  for (int j = 3; j < 6; ++j) EXPECT_DOUBLE_EQ(got[j], 1.0 / 3) << "no overflow at 1000";
}

TEST(Softmax, EmptyRows) {
  // Index [3] with empty cells (rows of length 0): nothing to read or write, no crash.
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range({-1, 0}, {2, 0}));
  Built sm = add_softmax(b, x);
  BufferMap out = run_naive(b.graph, {{"X", Buffer(DType::kFloat32, Range::of_shape({3, 0}))}});
  EXPECT_EQ(out.at(sm.result).size(), 0);
}

TEST(Softmax, IntegersAreAnError) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "int32", Range::of_shape({2, 3}));
  add_softmax(b, x);
  EXPECT_THAT(error_of([&] {
                (void)run_naive(b.graph, {{"X", Buffer(DType::kInt32, Range::of_shape({2, 3}))}});
              }),
              HasSubstr("(kernel softmax): is defined for float32 and float64, not int32"));
}

// conv2d by the textbook formula, over origin-based vectors.
std::vector<double> conv_reference(const std::vector<double>& x, const std::vector<double>& w,
                                   Point xs, Point ws, std::int64_t stride) {
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const std::int64_t O = ws[0], KH = ws[2], KW = ws[3];
  const std::int64_t OH = (H - KH) / stride + 1, OW = (W - KW) / stride + 1;
  std::vector<double> out;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t y = 0; y < OH; ++y)
        for (std::int64_t z = 0; z < OW; ++z) {
          double acc = 0;
          bool first = true;
          for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t i = 0; i < KH; ++i)
              for (std::int64_t j = 0; j < KW; ++j) {
                const double v = x[((n * C + c) * H + y * stride + i) * W + z * stride + j] *
                                 w[((o * C + c) * KH + i) * KW + j];
                acc = first ? v : acc + v;
                first = false;
              }
          out.push_back(acc);
        }
  return out;
}

TEST(Conv2d, StridedOverlappingWindows) {
  for (std::int64_t stride : {1, 2}) {
    GraphBuilder b;
    TensorId x = b.tensor("X", "float64", Range({0, 0, -3, -2}, {2, 3, 4, 5}));  // 2,3,7,7
    TensorId w = b.tensor("W", "float64", Range::of_shape({2, 3, 3, 3}));
    Built conv = add_conv2d(b, x, w, stride);
    BufferMap in = generate_inputs(b.graph, {.seed = 5});
    BufferMap out = NaiveExecutor(b.graph).run(in);
    EXPECT_EQ(values_of<double>(out, conv.result),
              conv_reference(values_of<double>(in, x), values_of<double>(in, w), Point{2, 3, 7, 7},
                             Point{2, 3, 3, 3}, stride))
        << "stride " << stride;
  }
}

}  // namespace
}  // namespace tapestry::runtime
