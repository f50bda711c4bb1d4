// The oracle and the verdict where cells are exactly 0, ±inf or NaN (oracle.h, verify.h): masked
// attention (−inf and −1e9 masks), terms that are exact zeros, infinite and NaN classes, and
// cells that stay unchecked — which are not a PASS.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "tapestry/runtime/naive_executor.h"
#include "verify_testing.h"

namespace tapestry {
namespace {

using runtime::Buffer;
using runtime::BufferMap;
using runtime::UncheckedCells;
using runtime::Verdict;
using runtime::VerifyMode;
using verify_testing::build;
using verify_testing::plan;
using verify_testing::run_plan;

constexpr float kInf = std::numeric_limits<float>::infinity();

ir::Graph build_file(const std::string& name) {
  std::ifstream in(std::filesystem::path(TAPESTRY_TEST_DATA) / "verify" / name);
  std::stringstream s;
  s << in.rdbuf();
  return build(s.str());
}

runtime::VerifyReport judge(const ir::Graph& g, const BufferMap& inputs, const BufferMap& results,
                            UncheckedCells unchecked = UncheckedCells::kFail) {
  return runtime::verify_outputs(g, inputs, results,
                                 {.mode = VerifyMode::kBound, .unchecked = unchecked});
}

float& cell(const ir::Graph& g, BufferMap& buffers, const std::string& name, std::size_t i) {
  return buffers.at(runtime::find_tensor(g, name)).values<float>()[i];
}

// The issue's case: a causal mask (−inf, or −1e9, above the diagonal) used to leave every row
// but the last unchecked, so a +100 in one cell or a zeroed token PASSed. Now every cell has a
// finite bar as tight as the unmasked block's, and both corruptions FAIL.
TEST(Masked, CausalAttentionChecksEveryCellAndCatchesCorruptions) {
  const ir::Graph g = build_file("causal_attention.tap");
  BufferMap plain = runtime::generate_inputs(g, {.seed = 3});
  const double unmasked_bar = [&] {
    const runtime::Oracle o = runtime::evaluate_oracle(g, plain);
    double m = 0;
    const Buffer bar = o.bar(runtime::find_tensor(g, "Y"));  // a value: keep it for the loop
    for (double b : bar.values<double>()) m = std::max(m, b);
    return m;
  }();
  for (float masked : {-kInf, -1e9F, -1e4F, std::numeric_limits<float>::lowest()}) {
    SCOPED_TRACE(masked);
    BufferMap in = plain;
    verify_testing::fill_masks(g, in, masked);
    const runtime::Oracle o = runtime::evaluate_oracle(g, in);
    const Buffer bar = o.bar(runtime::find_tensor(g, "Y"));
    for (double b : bar.values<double>()) {
      ASSERT_TRUE(std::isfinite(b));
      EXPECT_LT(b, 2 * unmasked_bar);  // masked terms add nothing: no wider than unmasked
    }
    for (const char* p : {"{}", R"({"ops": {"P": {"split": {"batch1": 2}}}})",
                          R"({"ops": {"Y": {"split": {"in": 2}}}, "fuse": "auto"})"}) {
      const BufferMap out = run_plan(g, plan(p), in);
      const runtime::VerifyReport r = judge(g, in, out);
      EXPECT_TRUE(r.pass()) << p << "\n" << r.text();
      EXPECT_EQ(r.unchecked_cells(), 0) << r.text();

      BufferMap plus = out;
      cell(g, plus, "Y", 0) += 100;  // token 0 attends to itself only
      EXPECT_EQ(judge(g, in, plus).verdict(), Verdict::kFail);
      BufferMap small = out;  // twice the cell's own bar
      cell(g, small, "Y", 5) +=
          static_cast<float>(2 * o.bar(runtime::find_tensor(g, "Y")).values<double>()[5]);
      EXPECT_EQ(judge(g, in, small).outputs.at(0).failing_cells, 1);
      BufferMap zeroed = out;
      for (std::size_t i = 0; i < 64; ++i) cell(g, zeroed, "Y", i) = 0;  // token 0 zeroed
      EXPECT_EQ(judge(g, in, zeroed).verdict(), Verdict::kFail);
    }
  }
}

// Masked terms contribute nothing: the bars of a row's live cells are those of the row without
// its masked cells, whatever the mask value.
TEST(Masked, LiveCellsOfAMaskedSoftmaxHaveTheBarsOfTheShortRow) {
  const ir::Graph masked = build(
      "A: f32[5, 8]\nS: f32[1]\nMask: f32[5, 8]\n"
      "Y = softmax(add(mul(A, S), Mask))\noutput Y\n");
  const ir::Graph live = build("A: f32[5, 3]\nS: f32[1]\nY = softmax(mul(A, S))\noutput Y\n");
  BufferMap in = runtime::generate_inputs(masked, {.seed = 4});
  cell(masked, in, "S", 0) = 3.7F;
  BufferMap live_in = runtime::generate_inputs(live, {.seed = 4});
  cell(live, live_in, "S", 0) = 3.7F;
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t j = 0; j < 3; ++j)
      cell(live, live_in, "A", r * 3 + j) = cell(masked, in, "A", r * 8 + j);
  const runtime::Oracle lo = runtime::evaluate_oracle(live, live_in);
  const Buffer live_bars = lo.bar(runtime::find_tensor(live, "Y"));
  for (float v : {-kInf, -1e9F, -3e4F}) {
    for (std::size_t i = 0; i < 40; ++i) cell(masked, in, "Mask", i) = i % 8 < 3 ? 0.0F : v;
    const runtime::Oracle mo = runtime::evaluate_oracle(masked, in);
    const Buffer bars = mo.bar(runtime::find_tensor(masked, "Y"));
    for (std::size_t r = 0; r < 5; ++r) {
      for (std::size_t j = 0; j < 8; ++j) {
        const double b = bars.values<double>()[r * 8 + j];
        if (j < 3) {
          EXPECT_DOUBLE_EQ(b, live_bars.values<double>()[r * 3 + j]) << v << " " << r << j;
        } else {
          EXPECT_EQ(b, 0) << "a masked weight is 0 in every computation: " << v << " " << r << j;
        }
      }
    }
  }
}

// The max of a row ignores masked cells, however wide their own bars (−1e9 + x rounds by ~32):
// the bar of a max is the width of the interval the computed max can lie in.
TEST(Masked, AMaxIgnoresCellsThatCannotBeSelected) {
  const ir::Graph g = build(
      "Z: f32[4, 10]\nS: f32[1]\nMask: f32[4, 10]\n"
      "M = max(add(mul(Z, S), Mask), dim=1)\noutput M\n");
  BufferMap in = runtime::generate_inputs(g, {.seed = 5});
  cell(g, in, "S", 0) = 1.5F;
  for (std::size_t i = 0; i < 40; ++i) cell(g, in, "Mask", i) = i % 10 < 4 ? 0.0F : -1e9F;
  const runtime::Oracle o = runtime::evaluate_oracle(g, in);
  const Buffer bar = o.bar(runtime::find_tensor(g, "M"));
  for (double b : bar.values<double>()) EXPECT_LT(b, 1e-6);
  const runtime::VerifyReport r = judge(g, in, run_plan(g, plan("{}"), in));
  EXPECT_TRUE(r.pass()) << r.text();
}

// Log-sum-exp and softmax of large logits: exp(x − max) underflows to exactly 0 in float64 for
// most terms; every cell stays checked with a bar far below the output's scale.
TEST(Masked, LogSumExpAndLargeLogitsAreCheckedEverywhere) {
  for (const char* file : {"log_sum_exp.tap", "large_logits.tap", "padding_attention.tap"}) {
    SCOPED_TRACE(file);
    const ir::Graph g = build_file(file);
    BufferMap in = runtime::generate_inputs(g, {.seed = 6});
    verify_testing::fill_masks(g, in, -kInf);
    if (std::string_view(file) == "large_logits.tap") verify_testing::fill_input(g, in, "Big", 400);
    const runtime::Oracle o = runtime::evaluate_oracle(g, in);
    for (ir::TensorId t : runtime::graph_outputs(g)) {
      const Buffer bar = o.bar(t);
      for (double b : bar.values<double>()) {
        ASSERT_TRUE(std::isfinite(b)) << runtime::tensor_name(g, t);
        EXPECT_LT(b, 0.05) << runtime::tensor_name(g, t);
      }
    }
    const runtime::VerifyReport r = judge(g, in, run_plan(g, plan("{}"), in));
    EXPECT_TRUE(r.pass()) << r.text();
    EXPECT_EQ(r.unchecked_cells(), 0) << r.text();
  }
}

// Softmax of inputs whose bars are O(1) (bf16 logits of ~±60 carry D ≈ 0.25): the first-order
// term y_i·(Δx_i + Σ_j y_j·Δx_j) is not a bound there (e^Δ − 1 > Δ), and the naive bf16 run of
// large_logits(×400) fell 2.5× outside it. Move every input of a row to the corners of its bars
// that push y_i furthest down (δ_i = −Δ_i, the others +Δ_j) and up, in long double: the change
// stays within y's D (Δ = D) and within λσ (Δ = λσ) at every cell — and the first-order term
// alone is exceeded somewhere, so the corners are where the old rule failed.
TEST(Masked, SoftmaxBarsHoldWhenItsInputsBarsAreLarge) {
  const ir::Graph g =
      build("X: bf16[6, 12]\nS: bf16[1]\nL = mul(X, S)\nY = softmax(L)\noutput Y\n");
  BufferMap in = runtime::generate_inputs(g, {.seed = 11});
  verify_testing::fill_input(g, in, "S", 64);
  const runtime::Oracle o = runtime::evaluate_oracle(g, in, {.keep_all = true});
  const ir::TensorId lt = runtime::find_tensor(g, "L"), yt = runtime::find_tensor(g, "Y");
  const auto x = o.value.at(lt).values<double>(), y = o.value.at(yt).values<double>();
  const auto dx = o.bound.at(lt).values<double>(), dy = o.bound.at(yt).values<double>();
  const auto sx = o.sigma.at(lt).values<double>(), sy = o.sigma.at(yt).values<double>();
  const double lambda = o.lambda;
  const std::size_t rows = 6, n = 12;
  // The largest |y_i' − y_i| over the two corners of cell i's row, inputs moved by `delta`.
  const auto corner_change = [&](std::size_t row, std::size_t i, auto delta) {
    long double worst = 0;
    for (int sign : {-1, 1}) {
      long double z = 0, zi = 0;
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t k = row * n + j;
        const long double move = (j == i ? sign : -sign) * static_cast<long double>(delta(k));
        const long double e = std::exp(static_cast<long double>(x[k]) + move);
        z += e;
        if (j == i) zi = e;
      }
      worst = std::max(worst, std::fabs(zi / z - static_cast<long double>(y[row * n + i])));
    }
    return static_cast<double>(worst);
  };
  double widest_input = 0;
  int beyond_first_order = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double d_sum = 0;
    for (std::size_t j = 0; j < n; ++j) d_sum += y[r * n + j] * dx[r * n + j];
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t k = r * n + i;
      widest_input = std::max(widest_input, dx[k]);
      const double by_d = corner_change(r, i, [&](std::size_t c) { return dx[c]; });
      const double by_s = corner_change(r, i, [&](std::size_t c) { return lambda * sx[c]; });
      EXPECT_LE(by_d, dy[k]) << "row " << r << " cell " << i << " y " << y[k];
      EXPECT_LE(by_s, lambda * sy[k]) << "row " << r << " cell " << i << " y " << y[k];
      if (by_d > y[k] * (dx[k] + d_sum)) ++beyond_first_order;
    }
  }
  EXPECT_GT(widest_input, 0.1);  // the logits' bars are O(1): the regime under test
  EXPECT_GT(beyond_first_order, 0);
  const runtime::VerifyReport r = judge(g, in, run_plan(g, plan("{}"), in));
  EXPECT_TRUE(r.pass()) << r.text();
}

// Cells whose float64 value is ±inf or NaN are classes: the result must be the same infinity,
// or NaN; a finite number, the other infinity or a NaN for an infinity FAILs.
TEST(NonFinite, ExpectedInfinitiesAndNaNsMustMatchExactly) {
  const ir::Graph g = build(
      "X: f32[2, 4]\nM: f32[2, 4]\nN: f32[2, 4]\n"
      "Y = add(add(mul(X, X), M), N)\noutput Y\n");
  BufferMap in = runtime::generate_inputs(g, {.seed = 7});
  for (std::size_t i = 0; i < 8; ++i) {
    cell(g, in, "M", i) = i == 1 ? kInf : (i == 2 || i == 3 ? -kInf : 0.0F);
    cell(g, in, "N", i) = i == 3 ? kInf : 0.0F;  // −inf + inf: NaN
  }
  const BufferMap out = run_plan(g, plan("{}"), in);
  const runtime::VerifyReport ok = judge(g, in, out);
  ASSERT_TRUE(ok.pass()) << ok.text();
  EXPECT_EQ(ok.unchecked_cells(), 0) << ok.text();
  const std::pair<std::size_t, float> wrong[] = {
      {1, -kInf}, {1, 3e38F}, {1, std::nanf("")}, {2, kInf}, {3, kInf}, {3, 0.0F}, {0, kInf}};
  for (const auto& [i, v] : wrong) {
    BufferMap bad = out;
    cell(g, bad, "Y", i) = v;
    const runtime::VerifyReport r = judge(g, in, bad);
    EXPECT_EQ(r.verdict(), Verdict::kFail) << i << " = " << v << "\n" << r.text();
    EXPECT_EQ(r.outputs.at(0).failing_cells, 1) << r.text();
  }
}

// Exact infinities flow through every rule as certain values (a mask is a constant, not an
// infinite error): sums, means, products, maxima, matmul, division, the unary kernels.
TEST(NonFinite, CertainInfinitiesPassThroughEveryRule) {
  const ir::Graph g = build(R"(
X: f32[3, 6]
W: f32[6, 6]
Mask: f32[3, 6]
One: f32[1]
Z = add(matmul(X, W), Mask)
A = sum(Z, dim=1)
B = mean(Z, dim=1)
C = max(Z, dim=1)
D = matmul(exp(Z), W)
E = div(Z, add(mul(X, X), One))
F = reduce(reshape(tanh(Z), shape=[3, 6]), op=prod)
G = mul(Z, X)
output A, B, C, D, E, F, G
)");
  BufferMap in = runtime::generate_inputs(g, {.seed = 8});
  verify_testing::fill_masks(g, in, -kInf);
  verify_testing::fill_input(g, in, "One", 1);
  const runtime::Oracle o = runtime::evaluate_oracle(g, in);
  const BufferMap out = run_plan(g, plan("{}"), in);
  const runtime::VerifyReport r = judge(g, in, out);
  EXPECT_TRUE(r.pass()) << r.text();
  EXPECT_EQ(r.unchecked_cells(), 0) << r.text();
  // And the non-finite cells are really there (A, B, E, G hold −inf or NaN), and must match.
  for (const char* name : {"A", "B", "E", "G"}) {
    const ir::TensorId t = runtime::find_tensor(g, name);
    const auto v = o.value.at(t).values<double>();
    const auto it = std::find_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); });
    ASSERT_NE(it, v.end()) << name;
    BufferMap bad = out;
    cell(g, bad, name, static_cast<std::size_t>(it - v.begin())) = 1;
    EXPECT_EQ(judge(g, in, bad).verdict(), Verdict::kFail) << name;
  }
}

// A cell whose error the oracle cannot bound makes the output UNCHECKED: not a PASS, exit 1 in
// the CLI; UncheckedCells::kAllow turns it into a PASS with a warning. x / (a − a): the
// denominator is 0 with an error the oracle cannot rule out, so the class of ±inf is unknown.
TEST(Unchecked, AnUnboundedCellIsNotAPass) {
  const ir::Graph g = build(
      "X: f32[2, 3]\nA: f32[2, 3]\nY = div(X, sub(A, A))\nZ = relu(X)\n"
      "output Y, Z\n");
  const BufferMap in = runtime::generate_inputs(g, {.seed = 9});
  const BufferMap out = run_plan(g, plan("{}"), in);
  const runtime::VerifyReport r = judge(g, in, out);
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.verdict(), Verdict::kUnchecked);
  EXPECT_EQ(r.unchecked_cells(), 6);
  EXPECT_EQ(r.outputs.at(0).verdict, Verdict::kUnchecked);
  EXPECT_EQ(r.outputs.at(1).verdict, Verdict::kPass);
  EXPECT_TRUE(
      r.text().starts_with("UNCHECKED Y: 6 of 6 cells unchecked (bar not finite, the "
                           "first at (0, 0))"))
      << r.text();
  EXPECT_EQ(r.to_json()["verdict"], "unchecked");
  EXPECT_EQ(r.to_json()["unchecked_cells"], 6);
  EXPECT_EQ(r.to_json()["outputs"][0]["verdict"], "unchecked");

  const runtime::VerifyReport allowed = judge(g, in, out, UncheckedCells::kAllow);
  EXPECT_TRUE(allowed.pass()) << allowed.text();
  EXPECT_NE(allowed.text().find("PASS   Y: "), std::string::npos) << allowed.text();
  EXPECT_NE(allowed.text().find("WARNING: 6 of 6 cells unchecked"), std::string::npos)
      << allowed.text();
  EXPECT_EQ(allowed.to_json()["allow_unchecked"], true);
  // A failing cell still FAILs, allowed or not.
  BufferMap bad = out;
  cell(g, bad, "Z", 0) += 1;
  EXPECT_EQ(judge(g, in, bad, UncheckedCells::kAllow).verdict(), Verdict::kFail);
  EXPECT_EQ(judge(g, in, bad).verdict(), Verdict::kFail);
}

// The class of an infinity is unknown where a factor may be 0 or an error is unbounded: then
// the cell is unchecked, never silently passed.
TEST(Unchecked, AnInfinityTimesAFactorThatMayBeZeroIsUnknown) {
  const ir::Graph g = build(
      "X: f32[1, 4]\nA: f32[1, 4]\nB: f32[1, 4]\n"
      "Y = mul(X, sub(A, B))\noutput Y\n");
  BufferMap in = runtime::generate_inputs(g, {.seed = 10});
  for (std::size_t i = 0; i < 4; ++i) {
    cell(g, in, "X", i) = i == 0 ? -kInf : 1.0F;
    cell(g, in, "A", i) = 1.0F;
    cell(g, in, "B", i) = i == 0 ? 1.0F : 0.5F;  // cell 0: −inf · (1 − 1): NaN, but uncertain
  }
  const runtime::VerifyReport r = judge(g, in, run_plan(g, plan("{}"), in));
  EXPECT_EQ(r.unchecked_cells(), 1) << r.text();
  EXPECT_EQ(r.verdict(), Verdict::kUnchecked) << r.text();
  // With a factor whose sign is certain, the class is certain.
  cell(g, in, "B", 0) = 0.25F;
  const runtime::VerifyReport sure = judge(g, in, run_plan(g, plan("{}"), in));
  EXPECT_TRUE(sure.pass()) << sure.text();
  EXPECT_EQ(sure.unchecked_cells(), 0);
}

}  // namespace
}  // namespace tapestry
