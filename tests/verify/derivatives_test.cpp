// The error rule of autodiff's derivative kernels (gelu_grad, tanh_grad, sigmoid_grad, sqrt_grad:
// the cotangent times a function of the forward cell) and of mul_scalar: both operands' errors
// reach the bar. A cotangent that carries a rounding error (a GEMM's, as every backward pass's
// does) used to be read as exact, so the float32 run itself fell outside its bars.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "tapestry/runtime/naive_executor.h"
#include "verify_testing.h"

namespace tapestry {
namespace {

using runtime::BufferMap;
using runtime::Verdict;
using runtime::VerifyMode;
using verify_testing::build;
using verify_testing::plan;
using verify_testing::run_plan;

// G = X·Wᵀ over 1024 terms: its float32 cells are off by many ulps of themselves.
constexpr const char* kDerivatives = R"(
X: f32[16, 1024]
W: f32[48, 1024]
Z: f32[16, 48]
T: f32[16, 48]
S: f32[16, 48]
Q: f32[16, 48]
G = linear_nobias(X, W)
DGelu = gelu_grad(Z, G)
DTanh = tanh_grad(T, G)
DSigmoid = sigmoid_grad(S, G)
DSqrt = sqrt_grad(Q, G)
DScale = mul_scalar(G, factor=3.0)
DHalf = mul_scalar(G, factor=1.0, divisor=4)
output DGelu, DTanh, DSigmoid, DSqrt, DScale, DHalf
)";

constexpr const char* kOutputs[] = {"DGelu", "DTanh", "DSigmoid", "DSqrt", "DScale", "DHalf"};

BufferMap inputs_of(const ir::Graph& g, unsigned seed) {
  BufferMap in = runtime::generate_inputs(g, {.seed = seed});
  // Forward cells in each kernel's domain: tanh's y in (−1, 1), sigmoid's in (0, 1), √'s > 0;
  // Z over gelu's curved part.
  const auto map = [&](const char* name, auto f) {
    for (float& v : in.at(runtime::find_tensor(g, name)).values<float>()) v = f(v);
  };
  map("Z", [](float v) { return 4 * v; });
  map("T", [](float v) { return 0.999F * std::tanh(3 * v); });
  map("S", [](float v) { return 1 / (1 + std::exp(-3 * v)); });
  map("Q", [](float v) { return 0.05F + std::abs(v); });
  return in;
}

TEST(DerivativeRules, TheFloat32RunLiesWithinTheBarsWhenTheCotangentCarriesAnError) {
  const ir::Graph g = build(kDerivatives);
  for (unsigned seed : {1U, 2U, 3U}) {
    const BufferMap in = inputs_of(g, seed);
    const runtime::Oracle o = runtime::evaluate_oracle(g, in, {.keep_all = true});  // G's too
    const BufferMap naive = runtime::NaiveExecutor(g).run(in);
    const ir::TensorId gt = runtime::find_tensor(g, "G");
    const auto g_value = o.value.at(gt).values<double>();
    const runtime::Buffer g_bars = o.bar(gt);
    const auto g_bar = g_bars.values<double>();
    for (const char* name : kOutputs) {
      SCOPED_TRACE(::testing::Message() << name << " seed " << seed);
      const ir::TensorId t = runtime::find_tensor(g, name);
      const auto value = o.value.at(t).values<double>();
      const runtime::Buffer bars = o.bar(t);
      const auto bar = bars.values<double>();
      const auto got = naive.at(t).values<float>();
      int outside = 0, loose = 0, short_of_g = 0;
      for (std::size_t i = 0; i < value.size(); ++i) {
        ASSERT_TRUE(std::isfinite(bar[i])) << i;
        outside += std::abs(got[i] - value[i]) > bar[i] ? 1 : 0;
        if (g_value[i] == 0) continue;
        // The forward inputs are exact: the bar is G's, scaled by |h| = |result / G|, plus λ = 8
        // times the kernel's own few roundings (of the result, and for tanh_grad of y² next to
        // 1 − y²: up to u·|G|) — it carries G's error, and not much more.
        const double h = std::abs(value[i] / g_value[i]);
        const double own = 16 * 0x1p-24 * (std::abs(value[i]) + 2 * std::abs(g_value[i])) +
                           16 * static_cast<double>(FLT_MIN);
        short_of_g += bar[i] < 0.999 * h * g_bar[i] ? 1 : 0;
        loose += bar[i] > 1.001 * h * g_bar[i] + own ? 1 : 0;
      }
      EXPECT_EQ(outside, 0);
      EXPECT_EQ(short_of_g, 0);
      EXPECT_EQ(loose, 0);
    }
    EXPECT_TRUE(o.unmodelled.empty());
  }
}

TEST(DerivativeRules, ShardedRunsPassAndAShiftedCellFails) {
  const ir::Graph g = build(kDerivatives);
  const BufferMap in = inputs_of(g, 5);
  const runtime::Oracle o = runtime::evaluate_oracle(g, in);
  for (const char* p : {"{}", R"({"ops": {"G": {"split": {"in": 4}}}})",
                        R"({"ops": {"G": {"split": {"batch": 2}}}, "fuse": "auto"})"}) {
    SCOPED_TRACE(p);
    const BufferMap out = run_plan(g, plan(p), in);
    const runtime::VerifyReport r =
        runtime::verify_outputs(g, in, out, {.mode = VerifyMode::kBound});
    EXPECT_TRUE(r.pass()) << r.text();
    EXPECT_EQ(r.unchecked_cells(), 0) << r.text();
    for (const char* name : kOutputs) {
      const ir::TensorId t = runtime::find_tensor(g, name);
      BufferMap shifted = out;
      const runtime::Buffer bars = o.bar(t);
      shifted.at(t).values<float>()[7] += static_cast<float>(3 * bars.values<double>()[7]);
      const runtime::VerifyReport bad =
          runtime::verify_outputs(g, in, shifted, {.mode = VerifyMode::kBound});
      EXPECT_EQ(bad.verdict(), Verdict::kFail) << name;
    }
  }
}

// sqrt_grad where y's bound reaches 0: the run may divide by 0, so the cell is unknown — not a
// PASS — while a y clear of 0 by its bound is checked.
TEST(DerivativeRules, SqrtGradWithYWithinItsBoundOfZeroIsUnchecked) {
  const ir::Graph g =
      build("A: f32[2]\nB: f32[2]\nG: f32[2]\nY = sqrt_grad(add(A, B), G)\noutput Y\n");
  BufferMap in = runtime::generate_inputs(g, {.seed = 1});
  auto a = in.at(runtime::find_tensor(g, "A")).values<float>();
  auto b = in.at(runtime::find_tensor(g, "B")).values<float>();
  a[0] = a[1] = 1;
  b[0] = -1 + 0x1p-23F;  // y = 2^-23, within the add's bound (~2^-23) of 0
  b[1] = -0.5F;
  const runtime::Oracle o = runtime::evaluate_oracle(g, in);
  const runtime::Buffer bars = o.bar(runtime::find_tensor(g, "Y"));
  EXPECT_FALSE(std::isfinite(bars.values<double>()[0]));
  EXPECT_TRUE(std::isfinite(bars.values<double>()[1]));
  const runtime::VerifyReport r = runtime::verify_outputs(g, in, runtime::NaiveExecutor(g).run(in),
                                                          {.mode = VerifyMode::kBound});
  EXPECT_FALSE(r.pass()) << r.text();
  EXPECT_EQ(r.unchecked_cells(), 1) << r.text();
}

// relu_grad and maximum_grad_a/b route a cotangent by a comparison (rule `gate`). With exact
// comparisons the cell carries d_result's error; the `selection` rule they had before gave
// relu_grad of an exact x and a computed cotangent a bar of 0 (the naive run FAILed).
constexpr const char* kGates = R"(
X: f32[16, 1024]
W: f32[48, 1024]
Z: f32[16, 48]
A: f32[16, 48]
B: f32[16, 48]
G = linear_nobias(X, W)
R = relu_grad(Z, G)
MA = maximum_grad_a(A, B, G)
MB = maximum_grad_b(A, B, G)
output R, MA, MB
)";

TEST(Gate, AnExactConditionCarriesTheCotangentsBarOrAnExactZero) {
  const ir::Graph g = build(kGates);
  BufferMap in = runtime::generate_inputs(g, {.seed = 3});
  // Ties between A and B, and zeros in Z, on some cells: decided by value (exact operands).
  auto z = in.at(runtime::find_tensor(g, "Z")).values<float>();
  auto a = in.at(runtime::find_tensor(g, "A")).values<float>();
  auto b = in.at(runtime::find_tensor(g, "B")).values<float>();
  for (std::size_t i = 0; i < z.size(); i += 7) {
    z[i] = 0;
    b[i] = a[i];
  }
  const runtime::Oracle o = runtime::evaluate_oracle(g, in, {.keep_all = true});
  const BufferMap naive = runtime::NaiveExecutor(g).run(in);
  const ir::TensorId gt = runtime::find_tensor(g, "G");
  const runtime::Buffer g_bars = o.bar(gt);
  const auto g_bar = g_bars.values<double>();
  for (const char* name : {"R", "MA", "MB"}) {
    SCOPED_TRACE(name);
    const ir::TensorId t = runtime::find_tensor(g, name);
    const runtime::Buffer bars = o.bar(t);
    const auto bar = bars.values<double>();
    const auto value = o.value.at(t).values<double>();
    const auto got = naive.at(t).values<float>();
    int routed = 0;
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string_view n = name;
      const bool taken = n == "R" ? z[i] > 0 : (a[i] >= b[i]) == (n == "MA");
      EXPECT_EQ(bar[i], taken ? g_bar[i] : 0.0) << i;
      EXPECT_LE(std::abs(got[i] - value[i]), bar[i]) << i;
      routed += taken ? 1 : 0;
    }
    EXPECT_GT(routed, 100);
    EXPECT_LT(routed, static_cast<int>(value.size()) - 100);
  }
  const runtime::VerifyReport r =
      runtime::verify_outputs(g, in, naive, {.mode = VerifyMode::kBound});
  EXPECT_TRUE(r.pass()) << r.text();
  // A cotangent routed where the comparison certainly routes none FAILs, and the reverse.
  for (const char* name : {"R", "MA", "MB"}) {
    const ir::TensorId t = runtime::find_tensor(g, name);
    const auto value = o.value.at(t).values<double>();
    const auto gv = o.value.at(gt).values<double>();
    for (const bool to_zero : {false, true}) {
      std::size_t i = 0;
      while (i < value.size() && (to_zero ? value[i] == 0 : value[i] != 0 || gv[i] == 0)) ++i;
      ASSERT_LT(i, value.size());
      BufferMap wrong = naive;
      wrong.at(t).values<float>()[i] = to_zero ? 0.0F : static_cast<float>(gv[i]);
      const runtime::VerifyReport bad =
          runtime::verify_outputs(g, in, wrong, {.mode = VerifyMode::kBound});
      EXPECT_EQ(bad.verdict(), Verdict::kFail) << name << (to_zero ? " dropped" : " routed");
    }
  }
}

// Where the comparison may flip (relu's x computed, within its bar of 0), either route is
// right: the bar covers |g| more, and a value beyond that FAILs.
TEST(Gate, AComparisonWithinItsBarOfTheBoundaryAdmitsEitherRoute) {
  const ir::Graph g = build(R"(
X: f32[4, 1024]
W: f32[8, 1024]
G: f32[4, 8]
P = linear_nobias(X, W)
R = relu_grad(P, G)
output R
)");
  BufferMap in = runtime::generate_inputs(g, {.seed = 4});
  // P[0, 0] = Σ x·w with each product cancelled by a later one: 0 in float64, not in every
  // summation order — within its bar of 0.
  auto x = in.at(runtime::find_tensor(g, "X")).values<float>();
  auto w = in.at(runtime::find_tensor(g, "W")).values<float>();
  for (std::size_t k = 0; k < 512; ++k) {
    x[512 + k] = x[k];
    w[512 + k] = -w[k];
  }
  const runtime::Oracle o = runtime::evaluate_oracle(g, in, {.keep_all = true});
  const ir::TensorId rt = runtime::find_tensor(g, "R");
  const double p00 = o.value.at(runtime::find_tensor(g, "P")).values<double>()[0];
  ASSERT_EQ(p00, 0.0);
  ASSERT_GT(o.bar(runtime::find_tensor(g, "P")).values<double>()[0], 0.0);
  const double g00 = in.at(runtime::find_tensor(g, "G")).values<float>()[0];
  ASSERT_NE(g00, 0.0);
  const double bar00 = o.bar(rt).values<double>()[0];
  EXPECT_GE(bar00, std::abs(g00));
  EXPECT_LE(bar00, 1.01 * std::abs(g00));
  const BufferMap naive = runtime::NaiveExecutor(g).run(in);
  for (const double cell : {0.0, g00, 2.5 * g00}) {
    BufferMap out = naive;
    out.at(rt).values<float>()[0] = static_cast<float>(cell);
    const runtime::VerifyReport r =
        runtime::verify_outputs(g, in, out, {.mode = VerifyMode::kBound});
    EXPECT_EQ(r.verdict(), cell == 2.5 * g00 ? Verdict::kFail : Verdict::kPass) << cell;
  }
}

}  // namespace
}  // namespace tapestry
