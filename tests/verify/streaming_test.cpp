// The streaming oracle and naive run (oracle.h, naive_executor.h): the same numbers as when
// every tensor is kept, on every example and the masked graphs, and memory that is released; and
// the same numbers on one thread as on four.
#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tapestry/runtime/memory_budget.h"
#include "tapestry/runtime/naive_executor.h"
#include "verify_testing.h"

namespace tapestry {
namespace {

namespace fs = std::filesystem;
using runtime::Buffer;
using runtime::BufferMap;
using verify_testing::build;

// Every examples/*.tap (its small stand-in in tests/data/cli where one exists, as the mutation
// suite does) and the masked graphs of tests/data/verify.
std::vector<fs::path> graph_files() {
  std::vector<fs::path> out;
  const fs::path small = fs::path(TAPESTRY_TEST_DATA) / "cli";
  for (const auto& e : fs::directory_iterator(TAPESTRY_EXAMPLES)) {
    if (e.path().extension() != ".tap") continue;
    const fs::path stand_in = small / (e.path().stem().string() + "_small.tap");
    out.push_back(fs::exists(stand_in) ? stand_in : e.path());
  }
  for (const auto& e : fs::directory_iterator(fs::path(TAPESTRY_TEST_DATA) / "verify"))
    if (e.path().extension() == ".tap") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

ir::Graph load(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return build(s.str());
}

bool bitwise_equal(const Buffer& a, const Buffer& b) {
  return a.dtype() == b.dtype() && a.range() == b.range() &&
         std::memcmp(a.bytes(), b.bytes(),
                     static_cast<std::size_t>(a.size()) * ir::dtype_size_bytes(a.dtype())) == 0;
}

// The outputs' value, σ, D and bar, the magnitudes, the unmodelled kernels and the exact-mode
// verdict of the streaming oracle are those of the oracle that keeps every tensor — bitwise —
// and it holds less at its peak; so with every chain the graph has cut (oracle_chains.h: at these
// sizes only when forced). Fails if streaming frees a tensor a later operation reads
// (evaluate_oracle throws, or reads a poisoned or missing buffer) or changes a number.
TEST(StreamingOracle, EqualsTheKeepAllOracleOnEveryExample) {
  const std::vector<fs::path> files = graph_files();
  ASSERT_GE(files.size(), 10U);
  for (const fs::path& file : files) {
    for (const auto& [exact, chains] : {std::pair{false, false}, std::pair{true, false},
                                        std::pair{false, true}, std::pair{true, true}}) {
      SCOPED_TRACE(file.filename().string() + (exact ? " (exact inputs)" : "") +
                   (chains ? " (chains)" : ""));
      const ir::Graph g = load(file);
      BufferMap in = runtime::generate_inputs(g, {.seed = 4, .exact = exact});
      if (!exact) verify_testing::fill_masks(g, in, -INFINITY);
      const std::int64_t chain_cells = chains ? 0 : runtime::OracleOptions{}.chain_cells;
      const runtime::Oracle all =
          runtime::evaluate_oracle(g, in, {.keep_all = true, .chain_cells = chain_cells});
      const runtime::Oracle streamed =
          runtime::evaluate_oracle(g, in, {.chain_cells = chain_cells});
      EXPECT_EQ(all.value.size(), g.tensors().size());
      EXPECT_EQ(streamed.value.size(), runtime::graph_outputs(g).size());
      for (ir::TensorId t : runtime::graph_outputs(g)) {
        SCOPED_TRACE(runtime::tensor_name(g, t));
        EXPECT_TRUE(bitwise_equal(all.value.at(t), streamed.value.at(t)));
        if (!all.sigma.contains(t)) continue;
        EXPECT_TRUE(bitwise_equal(all.sigma.at(t), streamed.sigma.at(t)));
        EXPECT_TRUE(bitwise_equal(all.bound.at(t), streamed.bound.at(t)));
        EXPECT_TRUE(bitwise_equal(all.bar(t), streamed.bar(t)));
      }
      EXPECT_EQ(all.magnitude, streamed.magnitude);
      EXPECT_EQ(all.unmodelled, streamed.unmodelled);
      EXPECT_EQ(all.exact_reason, streamed.exact_reason);
      if (g.operations().size() > 2) EXPECT_LT(streamed.peak_bytes, all.peak_bytes);
      // check_run_memory's estimate bounds it (its temporaries included there).
      if (!chains) {
        EXPECT_GE(runtime::oracle_bytes(g), streamed.peak_bytes);
      }
    }
  }
}

// The outputs' value, σ, D, magnitudes and exact verdict of two oracles, bitwise.
void expect_same_oracle(const ir::Graph& g, const runtime::Oracle& a, const runtime::Oracle& b) {
  for (ir::TensorId t : runtime::graph_outputs(g)) {
    SCOPED_TRACE(runtime::tensor_name(g, t));
    EXPECT_TRUE(bitwise_equal(a.value.at(t), b.value.at(t)));
    if (!a.sigma.contains(t)) continue;
    EXPECT_TRUE(bitwise_equal(a.sigma.at(t), b.sigma.at(t)));
    EXPECT_TRUE(bitwise_equal(a.bound.at(t), b.bound.at(t)));
  }
  EXPECT_EQ(a.magnitude, b.magnitude);
  EXPECT_EQ(a.exact_reason, b.exact_reason);
}

// The rules' loops run in parallel over chunks of cells (error_rules.h, for_cells): on one
// thread and on four the oracle gives the same numbers, bitwise — on every example and masked
// graph, and on a graph whose tensors span many chunks (16,384 cells each) for every rule:
// bilinear (linear, conv2d), additive (add, sum), selection (max, max_pool2d), elementwise
// (relu, neg, exp, div), softmax, average (mean, avg_pool2d), move (transpose); with the chains
// forced as well. Fails if a loop's cells depend on another chunk's (a running sum split across
// threads).
TEST(StreamingOracle, IsTheSameOnOneThreadAndOnFour) {
  std::vector<ir::Graph> graphs;
  for (const fs::path& file : graph_files()) graphs.push_back(load(file));
  graphs.push_back(build(R"(
X: f32[256, 512]
W: f32[512, 512]
b: f32[512]
I: f32[2, 8, 64, 64]
K: f32[8, 8, 3, 3]
H = linear(X, W, b)
P = softmax(H)
E = exp(neg(relu(H)))
Q = div(P, add(E, E))
S = sum(Q, dim=1)
M = mean(H, dim=1)
Mx = max(H, dim=1)
T = transpose(H)
C = conv2d(I, K, padding=1)
Pm = max_pool2d(C, kernel=2, stride=2)
Pa = avg_pool2d(relu(C), kernel=2, stride=2)
output Q, S, M, Mx, T, Pm, Pa
)"));
  for (const ir::Graph& g : graphs) {
    BufferMap in = runtime::generate_inputs(g, {.seed = 5});
    verify_testing::fill_masks(g, in, -INFINITY);
    for (const std::int64_t chain_cells : {runtime::OracleOptions{}.chain_cells, std::int64_t{0}}) {
      const runtime::OracleOptions options{.chain_cells = chain_cells};
      runtime::Oracle serial;
      {
        const tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
        serial = runtime::evaluate_oracle(g, in, options);
      }
      const tbb::global_control up_to_four(tbb::global_control::max_allowed_parallelism, 4);
      tbb::task_arena four(4);
      const runtime::Oracle parallel =
          four.execute([&] { return runtime::evaluate_oracle(g, in, options); });
      expect_same_oracle(g, serial, parallel);
    }
  }
}

// A chain of n relus over a 256×256 input: streaming holds the input's float64 value and two
// links' value, σ and D at once (8 + 2·24 bytes a cell) whatever n is; keeping every tensor
// holds every link. Fails with the keep-all behaviour (the peak grows with n).
TEST(StreamingOracle, ItsPeakDoesNotGrowWithTheGraph) {
  const auto chain = [](int n) {
    std::string tap = "X: f32[256, 256]\n";
    for (int i = 1; i <= n; ++i)
      tap += fmt::format("Y{} = relu({})\n", i, i == 1 ? "X" : fmt::format("Y{}", i - 1));
    return build(tap + fmt::format("output Y{}\n", n));
  };
  constexpr std::int64_t kCells = 256 * 256;
  std::vector<std::int64_t> streamed, kept;
  for (int n : {4, 16}) {
    const ir::Graph g = chain(n);
    const BufferMap in = runtime::generate_inputs(g, {.seed = 1});
    streamed.push_back(runtime::evaluate_oracle(g, in).peak_bytes);
    kept.push_back(runtime::evaluate_oracle(g, in, {.keep_all = true}).peak_bytes);
  }
  EXPECT_EQ(streamed[0], streamed[1]);
  EXPECT_LE(streamed[1], (8 + 2 * 24) * kCells);
  EXPECT_GE(kept[1], 16 * 24 * kCells);
}

// add and sub of operands with one cell per index point take additive's rule in one pass
// (error_rules.cpp, binary_sum): per cell A = |x| + |y|, σ² = σx² + σy² + proxy(A)², D = Dx + Dy
// + bound(A), n = 1 addition, 0 where a term is an exact zero, σ = D = 0 on a ±inf/NaN cell whose
// σ² and D carried in are known. Checked bitwise against that formula on every add and sub of a
// graph with errors on both sides, relu's exact zeros, a causal −inf mask and a broadcast bias,
// kept and streamed (σ and D written over an operand's); and the streamed chain of adds writes
// them in place: its peak holds x, one link's value and one σ and D (8 + 8 + 8 + 16 bytes a
// cell). Fails on main's additive path (its own σ and D buffers: 56 bytes a cell at the peak).
TEST(StreamingOracle, BinarySumsAreTheAdditiveRulesNumbersInPlace) {
  const ir::Graph g = build(R"(
X: f32[64, 300]
Y: f32[64, 300]
B: f32[300]
Mask: f32[64, 300]
E = exp(X)
F = tanh(Y)
R = relu(sub(X, Y))
S = add(E, R)
T = add(R, Mask)
U = add(S, B)
V = sub(U, T)
W = add(F, E)
Z = add(V, W)
output Z, S
)");
  BufferMap in = runtime::generate_inputs(g, {.seed = 7});
  verify_testing::fill_masks(g, in, -INFINITY);
  const runtime::Oracle kept = runtime::evaluate_oracle(g, in, {.keep_all = true});
  const runtime::Oracle streamed = runtime::evaluate_oracle(g, in);
  expect_same_oracle(g, kept, streamed);
  const auto cells = [&](std::string_view name, const std::map<ir::TensorId, Buffer>& m) {
    return m.at(runtime::find_tensor(g, name)).values<double>();
  };
  int checked_sums = 0, exact_terms = 0, infinite_cells = 0;
  for (ir::OperationId op : g.operations()) {
    const ir::OperationView view = g.operation(op);
    if (view.kernel() != "add" && view.kernel() != "sub") continue;
    std::vector<ir::TensorId> ins;
    for (const auto& e : view.inputs().entries()) ins.push_back(e.value.tensor);
    ASSERT_EQ(ins.size(), 2U);
    const std::string a_name = runtime::tensor_name(g, ins[0]);
    const std::string b_name = runtime::tensor_name(g, ins[1]);
    ir::TensorId out;
    for (const auto& e : view.outputs().entries()) out = e.value.tensor;
    SCOPED_TRACE(runtime::tensor_name(g, out));
    const auto xa = cells(a_name, kept.value), sa = cells(a_name, kept.sigma),
               da = cells(a_name, kept.bound);
    const auto xb = cells(b_name, kept.value), sb = cells(b_name, kept.sigma),
               db = cells(b_name, kept.bound);
    const auto y = kept.value.at(out).values<double>();
    const auto sy = kept.sigma.at(out).values<double>();
    const auto dy = kept.bound.at(out).values<double>();
    const bool broadcast = xb.size() != y.size();  // U = add(S, B): B along the last dim
    double magnitude = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      const std::size_t j = broadcast ? i % xb.size() : i;
      const double a = std::abs(xa[i]) + std::abs(xb[j]);
      magnitude = std::max(magnitude, a);
      const double var = sa[i] * sa[i] + sb[j] * sb[j];
      double bound = da[i] + db[j];
      double sigma = 0;
      if (!std::isfinite(y[i])) {
        ++infinite_cells;
        sigma = bound = std::isfinite(var) && !std::isnan(bound) ? 0.0 : INFINITY;
      } else {
        const bool exact_a = xa[i] == 0 && sa[i] == 0 && da[i] == 0;
        const bool exact_b = xb[j] == 0 && sb[j] == 0 && db[j] == 0;
        exact_terms += exact_a || exact_b ? 1 : 0;
        const double n = exact_a || exact_b ? 0 : 1;
        const double u = 0x1p-24, tiny = FLT_MIN;
        const double proxy = n == 0 ? 0 : std::sqrt(n) * u * a + n * tiny;
        sigma = std::sqrt(var + proxy * proxy);
        bound += n == 0 ? 0 : n * u / (1 - n * u) * a + n * tiny;
      }
      if (std::isnan(bound)) bound = INFINITY;
      ASSERT_EQ(std::bit_cast<std::uint64_t>(sy[i]), std::bit_cast<std::uint64_t>(sigma))
          << "cell " << i << ": σ " << sy[i] << " vs " << sigma;
      ASSERT_EQ(std::bit_cast<std::uint64_t>(dy[i]), std::bit_cast<std::uint64_t>(bound))
          << "cell " << i << ": D " << dy[i] << " vs " << bound;
    }
    EXPECT_EQ(kept.magnitude.at(out), magnitude);
    ++checked_sums;
  }
  EXPECT_EQ(checked_sums, 7);
  EXPECT_GT(exact_terms, 1000);     // relu's zeros, the mask's 0s
  EXPECT_GT(infinite_cells, 1000);  // the mask's −inf

  std::string tap = "X: f32[256, 256]\nY0 = exp(X)\n";
  for (int i = 1; i <= 6; ++i) tap += fmt::format("Y{} = add(Y{}, X)\n", i, i - 1);
  const ir::Graph chain = build(tap + "output Y6\n");
  const runtime::Oracle o = runtime::evaluate_oracle(chain, runtime::generate_inputs(chain, {}));
  EXPECT_LE(o.peak_bytes, (8 + 8 + 8 + 16) * 256 * 256);
}

// run_outputs: bitwise the outputs of run, with the reference and the fast kernels, on every
// example; the caller's inputs untouched; the same errors for a missing or a wrong buffer.
TEST(NaiveRunOutputs, AreTheOutputsOfTheFullRun) {
  for (const fs::path& file : graph_files()) {
    SCOPED_TRACE(file.filename().string());
    const ir::Graph g = load(file);
    BufferMap in = runtime::generate_inputs(g, {.seed = 2});
    verify_testing::fill_masks(g, in, -1e9F);
    const BufferMap before = in;
    for (const runtime::ExecutableKernels* k :
         {&runtime::ExecutableKernels::reference(), &runtime::fast_kernels()}) {
      const runtime::NaiveExecutor naive(g, *k);
      const BufferMap full = naive.run(in);
      const BufferMap outs = naive.run_outputs(in);
      EXPECT_EQ(outs.size(), runtime::graph_outputs(g).size());
      for (ir::TensorId t : runtime::graph_outputs(g))
        EXPECT_TRUE(bitwise_equal(full.at(t), outs.at(t))) << runtime::tensor_name(g, t);
    }
    for (const auto& [t, b] : before) EXPECT_TRUE(bitwise_equal(b, in.at(t)));
  }
  const ir::Graph g = build("X: f32[4]\nY = relu(X)\nZ = neg(Y)\noutput Z\n");
  const runtime::NaiveExecutor naive(g);
  EXPECT_THROW((void)naive.run_outputs({}), Error);
  BufferMap extra = runtime::generate_inputs(g, {.seed = 1});
  extra.emplace(runtime::find_tensor(g, "Y"),
                Buffer(ir::DType::kFloat32, runtime::Range::of_shape({4})));
  EXPECT_THROW((void)naive.run_outputs(extra), Error);
}

}  // namespace
}  // namespace tapestry
