// Reference elementwise kernels (src/runtime/kernels/elementwise.cpp), run whole on the naive
// executor against values computed by hand.
#include <cmath>
#include <limits>
#include <numbers>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernel_graphs.h"
#include "run_helpers.h"
#include "tapestry/runtime/fast_kernels.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: test helpers
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(UnaryKernels, FloatFunctions) {
  const std::vector<double> xs = {-2, -0.5, 0, 0.5, 3};
  struct Case {
    const char* kernel;
    double (*f)(double);
  };
  const Case cases[] = {
      {"relu", [](double v) { return v > 0 ? v : 0.0; }},
      {"neg", [](double v) { return -v; }},
      {"exp", [](double v) { return std::exp(v); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
  };
  for (const Case& c : cases) {
    GraphBuilder b;
    TensorId x = b.tensor("X", "float64", Range({-3}, {2}));
    Built op = add_unary(b, c.kernel, x);
    BufferMap out = run_naive(b.graph, {{"X", Buffer::from_values<double>(Range({-3}, {2}), xs)}});
    std::vector<double> got = values_of<double>(out, op.result);
    for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_DOUBLE_EQ(got[i], c.f(xs[i])) << c.kernel;
  }
}

// log's special values: −inf at ±0, NaN below 0, +inf at +inf; exact at 1 and e^k.
TEST(UnaryKernels, LogKnownValues) {
  const std::vector<double> xs = {1, 0.5, std::exp(3.0), 0, -0.0, -1, INFINITY, 1e-310};
  GraphBuilder b;
  const Range r = Range::of_shape({static_cast<std::int64_t>(xs.size())});
  TensorId x = b.tensor("X", "float64", r);
  Built op = add_unary(b, "log", x);
  for (const ExecutableKernels* k : {&ExecutableKernels::reference(), &fast_kernels()}) {
    BufferMap in = bind_by_name(b.graph, {{"X", Buffer::from_values<double>(r, xs)}});
    const std::vector<double> got =
        values_of<double>(NaiveExecutor(b.graph, *k).run(std::move(in)), op.result);
    EXPECT_EQ(got[0], 0.0);
    EXPECT_DOUBLE_EQ(got[1], -std::numbers::ln2);
    EXPECT_DOUBLE_EQ(got[2], 3.0);
    EXPECT_EQ(got[3], -INFINITY);
    EXPECT_EQ(got[4], -INFINITY);
    EXPECT_TRUE(std::isnan(got[5]));
    EXPECT_EQ(got[6], INFINITY);
    EXPECT_NEAR(got[7], std::log(1e-310), 1e-12);  // a subnormal input
  }
}

// floor, ceil and round (half to even) on values written out by hand, with both kernel sets, in
// float32 and float64: halves both ways, ±0 (the sign kept), a large float (already an integer),
// ±inf and NaN.
template <typename T>
void expect_rounding(const char* dtype) {
  const T inf = std::numeric_limits<T>::infinity();
  const std::vector<T> xs = {T(-2.5), T(-1.5), T(-0.5), T(-0.0), T(0.0),  T(0.25), T(0.5),
                             T(1.5),  T(2.5),  T(2.75), T(-2.6), T(1e20), inf,     -inf};
  struct Case {
    const char* kernel;
    std::vector<T> want;
  };
  const Case cases[] = {
      {"floor", {-3, -2, -1, T(-0.0), 0, 0, 0, 1, 2, 2, -3, T(1e20), inf, -inf}},
      {"ceil", {-2, -1, T(-0.0), T(-0.0), 0, 1, 1, 2, 3, 3, -2, T(1e20), inf, -inf}},
      {"round", {-2, -2, T(-0.0), T(-0.0), 0, 0, 0, 2, 2, 3, -3, T(1e20), inf, -inf}},
  };
  for (const Case& c : cases) {
    GraphBuilder b;
    const Range r = Range::of_shape({static_cast<std::int64_t>(xs.size() + 1)});
    TensorId x = b.tensor("X", dtype, r);
    Built op = add_unary(b, c.kernel, x);
    std::vector<T> in_values = xs;
    in_values.push_back(std::numeric_limits<T>::quiet_NaN());
    for (const ExecutableKernels* k : {&ExecutableKernels::reference(), &fast_kernels()}) {
      BufferMap in = bind_by_name(b.graph, {{"X", Buffer::from_values<T>(r, in_values)}});
      const std::vector<T> got =
          values_of<T>(NaiveExecutor(b.graph, *k).run(std::move(in)), op.result);
      for (std::size_t i = 0; i < xs.size(); ++i) {
        EXPECT_EQ(got[i], c.want[i]) << c.kernel << " " << dtype << " of " << xs[i];
        EXPECT_EQ(std::signbit(got[i]), std::signbit(c.want[i])) << c.kernel << " of " << xs[i];
      }
      EXPECT_TRUE(std::isnan(got.back())) << c.kernel;
    }
  }
}

TEST(UnaryKernels, FloorCeilRoundKnownValues) {
  expect_rounding<float>("float32");
  expect_rounding<double>("float64");
}

TEST(UnaryKernels, GeluKnownValues) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({3}));
  Built op = add_unary(b, "gelu", x);
  BufferMap out =
      run_naive(b.graph, {{"X", Buffer::from_values<float>(Range::of_shape({3}), {1, -1, 0})}});
  // torch.nn.functional.gelu(torch.tensor([1., -1., 0.]))
  EXPECT_THAT(values_of<float>(out, op.result),
              ElementsAre(::testing::FloatNear(0.8413447f, 1e-6f),
                          ::testing::FloatNear(-0.1586553f, 1e-6f), 0.0f));
}

TEST(UnaryKernels, IntegersAndRelu) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "int32", Range({5, -2}, {6, 2}));
  Built relu = add_unary(b, "relu", x);
  Built neg = add_unary(b, "neg", x, Point{-1, -1});
  const std::int32_t lowest = std::numeric_limits<std::int32_t>::lowest();
  BufferMap out = run_naive(
      b.graph,
      {{"X", Buffer::from_values<std::int32_t>(Range::of_shape({1, 4}), {-3, 0, 7, lowest})}});
  EXPECT_THAT(values_of<std::int32_t>(out, relu.result), ElementsAre(0, 0, 7, 0));
  EXPECT_THAT(values_of<std::int32_t>(out, neg.result), ElementsAre(3, 0, -7, lowest));  // wraps
  EXPECT_EQ(out.at(neg.result).range(), Range({-1, -1}, {0, 3}));
}

TEST(UnaryKernels, FloatOnlyOnIntegersIsAnError) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "int64", Range::of_shape({2}));
  add_unary(b, "exp", x);
  EXPECT_THAT(error_of([&] {
                (void)run_naive(b.graph, {{"X", Buffer(DType::kInt64, Range::of_shape({2}))}});
              }),
              HasSubstr("operation 'exp_1' (kernel exp): is defined for float32 and float64, "
                        "not int64"));
}

TEST(UnaryKernels, ReluPropagatesNaN) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({1}));
  Built op = add_unary(b, "relu", x);
  BufferMap out = run_naive(
      b.graph, {{"X", Buffer::from_values<float>(Range::of_shape({1}),
                                                 {std::numeric_limits<float>::quiet_NaN()})}});
  EXPECT_TRUE(std::isnan(values_of<float>(out, op.result)[0]));
}

TEST(BinaryKernels, Broadcasting) {
  // a [2, 3] at (-1, 4) op b [3] at (10) -> [2, 3]
  GraphBuilder b;
  TensorId a = b.tensor("A", "float32", Range({-1, 4}, {1, 7}));
  TensorId v = b.tensor("B", "float32", Range({10}, {13}));
  Built add = add_binary(b, "add", a, v, Point{2, 3});
  Built sub = add_binary(b, "sub", a, v, Point{2, 3});
  Built mul = add_binary(b, "mul", a, v, Point{2, 3});
  Built div = add_binary(b, "div", a, v, Point{2, 3});
  Built mx = add_binary(b, "maximum", a, v, Point{2, 3});
  BufferMap out = run_naive(
      b.graph, {{"A", Buffer::from_values<float>(Range::of_shape({2, 3}), {1, 2, 3, 4, 5, 6})},
                {"B", Buffer::from_values<float>(Range::of_shape({3}), {2, 4, 5})}});
  EXPECT_THAT(values_of<float>(out, add.result), ElementsAre(3, 6, 8, 6, 9, 11));
  EXPECT_THAT(values_of<float>(out, sub.result), ElementsAre(-1, -2, -2, 2, 1, 1));
  EXPECT_THAT(values_of<float>(out, mul.result), ElementsAre(2, 8, 15, 8, 20, 30));
  EXPECT_THAT(values_of<float>(out, div.result), ElementsAre(0.5f, 0.5f, 0.6f, 2, 1.25f, 1.2f));
  EXPECT_THAT(values_of<float>(out, mx.result), ElementsAre(2, 4, 5, 4, 5, 6));
}

TEST(BinaryKernels, BroadcastBothWays) {
  // a [3, 1] + b [1, 4] -> [3, 4]
  GraphBuilder b;
  TensorId a = b.tensor("A", "int64", Range({0, -9}, {3, -8}));
  TensorId c = b.tensor("B", "int64", Range({-2, 0}, {-1, 4}));
  Built add = add_binary(b, "add", a, c, Point{3, 4});
  BufferMap out = run_naive(
      b.graph, {{"A", Buffer::from_values<std::int64_t>(Range::of_shape({3, 1}), {0, 10, 20})},
                {"B", Buffer::from_values<std::int64_t>(Range::of_shape({1, 4}), {1, 2, 3, 4})}});
  EXPECT_THAT(values_of<std::int64_t>(out, add.result),
              ElementsAre(1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24));
}

TEST(BinaryKernels, IntegerDivisionTruncatesAndRejectsZero) {
  GraphBuilder b;
  TensorId a = b.tensor("A", "int32", Range::of_shape({5}));
  TensorId c = b.tensor("B", "int32", Range::of_shape({5}));
  Built div = add_binary(b, "div", a, c, Point{5});
  const std::int32_t lowest = std::numeric_limits<std::int32_t>::lowest();
  BufferMap out = run_naive(
      b.graph,
      {{"A", Buffer::from_values<std::int32_t>(Range::of_shape({5}), {7, -7, 7, -7, lowest})},
       {"B", Buffer::from_values<std::int32_t>(Range::of_shape({5}), {2, 2, -2, -2, -1})}});
  EXPECT_THAT(values_of<std::int32_t>(out, div.result), ElementsAre(3, -3, -3, 3, lowest));
  EXPECT_THAT(error_of([&] {
                (void)run_naive(b.graph, {{"A", Buffer::from_values<std::int32_t>(
                                                    Range::of_shape({5}), {1, 1, 1, 1, 1})},
                                          {"B", Buffer(DType::kInt32, Range::of_shape({5}))}});
              }),
              HasSubstr("operation 'div_1' (kernel div): integer division by zero"));
}

TEST(BinaryKernels, IntegerOverflowWraps) {
  GraphBuilder b;
  TensorId a = b.tensor("A", "int32", Range::of_shape({2}));
  TensorId c = b.tensor("B", "int32", Range::of_shape({2}));
  Built add = add_binary(b, "add", a, c, Point{2});
  Built mul = add_binary(b, "mul", a, c, Point{2});
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  BufferMap out = run_naive(
      b.graph, {{"A", Buffer::from_values<std::int32_t>(Range::of_shape({2}), {big, 65536})},
                {"B", Buffer::from_values<std::int32_t>(Range::of_shape({2}), {1, 65536})}});
  EXPECT_THAT(values_of<std::int32_t>(out, add.result),
              ElementsAre(std::numeric_limits<std::int32_t>::lowest(), 131072));
  EXPECT_THAT(values_of<std::int32_t>(out, mul.result), ElementsAre(big, 0));
}

TEST(BinaryKernels, MaximumPropagatesNaN) {
  GraphBuilder b;
  TensorId a = b.tensor("A", "float64", Range::of_shape({2}));
  TensorId c = b.tensor("B", "float64", Range::of_shape({2}));
  Built mx = add_binary(b, "maximum", a, c, Point{2});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  BufferMap out =
      run_naive(b.graph, {{"A", Buffer::from_values<double>(Range::of_shape({2}), {nan, 1})},
                          {"B", Buffer::from_values<double>(Range::of_shape({2}), {1, nan})}});
  EXPECT_TRUE(std::isnan(values_of<double>(out, mx.result)[0]));
  EXPECT_TRUE(std::isnan(values_of<double>(out, mx.result)[1]));
}

TEST(BinaryKernels, MixedDtypesAreAnError) {
  GraphBuilder b;
  TensorId a = b.tensor("A", "float32", Range::of_shape({2}));
  TensorId c = b.tensor("B", "float64", Range::of_shape({2}));
  add_binary(b, "add", a, c, Point{2});
  EXPECT_THAT(error_of([&] {
                (void)run_naive(b.graph, {{"A", Buffer(DType::kFloat32, Range::of_shape({2}))},
                                          {"B", Buffer(DType::kFloat64, Range::of_shape({2}))}});
              }),
              HasSubstr("(kernel add): b[0] is float64, but other operands are float32"));
}

TEST(BiasAdd, AddsAlongTheLastDim) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range({-40, 20}, {-38, 23}));
  TensorId bias = b.tensor("b", "float32", Range({-1}, {2}));
  Built op = add_bias_add(b, x, bias);
  BufferMap out = run_naive(
      b.graph, {{"X", Buffer::from_values<float>(Range::of_shape({2, 3}), {1, 2, 3, 4, 5, 6})},
                {"b", Buffer::from_values<float>(Range::of_shape({3}), {10, 20, 30})}});
  EXPECT_THAT(values_of<float>(out, op.result), ElementsAre(11, 22, 33, 14, 25, 36));
}

}  // namespace
}  // namespace tapestry::runtime
