// The oracle's chains (src/runtime/oracle_chains.h): operations that every block of rows (or of
// images) runs on its own cells, so that the tensors made and read inside them are never whole.
#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "oracle_chains.h"
#include "tapestry/runtime/memory_budget.h"
#include "tapestry/runtime/naive_executor.h"
#include "verify_testing.h"

namespace tapestry {
namespace {

using runtime::Buffer;
using runtime::BufferMap;
using runtime::Range;
using verify_testing::build;
namespace fs = std::filesystem;

// An MLP whose hidden tensors (H0 = linear(X, W1, b1) and H = relu(H0): 1024×1024 each, 2^21
// cells) pass the default threshold, and a bottleneck of convolutions over 8 images with a
// residual add (I read by the first convolution and by the add, a block of images each).
constexpr std::string_view kGraph = R"(
X: f32[1024, 256]
W1: f32[1024, 256]
b1: f32[1024]
W2: f32[128, 1024]
b2: f32[128]
I: f32[8, 8, 20, 20]
K1: f32[16, 8, 3, 3]
K2: f32[8, 16, 1, 1]
H0 = linear(X, W1, b1)
H = relu(H0)
Y = linear(H, W2, b2)
A = relu(conv2d(I, K1, padding=1))
C = relu(add(conv2d(A, K2), I))
output Y, C
)";

std::vector<ir::OperationId> order_of(const ir::Graph& g) {
  return runtime::NaiveExecutor(g).order();
}

bool bitwise_equal(const Buffer& a, const Buffer& b) {
  return a.dtype() == b.dtype() && a.range() == b.range() &&
         std::memcmp(a.bytes(), b.bytes(),
                     static_cast<std::size_t>(a.size()) * ir::dtype_size_bytes(a.dtype())) == 0;
}

std::int64_t cells(const ir::Graph& g, std::string_view name) {
  return g.tensor(runtime::find_tensor(g, name)).range().size();
}

// Two chains: the MLP's three operations cut along the rows (8 blocks of 128; H0 and H inside,
// X read a block of rows at a time, W1 and W2 whole), and the convolutions' cut along the images
// (8 blocks of one image; I read an image at a time). In every chain the boxes of each operation
// tile its index once along one dim. Fails without chains (none found), or if a chain took an
// operation whose cells another block makes.
TEST(OracleChains, FindsTheChainsOfRowsAndOfImages) {
  const ir::Graph g = build(kGraph);
  const std::vector<ir::OperationId> order = order_of(g);
  const std::vector<runtime::detail::OracleChain> chains =
      runtime::detail::oracle_chains(g, order, 0);
  ASSERT_EQ(chains.size(), 2U);
  const auto names = [&](const std::set<ir::TensorId>& ts) {
    std::set<std::string> out;
    for (ir::TensorId t : ts) out.insert(runtime::tensor_name(g, t));
    return out;
  };
  const runtime::detail::OracleChain& mlp = chains[0];
  EXPECT_EQ(mlp.end - mlp.begin, 3U);
  EXPECT_EQ(mlp.blocks(), 8U);
  EXPECT_EQ(names(mlp.internal), (std::set<std::string>{"H0", "H"}));
  EXPECT_EQ(names(mlp.partial), (std::set<std::string>{"X"}));
  const runtime::detail::OracleChain& conv = chains[1];
  EXPECT_EQ(conv.blocks(), 8U);
  EXPECT_EQ(conv.end, order.size());
  EXPECT_TRUE(names(conv.partial).contains("I"));
  EXPECT_TRUE(names(conv.internal).contains("A"));
  for (const auto* chain : {&mlp, &conv}) {
    for (std::size_t j = 0; j < chain->boxes.size(); ++j) {
      const Range index = *g.operation(order[chain->begin + j]).ipf_index();
      std::int64_t points = 0;
      for (std::size_t b = 0; b < chain->blocks(); ++b) {
        const Range& box = chain->boxes[j][b];
        points += box.size();
        EXPECT_TRUE(index.contains(box));
        for (std::size_t c = 0; c < b; ++c) EXPECT_FALSE(box.overlaps(chain->boxes[j][c]));
      }
      EXPECT_EQ(points, index.size());
    }
  }
  // The first block of the MLP as a graph of its own: 128 rows of X, H0, H and Y, W1 whole.
  const runtime::detail::ChainBlock block = runtime::detail::chain_block(g, order, mlp, 0);
  ASSERT_EQ(block.ops.size(), 3U);
  for (const auto& [mine, t] : block.original) {
    const Range& r = block.graph.tensor(mine).range();
    const std::string name = runtime::tensor_name(g, t);
    if (name == "W1" || name == "b1" || name == "W2" || name == "b2") {
      EXPECT_EQ(r, g.tensor(t).range()) << name;
    } else {
      EXPECT_EQ(r.extent(0), 128) << name;
      EXPECT_EQ(r.start()[0], 0) << name;
    }
  }
  // Below the threshold, or a negative one: no chains.
  EXPECT_TRUE(runtime::detail::oracle_chains(g, order, cells(g, "H") * 2 + 1).empty());
  EXPECT_TRUE(runtime::detail::oracle_chains(g, order, -1).empty());
}

// What the oracle holds at its peak: with the chains, a block of H0 and H (value, σ, D) at a
// time besides W1, W2 (float64), a block of X and Y assembled — far below H alone (24 bytes a
// cell of 2^20 cells: 24 MiB); without them, H0 and H whole. check_run_memory's estimate (the
// default threshold: these chains) bounds the peak. Fails without the chains (the peak holds H).
TEST(OracleChains, TheOracleHoldsABlockOfWhatTheChainMakes) {
  const ir::Graph g = build(kGraph);
  const BufferMap in = runtime::generate_inputs(g, {.seed = 3});
  const runtime::Oracle chained = runtime::evaluate_oracle(g, in);
  const runtime::Oracle whole = runtime::evaluate_oracle(g, in, {.chain_cells = -1});
  const std::int64_t h = cells(g, "H");
  const std::int64_t weights = cells(g, "W1") + cells(g, "b1") + cells(g, "W2") + cells(g, "b2");
  const std::int64_t outputs = cells(g, "Y") + cells(g, "C");
  // Weights (8 bytes a cell), the outputs (24), three blocks of H's size (24) for H0, H and the
  // block's outputs, and the convolutions' images.
  const std::int64_t limit = 8 * weights + 24 * outputs + 3 * 24 * h / 8 + 24 * 4 * cells(g, "A");
  EXPECT_LE(chained.peak_bytes, limit);
  EXPECT_GT(whole.peak_bytes, 24 * h);
  EXPECT_GT(whole.peak_bytes, limit);
  EXPECT_GE(runtime::oracle_bytes(g), chained.peak_bytes);
  EXPECT_LT(runtime::oracle_bytes(g), whole.peak_bytes + 24 * h);
}

// The chains change which cells each kernel call sums together, not what is summed: every
// output's float64 value agrees with the unchained float64 oracle's to float64 rounding, every bar
// (float32 sums rounded up, per block) is at least the unchained float64 oracle's, and the naive
// run lies within them; the numbers are the same bitwise with keep_all, and on 1, 2 and 3 threads.
TEST(OracleChains, BarsHoldAndTheNumbersDoNotDependOnThreadsOrKeepAll) {
  const ir::Graph g = build(kGraph);
  const BufferMap in = runtime::generate_inputs(g, {.seed = 9});
  const runtime::Oracle exact64 =
      runtime::evaluate_oracle(g, in, {.chain_cells = -1, .single_precision_sums = false});
  const BufferMap naive = runtime::NaiveExecutor(g, runtime::fast_kernels()).run_outputs(in);
  std::vector<runtime::Oracle> oracles;
  const tbb::global_control up_to_three(tbb::global_control::max_allowed_parallelism, 3);
  for (int threads : {1, 2, 3}) {
    tbb::task_arena arena(threads);
    oracles.push_back(arena.execute([&] { return runtime::evaluate_oracle(g, in); }));
  }
  oracles.push_back(runtime::evaluate_oracle(g, in, {.keep_all = true}));
  EXPECT_EQ(oracles.back().value.size(), g.tensors().size());
  const runtime::Oracle& chained = oracles.front();
  for (ir::TensorId t : runtime::graph_outputs(g)) {
    SCOPED_TRACE(runtime::tensor_name(g, t));
    for (std::size_t i = 1; i < oracles.size(); ++i) {
      EXPECT_TRUE(bitwise_equal(chained.value.at(t), oracles[i].value.at(t)));
      EXPECT_TRUE(bitwise_equal(chained.sigma.at(t), oracles[i].sigma.at(t)));
      EXPECT_TRUE(bitwise_equal(chained.bound.at(t), oracles[i].bound.at(t)));
    }
    const Buffer bar = chained.bar(t);
    const Buffer bar64 = exact64.bar(t);
    const auto b = bar.values<double>();
    const auto b64 = bar64.values<double>();
    const auto v = chained.value.at(t).values<double>();
    const auto v64 = exact64.value.at(t).values<double>();
    const auto y = naive.at(t).values<float>();
    std::int64_t below = 0, outside = 0, apart = 0;
    for (std::size_t c = 0; c < b.size(); ++c) {
      below += b[c] < b64[c] ? 1 : 0;
      outside += std::abs(static_cast<double>(y[c]) - v[c]) > b[c] ? 1 : 0;
      apart += std::abs(v[c] - v64[c]) > 0x1p-40 * (std::abs(v64[c]) + b64[c]) ? 1 : 0;
    }
    EXPECT_EQ(below, 0);
    EXPECT_EQ(outside, 0);
    EXPECT_EQ(apart, 0);
  }
  EXPECT_EQ(chained.magnitude, oracles.back().magnitude);
}

// The chains the oracle cuts at the default threshold in the full-size examples (the graphs
// alone: nothing is evaluated), printed as "ops [blocks] internal". Fails if one the docs
// describe (docs/runtime.md, "What verifying costs") is no longer found.
TEST(OracleChains, TheFullSizeExamplesChains) {
  std::map<std::string, std::vector<std::string>> found;
  for (const auto& e : fs::directory_iterator(TAPESTRY_EXAMPLES)) {
    if (e.path().extension() != ".tap") continue;
    std::ifstream stream(e.path());
    std::stringstream text;
    text << stream.rdbuf();
    const ir::Graph g = build(text.str());
    const std::vector<ir::OperationId> order = order_of(g);
    for (const auto& c :
         runtime::detail::oracle_chains(g, order, runtime::OracleOptions{}.chain_cells)) {
      std::string line;
      for (std::size_t k = c.begin; k < c.end; ++k)
        line += std::string(g.display_name(order[k])) + " ";
      line += fmt::format("[{}]", c.blocks());
      for (ir::TensorId t : c.internal) line += " " + runtime::tensor_name(g, t);
      found[e.path().stem().string()].push_back(line);
      std::cout << e.path().stem().string() << ": " << line << "\n";
    }
  }
  // The MLP by rows; the bottleneck's seven operations by images; transformer_large's Q, K and
  // V (reshape, permute) and its attention (Kᵀ, matmul, scale, softmax, matmul, permute) by
  // batches, the rest (output projection, residual, MLP, residual) by rows.
  EXPECT_EQ(found["mlp"], (std::vector<std::string>{"H/linear H Y [8] H/linear H"}));
  ASSERT_EQ(found["resnet_bottleneck"].size(), 1U);
  EXPECT_TRUE(found["resnet_bottleneck"][0].starts_with(
      "A/conv2d A B/pad B/conv2d B Y/conv2d Y/add Y [8]"));
  ASSERT_EQ(found["transformer_large"].size(), 5U);
  EXPECT_TRUE(found["transformer_large"][3].starts_with(
      "Scores/transpose Scores/matmul Scores P Ctx Attn/permute [4]"));
  EXPECT_TRUE(found["transformer_large"][4].starts_with("Attn R1 M/linear M/gelu M Y [8]"));
}

// Every examples/*.tap (its small stand-in in tests/data/cli where one exists) and the masked
// graphs of tests/data/verify, as the streaming test reads them.
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

// verify_bound_streaming — the oracle handing each output over a block at a time (chains forced
// on these small graphs) — gives the report of the oracle evaluated whole and judged after, to
// the JSON's last digit: failing and unchecked counts, the first unchecked cell, the worst cell
// (ties go to the first in row-major order, whichever block it is in), the naive run's problem.
// On every example and masked graph, for the naive run itself as the result, +1 in a cell of
// its last rows (a later block) and its last rows zeroed. Fails if a block's figures were
// merged out of order, or a block was judged twice or not at all.
TEST(OracleChains, TheStreamedJudgementIsTheWholeOnes) {
  int chained = 0;
  for (const fs::path& file : graph_files()) {
    SCOPED_TRACE(file.filename().string());
    std::ifstream stream(file);
    std::stringstream text;
    text << stream.rdbuf();
    const ir::Graph g = build(text.str());
    BufferMap in = runtime::generate_inputs(g, {.seed = 6});
    verify_testing::fill_masks(g, in, -INFINITY);
    const runtime::OracleOptions options{.chain_cells = 0};
    if (!runtime::detail::oracle_chains(g, order_of(g), 0).empty()) ++chained;
    const BufferMap naive = runtime::NaiveExecutor(g, runtime::fast_kernels()).run_outputs(in);
    const runtime::Oracle oracle = runtime::evaluate_oracle(g, in, options);
    for (const std::string fault : {"none", "one-cell", "last-rows"}) {
      SCOPED_TRACE(fault);
      BufferMap results = naive;
      for (auto& [t, b] : results) {
        if (b.dtype() != ir::DType::kFloat32 || b.size() == 0 || fault == "none") continue;
        const std::span<float> v = b.values<float>();
        const std::size_t rows = b.range().rank() == 0 ? 1 : v.size() / b.range().extent(0);
        const std::size_t from = v.size() - std::min(v.size(), 2 * rows);
        if (fault == "one-cell") v[from] += 1;
        if (fault == "last-rows")
          std::fill(v.begin() + static_cast<std::ptrdiff_t>(from), v.end(), 0.0F);
      }
      const runtime::VerifyReport whole =
          runtime::verify_outputs(g, results, runtime::VerifyMode::kBound, &naive, &oracle);
      const runtime::VerifyReport streamed = runtime::verify_bound_streaming(
          g, in, results, naive, options, runtime::UncheckedCells::kFail);
      EXPECT_EQ(whole.to_json().dump(), streamed.to_json().dump());
      EXPECT_EQ(whole.text(), streamed.text());
    }
  }
  EXPECT_GE(chained, 5);
}

}  // namespace
}  // namespace tapestry
