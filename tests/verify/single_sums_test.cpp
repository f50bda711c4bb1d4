// The oracle's float32 sums (OracleOptions::single_precision_sums; error_rules.cpp, run_single):
// linear's, matmul's and conv2d's Σ|x||w|, propagated σ² and D and live-term counts as float32
// GEMMs on operands rounded up, scaled by (1 + γ53(n)) / (1 − γ24(n)). The bars they give are never
// below the float64 ones — on inputs built to break a careless float32 sum: cancelling values,
// ~2^21 terms, magnitudes from 1e-15 to 1e15, exact zeros (relu's, a mask's), σ² that would
// underflow float32, x² that would overflow it, a D of ∞ — and at most ~n·2^−24 above them.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "error_rules.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/oracle.h"
#include "verify_testing.h"

namespace tapestry {
namespace {

namespace fs = std::filesystem;
using ir::DType;
using runtime::Buffer;
using runtime::BufferMap;

// Each float input's value, σ and D, cell k of tensor t: `cell(t, k)` = {value, σ, D}.
struct Cell {
  double value, sigma, bound;
};
using CellFn = std::function<Cell(const std::string& tensor, std::int64_t k)>;

struct Rule {
  runtime::detail::RuleResult single, full;
};

// The graph's one operation under its rule, with float32 sums and without.
Rule both_ways(const ir::Graph& g, const CellFn& cell) {
  BufferMap value, sigma, bound;
  for (ir::TensorId t : runtime::graph_inputs(g)) {
    const runtime::Range range = g.tensor(t).range();
    Buffer v(DType::kFloat64, range), s(DType::kFloat64, range), d(DType::kFloat64, range);
    const std::string name = runtime::tensor_name(g, t);
    for (std::int64_t k = 0; k < range.size(); ++k) {
      const Cell c = cell(name, k);
      v.values<double>()[static_cast<std::size_t>(k)] = c.value;
      s.values<double>()[static_cast<std::size_t>(k)] = c.sigma;
      d.values<double>()[static_cast<std::size_t>(k)] = c.bound;
    }
    value.emplace(t, std::move(v));
    sigma.emplace(t, std::move(s));
    bound.emplace(t, std::move(d));
  }
  EXPECT_EQ(g.operations().size(), 1U);
  const auto eval = [&](bool single) {
    const runtime::detail::OperationEval e(
        g, g.operations().front(), runtime::fast_kernels(), 8, nullptr,
        single ? runtime::detail::SingleSums::kAlways : runtime::detail::SingleSums::kNever);
    return e.run(value, sigma, bound);
  };
  return {eval(true), eval(false)};
}

// Cell by cell: single ≥ full, and single ≤ full·(1 + slack) + tiny. Returns how many cells
// differ (0: the float32 path did not run).
std::int64_t expect_above(const Buffer& single, const Buffer& full, double slack,
                          const char* what) {
  const std::span<const double> s = single.values<double>(), f = full.values<double>();
  EXPECT_EQ(s.size(), f.size());
  std::int64_t differ = 0, below = 0, loose = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != f[i]) ++differ;
    if (!(s[i] >= f[i])) {
      if (below++ == 0) ADD_FAILURE() << what << " cell " << i << ": " << s[i] << " < " << f[i];
    }
    if (!(s[i] <= f[i] * (1 + slack) + 1e-300)) {
      if (loose++ == 0) ADD_FAILURE() << what << " cell " << i << ": " << s[i] << " ≫ " << f[i];
    }
  }
  return differ;
}

std::int64_t expect_rule_above(const Rule& r, double n) {
  EXPECT_EQ(r.single.sigmas.size(), r.full.sigmas.size());
  std::int64_t differ = 0;
  const double slack = 4 * n * 0x1p-24;
  for (std::size_t o = 0; o < r.full.sigmas.size(); ++o) {
    // The values are the float64 GEMM's in both: the same bits.
    EXPECT_EQ(std::memcmp(r.single.values[o].bytes(), r.full.values[o].bytes(),
                          static_cast<std::size_t>(r.full.values[o].size()) * 8),
              0);
    differ += expect_above(r.single.sigmas[o], r.full.sigmas[o], slack, "σ");
    differ += expect_above(r.single.bounds[o], r.full.bounds[o], slack, "D");
    EXPECT_GE(r.single.magnitudes[o], r.full.magnitudes[o]);
  }
  return differ;
}

// A deterministic pseudo-random number in [-1, 1) from (tensor, k).
double noise(const std::string& t, std::int64_t k) {
  std::uint64_t h =
      std::hash<std::string>{}(t) ^ (static_cast<std::uint64_t>(k) * 0x9E3779B97F4A7C15ULL);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 29;
  return static_cast<double>(h >> 11) * 0x1p-52 - 1;
}

// Cancelling values (±1e4 + noise: Σxw is tiny next to Σ|x||w|), errors carried in on both
// operands and the bias, and every fifth cell of X an exact zero (relu's certain 0: a count of
// live terms runs). Terms from 16 to 2^21.
TEST(SingleSums, AreNeverBelowTheFloat64OnesAndCloseToThem) {
  for (const std::int64_t k : {std::int64_t{16}, std::int64_t{4096}, std::int64_t{1} << 21}) {
    SCOPED_TRACE(k);
    const std::int64_t rows = k > 4096 ? 1 : 8;
    const ir::Graph g = verify_testing::build(
        "X: f32[" + std::to_string(rows) + ", " + std::to_string(k) + "]\nW: f32[3, " +
        std::to_string(k) + "]\nb: f32[3]\nY = linear(X, W, b)\noutput Y\n");
    const Rule r = both_ways(g, [](const std::string& t, std::int64_t i) -> Cell {
      if (t == "X" && i % 5 == 0) return {0, 0, 0};
      const double sign = i % 2 == 0 ? 1 : -1;
      const double v = sign * 1e4 + noise(t, i);
      return {v, 1e-3 * std::abs(noise(t, i + 7)), 3e-3 * std::abs(noise(t, i + 11))};
    });
    EXPECT_GT(expect_rule_above(r, static_cast<double>(k) + 2), 0) << "the float32 path never ran";
  }
}

// Magnitudes from 1e-15 to 1e15 in one sum (products from 1e-30 to 1e30, float32's normal
// range is 1e-38 to 3e38), matmul with a batch dim: rounded up, scaled, still above.
TEST(SingleSums, HoldAcrossThirtyDecades) {
  const ir::Graph g =
      verify_testing::build("A: f32[2, 4, 64]\nB: f32[2, 64, 5]\nY = matmul(A, B)\noutput Y\n");
  const Rule r = both_ways(g, [](const std::string& t, std::int64_t i) -> Cell {
    const double scale = std::pow(10.0, static_cast<double>(i % 31) - 15);
    const double v = scale * noise(t, i);
    return {v, std::abs(v) * 1e-7, std::abs(v) * 3e-7};
  });
  EXPECT_GT(expect_rule_above(r, 66), 0) << "the float32 path never ran";
}

// Values of 1e-20 (products under float32's smallest normal, 1.2e-38) with σ = 1e-25 (σ² is
// 1e-50), values of 1e25 (x² overflows float32), and more terms than 2^22: float32 cannot hold
// these sums, so the float64 ones are used — bitwise the same numbers. A D of ∞ takes float64
// for the D terms and float32 for the rest: still above.
TEST(SingleSums, OutsideFloat32sRangeAreTheFloat64Ones) {
  struct Case {
    const char* name;
    std::int64_t k;
    bool float64;  // every sum out of float32's range
    CellFn cell;
  };
  const std::vector<Case> cases = {
      {"tiny", 64, true,
       [](const std::string& t, std::int64_t i) -> Cell {
         return {1e-20 * noise(t, i), 1e-25, 1e-24};
       }},
      {"huge", 64, true,
       [](const std::string& t, std::int64_t i) -> Cell {
         return {1e25 * noise(t, i), 1e18, 1e19};
       }},
      {"2^22 terms", std::int64_t{1} << 22, true,
       [](const std::string& t, std::int64_t i) -> Cell {
         return {noise(t, i), 1e-6, 1e-5};
       }},
      {"D of ∞", 64, false,
       [](const std::string& t, std::int64_t i) -> Cell {
         return {noise(t, i), 1e-6, i == 3 ? INFINITY : 1e-5};
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ir::Graph g =
        verify_testing::build("X: f32[1, " + std::to_string(c.k) + "]\nW: f32[1, " +
                              std::to_string(c.k) + "]\nY = linear_nobias(X, W)\noutput Y\n");
    const Rule r = both_ways(g, c.cell);
    const std::int64_t differ = expect_rule_above(r, static_cast<double>(c.k) + 2);
    if (c.float64) {
      EXPECT_EQ(differ, 0);
    }
  }
}

// conv2d's sums in float32: oneDNN's direct convolution (16 input channels, 8×8 output pixels:
// where the fast kernel takes it) and im2col + GEMM (stride 2, 4 channels), on cancelling values
// with errors carried in on both operands and exact zeros in x (relu's: a live count runs).
// The float32 kernels sum the same products in other orders: the bars stay above.
TEST(SingleSums, OfConvolutionsAreNeverBelowTheFloat64Ones) {
  for (const char* source : {"X: f32[2, 16, 10, 10]\nW: f32[8, 16, 3, 3]\nY = conv2d(X, W)\n",
                             "X: f32[1, 4, 11, 11]\nW: f32[6, 4, 3, 3]\n"
                             "Y = conv2d(X, W, stride=2)\n"}) {
    SCOPED_TRACE(source);
    const ir::Graph g = verify_testing::build(std::string(source) + "output Y\n");
    runtime::reset_fast_kernel_counts();
    const Rule r = both_ways(g, [](const std::string& t, std::int64_t i) -> Cell {
      if (t == "X" && i % 7 == 0) return {0, 0, 0};
      const double sign = i % 2 == 0 ? 1 : -1;
      const double v = sign * 1e3 + noise(t, i);
      return {v, 1e-4 * std::abs(noise(t, i + 3)), 4e-4 * std::abs(noise(t, i + 5))};
    });
    EXPECT_GT(expect_rule_above(r, 16 * 9 + 2), 0) << "the float32 path never ran";
    const bool direct = std::string_view(source).find("stride") == std::string_view::npos;
    EXPECT_EQ(runtime::fast_kernel_counts().onednn_convs > 0, direct);
  }
}

// grouped_conv2d's sums in float32, as conv2d's: a depthwise layer through oneDNN's grouped
// convolution (16 groups of one channel, 2×8×8 output pixels) and two groups of 3 channels
// through im2col + GEMM per group (stride 2, 4 output pixels: below oneDNN's bar). Fails
// without grouped_conv2d in run_single's list (the float32 path never runs).
TEST(SingleSums, OfGroupedConvolutionsAreNeverBelowTheFloat64Ones) {
  for (const char* source : {"X: f32[2, 16, 10, 10]\nW: f32[16, 1, 3, 3]\n"
                             "Y = grouped_conv2d(X, W, groups=16)\n",
                             "X: f32[1, 6, 5, 5]\nW: f32[4, 3, 3, 3]\n"
                             "Y = grouped_conv2d(X, W, groups=2, stride=2)\n"}) {
    SCOPED_TRACE(source);
    const ir::Graph g = verify_testing::build(std::string(source) + "output Y\n");
    runtime::reset_fast_kernel_counts();
    const Rule r = both_ways(g, [](const std::string& t, std::int64_t i) -> Cell {
      if (t == "X" && i % 7 == 0) return {0, 0, 0};
      const double sign = i % 2 == 0 ? 1 : -1;
      const double v = sign * 1e3 + noise(t, i);
      return {v, 1e-4 * std::abs(noise(t, i + 3)), 4e-4 * std::abs(noise(t, i + 5))};
    });
    EXPECT_GT(expect_rule_above(r, 3 * 9 + 2), 0) << "the float32 path never ran";
    const bool direct = std::string_view(source).find("stride") == std::string_view::npos;
    EXPECT_EQ(runtime::fast_kernel_counts().onednn_convs > 0, direct);
  }
}

// linear's live-term counts as row counts (error_rules.cpp, row_counts) where one operand holds
// no exact zero: x with relu's zeros against a dense w, a dense x against w with pruned
// weights, a bias with zeros, batch dims. Exact inputs carry no error in, so σ is the rounding
// term alone, √n·u·A + n·tiny, n the live terms of the cell — counted here by hand — and
// D = γn·A + n·tiny: each cell's n, read back from σ, must be its own count (n ± 1 moves σ by
// ≥ 0.2% at n ≤ 200).
TEST(SingleSums, LiveTermCountsAreEachCellsOwn) {
  struct Case {
    const char* source;
    std::function<bool(const std::string&, std::int64_t)> zero;  // cell k of tensor t is 0
  };
  const std::vector<Case> cases = {
      {"X: f32[3, 5, 40]\nW: f32[7, 40]\nb: f32[7]\nY = linear(X, W, b)\n",
       [](const std::string& t, std::int64_t k) {
         return (t == "X" && k % 3 == 0) || (t == "X" && k / 40 == 4) || (t == "b" && k % 2 == 0);
       }},
      {"X: f32[6, 40]\nW: f32[9, 40]\nY = linear_nobias(X, W)\n",
       [](const std::string& t, std::int64_t k) {
         return t == "W" && (k % 5 == 1 || k / 40 == 2);
       }},
      {"X: f32[6, 40]\nW: f32[9, 40]\nb: f32[9]\nY = linear(X, W, b)\n",
       [](const std::string& t, std::int64_t k) { return t == "b" && k % 4 == 0; }},
      {"X: f32[6, 40]\nW: f32[9, 40]\nb: f32[9]\nY = linear(X, W, b)\n",  // both: a GEMM
       [](const std::string& t, std::int64_t k) {
         return (t == "W" && k % 5 == 1) || (t == "X" && k % 7 == 2);
       }},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.source);
    const ir::Graph g = verify_testing::build(std::string(tc.source) + "output Y\n");
    const auto value = [&](const std::string& t, std::int64_t k) {
      return tc.zero(t, k) ? 0.0 : 0.5 + std::abs(noise(t, k));
    };
    const Rule r = both_ways(g, [&](const std::string& t, std::int64_t k) -> Cell {
      return {value(t, k), 0, 0};
    });
    const bool bias = std::string_view(tc.source).find("b:") != std::string_view::npos;
    const std::int64_t in = 40, outs = bias ? (std::string_view(tc.source).find("[7]") !=
                                                       std::string_view::npos
                                                   ? 7
                                                   : 9)
                                            : 9;
    for (const runtime::detail::RuleResult* rule : {&r.single, &r.full}) {
      const std::span<const double> s = rule->sigmas[0].values<double>();
      const std::span<const double> d = rule->bounds[0].values<double>();
      for (std::size_t cell = 0; cell < s.size(); ++cell) {
        const auto row = static_cast<std::int64_t>(cell) / outs;
        const auto o = static_cast<std::int64_t>(cell) % outs;
        double n = 0, a = 0;
        for (std::int64_t k = 0; k < in; ++k) {
          const double x = value("X", row * in + k), w = value("W", o * in + k);
          n += x != 0 && w != 0 ? 1 : 0;
          a += x * w;
        }
        if (bias) {
          n += value("b", o) != 0 ? 1 : 0;
          a += value("b", o);
        }
        const double u = 0x1p-24, tiny = FLT_MIN;
        const double sigma = std::sqrt(n) * u * a + n * tiny;
        const double bound = n * u / (1 - n * u) * a + n * tiny;
        ASSERT_NEAR(s[cell], sigma, sigma * 1e-5) << "cell " << cell << ", n = " << n;
        ASSERT_NEAR(d[cell], bound, bound * 1e-5) << "cell " << cell << ", n = " << n;
      }
    }
  }
}

// Live-term counts in float32 are exact: a masked score matrix (every other cell an exact 0)
// times V gives the float64 rule's σ and D where nothing else carries an error — the count is
// the only float32 sum whose factor is 1, and Σ|x||w| of small integers is exact too.
TEST(SingleSums, CountsAndSmallIntegersAreExact) {
  const ir::Graph g =
      verify_testing::build("P: f32[16, 32]\nV: f32[32, 8]\nY = matmul(P, V)\noutput Y\n");
  const Rule r = both_ways(g, [](const std::string& t, std::int64_t i) -> Cell {
    if (t == "P" && i % 2 == 1) return {0, 0, 0};
    return {static_cast<double>(i % 7) - 3, 0, 0};
  });
  ASSERT_EQ(r.single.sigmas.size(), 1U);
  EXPECT_EQ(expect_rule_above(r, 34), 0);
  EXPECT_EQ(r.single.magnitudes[0], r.full.magnitudes[0]);
}

// The whole oracle (float32 where it pays, OracleOptions's default), on every example (the
// mutation suite's small stand-ins) and masked graph and on an MLP whose GEMMs are large enough
// to take float32 (a relu's exact zeros before the second): every output's bar is ≥ the float64
// one and within 2^−8 of it relative.
TEST(SingleSums, NeverLowerABarOfAnyExample) {
  std::vector<std::pair<std::string, std::string>> graphs = {
      {"mlp 256",
       "X: f32[256, 64]\nW1: f32[256, 64]\nb1: f32[256]\nW2: f32[256, 256]\n"
       "b2: f32[256]\nH = relu(linear(X, W1, b1))\nY = linear(H, W2, b2)\n"
       "output Y\n"}};
  const fs::path small = fs::path(TAPESTRY_TEST_DATA) / "cli";
  const auto read = [](const fs::path& file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  for (const auto& e : fs::directory_iterator(TAPESTRY_EXAMPLES)) {
    if (e.path().extension() != ".tap") continue;
    const fs::path stand_in = small / (e.path().stem().string() + "_small.tap");
    const fs::path file = fs::exists(stand_in) ? stand_in : e.path();
    graphs.emplace_back(file.string(), read(file));
  }
  for (const auto& e : fs::directory_iterator(fs::path(TAPESTRY_TEST_DATA) / "verify"))
    if (e.path().extension() == ".tap") graphs.emplace_back(e.path().string(), read(e.path()));
  std::int64_t mlp_differ = 0;
  for (const auto& [name, source] : graphs) {
    SCOPED_TRACE(name);
    const ir::Graph g = verify_testing::build(source);
    BufferMap inputs = runtime::generate_inputs(g, {.seed = 5});
    verify_testing::fill_masks(g, inputs, -INFINITY);
    const runtime::Oracle single = runtime::evaluate_oracle(g, inputs);
    const runtime::Oracle full =
        runtime::evaluate_oracle(g, inputs, {.single_precision_sums = false});
    std::int64_t differ = 0;
    for (const auto& [t, v] : full.value) {
      if (!full.sigma.contains(t)) continue;
      differ += expect_above(single.bar(t), full.bar(t), 0x1p-8, "bar");
    }
    if (name == "mlp 256") mlp_differ = differ;
  }
  EXPECT_GT(mlp_differ, 0) << "the float32 path never ran";
}

}  // namespace
}  // namespace tapestry
