// The verifier: bars local to each cell, the three modes, declared outputs, and faults it must
// catch on small graphs (the mutation suite runs every example; see mutation_test.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "tapestry/runtime/naive_executor.h"
#include "verify_testing.h"

namespace tapestry {
namespace {

using runtime::Buffer;
using runtime::BufferMap;
using runtime::Point;
using runtime::Range;
using runtime::VerifyMode;
using verify_testing::build;
using verify_testing::plan;
using verify_testing::run_plan;

constexpr std::string_view kMlp = R"(
X:  f32[64, 32]
W1: f32[64, 32]
b1: f32[64]
W2: f32[32, 64]
b2: f32[32]
H = relu(linear(X, W1, b1))
Y = linear(H, W2, b2)
output Y
)";

// Adds `delta` to every cell of tensor `name`'s buffer in `buffers`.
void shift_values(const ir::Graph& g, BufferMap& buffers, const std::string& name,
                  const std::function<float(float)>& f) {
  for (float& v : buffers.at(runtime::find_tensor(g, name)).values<float>()) v = f(v);
}

runtime::VerifyReport judge(const ir::Graph& g, const BufferMap& inputs, const BufferMap& results,
                            VerifyMode mode = VerifyMode::kBound) {
  return runtime::verify_outputs(g, inputs, results, {.mode = mode});
}

TEST(Oracle, NaiveRunLiesWithinItsOwnBarsAndBarsAreTight) {
  const ir::Graph g = build(kMlp);
  const BufferMap in = runtime::generate_inputs(g, {.seed = 3});
  const runtime::Oracle o = runtime::evaluate_oracle(g, in);
  const ir::TensorId y = runtime::find_tensor(g, "Y");
  const BufferMap naive = runtime::NaiveExecutor(g).run(in);
  const auto value = o.value.at(y).values<double>();
  const runtime::Buffer bars = o.bar(y);
  const auto bar = bars.values<double>();
  const auto got = naive.at(y).values<float>();
  double max_bar = 0;
  for (std::size_t i = 0; i < value.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - value[i]), bar[i]) << "cell " << i;
    EXPECT_GT(bar[i], 0);
    max_bar = std::max(max_bar, bar[i]);
  }
  // Tight: a dropped b2 (|b2| up to 1) is far outside it.
  EXPECT_LT(max_bar, 1e-3);
  EXPECT_TRUE(o.unmodelled.empty());
}

TEST(Verify, FastKernelPlansPass) {
  const ir::Graph g = build(kMlp);
  const BufferMap in = runtime::generate_inputs(g, {.seed = 5});
  for (const char* p :
       {R"({})", R"({"ops": {"H/linear": {"split": {"batch": 2}}}, "fuse": "auto"})",
        R"({"ops": {"Y": {"split": {"in": 4}}}})",
        R"({"ops": {"H/linear": {"split": {"out": 2}}, "H": {"split": {"d1": 2}},
                                    "Y": {"split": {"in": 2}}}, "fuse": [["H/linear", "H"]]})",
        R"({"ops": {"H/linear": {"split": {"in": 3, "batch": 2}}}})"}) {
    const runtime::VerifyReport r = judge(g, in, run_plan(g, plan(p), in));
    EXPECT_TRUE(r.pass()) << p << "\n" << r.text();
  }
}

TEST(Verify, DroppedOrDoubledBiasFails) {
  const ir::Graph g = build(kMlp);
  const BufferMap in = runtime::generate_inputs(g, {.seed = 5});
  for (float factor : {0.0F, 2.0F}) {
    BufferMap wrong = in;
    shift_values(g, wrong, "b2", [factor](float v) { return v * factor; });
    const runtime::VerifyReport r =
        judge(g, in, run_plan(g, plan(R"({"ops": {"Y": {"split": {"in": 2}}}})"), wrong));
    EXPECT_FALSE(r.pass()) << factor << "\n" << r.text();
  }
}

TEST(Verify, OneUlpInOneCellOfAnExactRunFails) {
  const ir::Graph g = build(kMlp);
  const BufferMap in = runtime::generate_inputs(g, {.seed = 5, .exact = true});
  BufferMap out = run_plan(g, plan(R"({"ops": {"Y": {"split": {"in": 4}}}})"), in);
  EXPECT_TRUE(judge(g, in, out, VerifyMode::kExact).pass());
  float& cell = out.at(runtime::find_tensor(g, "Y")).values<float>()[17];
  cell = std::nextafter(cell, INFINITY);
  const runtime::VerifyReport r = judge(g, in, out, VerifyMode::kExact);
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.outputs.at(0).failing_cells, 1);
}

// cast's bar (error rule `move`, kernels/cast.yaml): widening is exact — a bar of 0, so a
// widened result one ulp off FAILs; narrowing adds one rounding of the target dtype.
TEST(Verify, CastWideningIsExactAndNarrowingAddsOneRounding) {
  const ir::Graph g = build(
      "X: bf16[4, 8]\nD: f64[4, 8]\nW = cast(X, to=f32)\nN = cast(D, to=f32)\n"
      "H = cast(D, to=bf16)\noutput W\noutput N\noutput H\n");
  const BufferMap in = runtime::generate_inputs(g, {.seed = 7});
  BufferMap out = run_plan(g, plan(R"({"ops": {"W": {"split": {"d0": 2}}}})"), in);
  const runtime::VerifyReport ok = judge(g, in, out);
  EXPECT_TRUE(ok.pass()) << ok.text();
  const runtime::Oracle o = runtime::evaluate_oracle(g, in);
  const ir::TensorId w = runtime::find_tensor(g, "W"), n = runtime::find_tensor(g, "N"),
                     h = runtime::find_tensor(g, "H");
  const runtime::Buffer w_bars = o.bar(w), n_bars = o.bar(n), h_bars = o.bar(h);
  const auto d = in.at(runtime::find_tensor(g, "D")).values<double>();
  for (std::size_t i = 0; i < 32; ++i) {
    if (d[i] == 0) continue;
    EXPECT_EQ(w_bars.values<double>()[i], 0) << "widening bf16 → f32 is exact, cell " << i;
    EXPECT_GT(n_bars.values<double>()[i], 0) << "f64 → f32 rounds, cell " << i;
    EXPECT_GT(h_bars.values<double>()[i], 0x1p-16 * std::abs(d[i])) << "f64 → bf16, cell " << i;
  }
  float& cell = out.at(w).values<float>()[5];
  cell = std::nextafter(cell, INFINITY);
  const runtime::VerifyReport r = judge(g, in, out);
  EXPECT_FALSE(r.pass());
}

TEST(Verify, ExactModeIsRefusedWhereRoundingIsInevitable) {
  const ir::Graph g = build("X: f32[4, 8]\nY = softmax(X)\noutput Y\n");
  const BufferMap in = runtime::generate_inputs(g, {.seed = 1, .exact = true});
  EXPECT_NE(runtime::evaluate_oracle(g, in).exact_reason.find("softmax"), std::string::npos);
  // Inputs that are not small integers are refused too.
  const ir::Graph lin = build("X: f32[4, 8]\nY = relu(X)\noutput Y\n");
  EXPECT_NE(runtime::evaluate_oracle(lin, runtime::generate_inputs(lin, {.seed = 1}))
                .exact_reason.find("not a small integer"),
            std::string::npos);
  const ir::Graph big = build("X: f32[4, 8]\nW: f32[8, 8]\nY = mul(X, X)\noutput Y\n");
  BufferMap huge = runtime::generate_inputs(big, {.seed = 1, .exact = true});
  for (float& v : huge.at(runtime::find_tensor(big, "X")).values<float>()) v = 8192;
  EXPECT_NE(runtime::evaluate_oracle(big, huge).exact_reason.find("reach"), std::string::npos);
}

// One huge, unrelated output must not loosen the bar of a small one.
TEST(Verify, BarsAreLocalToEachOutput) {
  const ir::Graph g = build(R"(
X: f32[8, 16]
W: f32[4, 16]
b: f32[4]
Big: f32[8, 8]
Y = linear(X, W, b)
Z = mul(Big, Big)
output Y, Z
)");
  BufferMap in = runtime::generate_inputs(g, {.seed = 2});
  for (float& v : in.at(runtime::find_tensor(g, "Big")).values<float>()) v = 1e9F * (v + 2);
  BufferMap out = run_plan(g, plan("{}"), in);
  const runtime::VerifyReport ok = judge(g, in, out);
  ASSERT_TRUE(ok.pass()) << ok.text();
  EXPECT_LT(ok.outputs.at(0).max_bar, 1e-5) << ok.text();
  out.at(runtime::find_tensor(g, "Y")).values<float>()[3] += 1e-3F;
  EXPECT_FALSE(judge(g, in, out).pass());
}

TEST(Verify, DeclaredOutputsAreTheOutputsConsumedOrInputs) {
  const ir::Graph g = build("X: f32[4, 3]\nA = relu(X)\nB = neg(A)\noutput A, B, X\n");
  std::vector<std::string> names;
  for (ir::TensorId t : runtime::graph_outputs(g)) names.push_back(runtime::tensor_name(g, t));
  EXPECT_EQ(names, (std::vector<std::string>{"X", "A", "B"}));
  const BufferMap in = runtime::generate_inputs(g, {.seed = 2});
  BufferMap out = run_plan(g, plan(R"({"ops": {"A": {"split": {"d0": 2}}}})"), in);
  ASSERT_EQ(out.size(), 3U);
  EXPECT_TRUE(judge(g, in, out).pass());
  out.at(runtime::find_tensor(g, "A")).values<float>()[0] += 1;  // a consumed output, wrong
  EXPECT_FALSE(judge(g, in, out).pass());
  // Without declared outputs: the tensors nothing consumes.
  const ir::Graph plain = build("X: f32[4, 3]\nA = relu(X)\nB = neg(A)\n");
  ASSERT_EQ(runtime::graph_outputs(plain).size(), 1U);
}

TEST(Verify, MissingOrMisshapenResultsFailNamingTheOutput) {
  const ir::Graph g = build("X: f32[4, 3]\nA = relu(X)\nB = neg(A)\noutput A, B\n");
  const BufferMap in = runtime::generate_inputs(g, {.seed = 2});
  BufferMap out = run_plan(g, plan("{}"), in);
  out.erase(runtime::find_tensor(g, "A"));
  runtime::VerifyReport r = judge(g, in, out);
  EXPECT_FALSE(r.pass());
  EXPECT_NE(r.text().find("FAIL   A: no result"), std::string::npos) << r.text();
  out.emplace(runtime::find_tensor(g, "A"),
              Buffer(runtime::DType::kFloat32, Range::of_shape({3, 4})));
  r = judge(g, in, out);
  EXPECT_NE(r.text().find("the result is"), std::string::npos) << r.text();
}

// Overflow: where the naive float run is ±inf the result must be the same infinity.
TEST(Verify, NonFiniteCellsMustMatchInKind) {
  const ir::Graph g = build("X: f32[2, 4]\nY = exp(X)\noutput Y\n");
  BufferMap in = runtime::generate_inputs(g, {.seed = 2});
  in.at(runtime::find_tensor(g, "X")).values<float>()[1] = 100;  // e^100 > FLT_MAX
  BufferMap out = run_plan(g, plan("{}"), in);
  EXPECT_TRUE(judge(g, in, out).pass()) << judge(g, in, out).text();
  out.at(runtime::find_tensor(g, "Y")).values<float>()[1] = 3e38F;
  EXPECT_FALSE(judge(g, in, out).pass());
}

// Found by the block executor property (block_properties_test.cpp): the naive float32 run of a
// few roundings in a row lay outside bars that added per-operation worst cases in quadrature;
// gelu's error is not relative to |gelu(x)| (½x·(1 + erf) cancels at x < 0); a product may
// exceed its largest factor. Each graph's naive run must lie within its bars for every seed —
// and the bars of the short chains stay a few ulps wide.
TEST(Oracle, NaiveRunsOfShortChainsLieWithinTheirBars) {
  const struct {
    const char* tap;
    double max_bar;  // the widest bar any cell may have (inputs in [−1, 1); the product ~148)
  } kCases[] = {
      {"X: f32[32, 32]\ns: f32[]\nc: f32[]\nY = add(mul(X, s), c)\noutput Y\n", 3e-7},
      {"X: f32[32, 33, 3]\nb: f32[3]\nc: f32[]\nY = add(add(tanh(X), b), c)\noutput Y\n", 8e-7},
      {"X: f32[1, 1, 32, 32]\nK: f32[1, 1, 1, 1]\nc: f32[]\nY = add(conv2d(X, K), c)\n"
       "output Y\n",
       3e-7},
      {"X: f32[32, 33, 1, 3]\nZ: f32[4, 3]\nY = sub(softmax(X), Z)\noutput Y\n", 5e-7},
      {"X: f32[4, 3, 5]\nW: f32[4, 5]\nb: f32[4]\nY = gelu(linear(X, W, b))\noutput Y\n", 5e-6},
      {"X: f32[5, 1]\nY = reduce(exp(softmax(X)), op=prod)\noutput Y\n", 1e-3},
  };
  for (const auto& c : kCases) {
    const ir::Graph g = build(c.tap);
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
      const BufferMap in = runtime::generate_inputs(g, {.seed = seed});
      const BufferMap naive = runtime::NaiveExecutor(g).run(in);
      const runtime::VerifyReport r = judge(g, in, naive);
      ASSERT_TRUE(r.pass()) << c.tap << "seed " << seed << "\n" << r.text();
      EXPECT_LT(r.outputs.at(0).max_bar, c.max_bar) << c.tap << r.text();
      EXPECT_TRUE(r.outputs.at(0).unmodelled.empty()) << c.tap << r.text();
    }
  }
}

// Every kernel with an error model: the fast kernels pass on a graph using all of them, and the
// naive run lies within its bars (the model holds), over several seeds.
TEST(Verify, EveryKernelFamilyPassesUnderSplits) {
  const ir::Graph g = build(R"(
X: f32[6, 40]
W: f32[24, 40]
b: f32[24]
A = gelu(linear(X, W, b))
B = softmax(tanh(A))
C = div(sigmoid(A), add(exp(neg(B)), B))
D = sum(mul(C, sub(A, B)), dim=1)
E = max(maximum(A, C), dim=0)
output D, E
)");
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const BufferMap in = runtime::generate_inputs(g, {.seed = seed});
    for (const char* p : {"{}", R"({"ops": {"A/linear": {"split": {"in": 4}}}, "fuse": "auto"})"}) {
      const runtime::VerifyReport r = judge(g, in, run_plan(g, plan(p), in));
      EXPECT_TRUE(r.pass()) << p << "\n" << r.text();
    }
  }
}

}  // namespace
}  // namespace tapestry
