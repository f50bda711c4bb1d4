// A cell whose deterministic bound D overflowed to ∞ while its σ stayed finite (error_rules.cpp,
// is_known; docs/runtime.md, "What verifying costs"): its bar is λσ, as for a D of 1e300 — not
// an unknown error that makes everything after it unchecked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "error_rules.h"
#include "tapestry/runtime/fast_kernels.h"
#include "verify_testing.h"

namespace tapestry {
namespace {

using ir::DType;
using runtime::Buffer;
using runtime::BufferMap;

// One operation's rule on the graph's generated inputs (float64), every float input carrying
// σ = 1e-6 and D = `bound`.
runtime::detail::RuleResult rule_with_bound(const ir::Graph& g, double bound) {
  const BufferMap f32 = runtime::generate_inputs(g, {.seed = 3});
  BufferMap value, sigma, bounds;
  for (const auto& [t, b] : f32) {
    Buffer v(DType::kFloat64, b.range());
    const std::span<const float> from = b.values<float>();
    for (std::size_t i = 0; i < from.size(); ++i) v.values<double>()[i] = from[i];
    Buffer s(DType::kFloat64, b.range()), d(DType::kFloat64, b.range());
    for (double& x : s.values<double>()) x = 1e-6;
    for (double& x : d.values<double>()) x = bound;
    value.emplace(t, std::move(v));
    sigma.emplace(t, std::move(s));
    bounds.emplace(t, std::move(d));
  }
  EXPECT_EQ(g.operations().size(), 1U);
  const runtime::detail::OperationEval eval(g, g.operations().front(), runtime::fast_kernels(), 8);
  return eval.run(value, sigma, bounds);
}

bool bitwise_equal(const Buffer& a, const Buffer& b) {
  return a.size() == b.size() &&
         std::memcmp(a.bytes(), b.bytes(), static_cast<std::size_t>(a.size()) * 8) == 0;
}

// Every rule gives the same σ, bitwise, for inputs with D = ∞ as for D = 1e300 (the bars
// min(λσ, D) it reads are λσ either way), all of it finite, and a D at least as large —
// never NaN (∞·0 of a zero weight, slope or deviation is ∞: no worst case). Before, a D of ∞
// made the cell unknown: σ = D = ∞ out of every unary rule, softmax, the selections, so
// ViT-B/16's third encoder layer on was UNCHECKED.
TEST(UnboundedD, IsTheBarOfAHugeFiniteD) {
  for (const char* op :
       {"Y = relu(X)", "Y = gelu(X)", "Y = tanh(X)", "Y = exp(X)", "Y = softmax(X)",
        "Y = max(X, dim=1)", "Y = mean(X, dim=1)", "Y = sum(X, dim=1)", "Y = add(X, W)",
        "Y = mul(X, W)", "Y = linear(X, W, b)", "Y = div(X, W)"}) {
    SCOPED_TRACE(op);
    const bool linear = std::string_view(op).starts_with("Y = linear");
    const std::string bias = linear ? "b: f32[4]\n" : "";
    const ir::Graph g =
        verify_testing::build("X: f32[4, 16]\nW: f32[4, 16]\n" + bias + op + "\noutput Y\n");
    const runtime::detail::RuleResult inf = rule_with_bound(g, INFINITY);
    const runtime::detail::RuleResult huge = rule_with_bound(g, 1e300);
    ASSERT_EQ(inf.sigmas.size(), 1U);
    EXPECT_TRUE(bitwise_equal(inf.sigmas[0], huge.sigmas[0]));
    for (double s : inf.sigmas[0].values<double>()) EXPECT_TRUE(std::isfinite(s)) << s;
    const std::span<const double> d_inf = inf.bounds[0].values<double>();
    const std::span<const double> d_huge = huge.bounds[0].values<double>();
    for (std::size_t i = 0; i < d_inf.size(); ++i) EXPECT_GE(d_inf[i], d_huge[i]);  // not NaN
  }
}

}  // namespace
}  // namespace tapestry
