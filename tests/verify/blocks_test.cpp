// The naive run and the oracle run each big kernel call as blocks of its index box on the run's
// threads (src/runtime/operation_blocks.h): the blocks cover the box once, the numbers do not
// depend on the thread count, and the float32 sums of each block keep the bars above the float64
// oracle's.
#include <gtest/gtest.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "operation_blocks.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/naive_executor.h"
#include "verify_testing.h"

namespace tapestry {
namespace {

using runtime::Buffer;
using runtime::BufferMap;
using runtime::Range;
using verify_testing::build;

// linear's 256×512×512 multiply-adds (2^26 points: kMaxBlocks = 8 blocks), relu's 2^17 cells
// (one block);
// a one-image convolution (batch 1: its output rows are cut), and a chain that reads both.
constexpr std::string_view kGraph = R"(
X: f32[256, 512]
W1: f32[512, 512]
b1: f32[512]
W2: f32[384, 512]
b2: f32[384]
I: f32[1, 16, 40, 40]
K: f32[32, 16, 3, 3]
H = relu(linear(X, W1, b1))
Y = linear(H, W2, b2)
C = relu(conv2d(I, K, padding=1))
S = sum(C, dim=1)
output Y, S
)";

// The fast kernels, with `watched` ones recording every index box they are called on.
struct Recorder {
  runtime::ExecutableKernels kernels;
  std::mutex mutex;
  std::map<std::string, std::vector<Range>> boxes;

  explicit Recorder(const std::vector<std::string>& watched) {
    const runtime::ExecutableKernels& fast = runtime::fast_kernels();
    for (const std::string& name : fast.names()) {
      runtime::KernelFn inner = fast.find(name);
      if (std::find(watched.begin(), watched.end(), name) == watched.end()) {
        kernels.add(name, inner, fast.find_prepare(name));
        continue;
      }
      kernels.add(
          name,
          [this, name, inner](const runtime::KernelCall& call) {
            {
              const std::lock_guard<std::mutex> lock(mutex);
              boxes[name].push_back(call.index);
            }
            inner(call);
          },
          fast.find_prepare(name));
    }
  }
};

// The boxes tile `whole` along one dim: disjoint, each value once, the other dims whole.
void expect_tiling(std::vector<Range> boxes, const Range& whole, std::size_t expected_count) {
  ASSERT_EQ(boxes.size(), expected_count);
  std::int64_t points = 0;
  for (const Range& b : boxes) points += b.size();
  EXPECT_EQ(points, whole.size());
  std::optional<std::size_t> cut;
  for (std::size_t d = 0; d < whole.rank(); ++d)
    if (boxes.front().extent(d) != whole.extent(d)) cut = d;
  ASSERT_TRUE(cut.has_value());
  std::sort(boxes.begin(), boxes.end(),
            [&](const Range& a, const Range& b) { return a.start()[*cut] < b.start()[*cut]; });
  std::int64_t next = whole.start()[*cut];
  for (const Range& b : boxes) {
    EXPECT_EQ(b.start()[*cut], next);
    next = b.end()[*cut];
    for (std::size_t d = 0; d < whole.rank(); ++d) {
      if (d == *cut) continue;
      EXPECT_EQ(b.start()[d], whole.start()[d]);
      EXPECT_EQ(b.end()[d], whole.end()[d]);
    }
  }
  EXPECT_EQ(next, whole.end()[*cut]);
}

Range index_of(const ir::Graph& g, std::string_view kernel, std::size_t nth = 0) {
  for (ir::OperationId op : g.operations()) {
    if (g.operation(op).kernel() != kernel) continue;
    if (nth-- == 0) return *g.operation(op).ipf_index();
  }
  ADD_FAILURE() << "no operation " << kernel;
  return {};
}

// The naive run calls linear on 8 blocks per operation (of rows or of output columns, whichever
// reads fewer input cells: the first linear's W1 is larger than its X), conv2d on blocks of output
// rows (dim 2: they read their own rows of the input, not all of it as blocks of output channels
// would), relu and sum (below 2^21 points each) once, whole; the oracle does the same for every
// kernel call of its rules (the value, Σ|x||w| and the error sums: several calls per linear).
// Fails before operation_blocks (one call per operation, on the whole box).
TEST(OperationBlocks, BigCallsRunAsBlocksThatTileTheirBox) {
  const ir::Graph g = build(kGraph);
  const BufferMap in = runtime::generate_inputs(g, {.seed = 3});
  {
    Recorder r({"linear", "conv2d", "relu", "sum"});
    (void)runtime::NaiveExecutor(g, r.kernels).run_outputs(in);
    const auto n = static_cast<std::size_t>(runtime::detail::kMaxBlocks);
    ASSERT_EQ(r.boxes["linear"].size(), 2 * n);
    const auto mid = r.boxes["linear"].begin() + static_cast<std::ptrdiff_t>(n);
    std::vector<Range> first(r.boxes["linear"].begin(), mid);
    std::vector<Range> second(mid, r.boxes["linear"].end());
    // The naive run's operations run one after another: the first n calls are the first linear.
    expect_tiling(first, index_of(g, "linear", 0), n);
    expect_tiling(second, index_of(g, "linear", 1), n);
    const Range conv = index_of(g, "conv2d");
    ASSERT_GE(r.boxes["conv2d"].size(), 2U);
    expect_tiling(r.boxes["conv2d"], conv, r.boxes["conv2d"].size());
    EXPECT_EQ(r.boxes["conv2d"].front().extent(1), conv.extent(1));  // every output channel
    EXPECT_LT(r.boxes["conv2d"].front().extent(2), conv.extent(2));  // some of the rows
    EXPECT_EQ(r.boxes["relu"].size(), 2U);                           // one call each, whole
    EXPECT_EQ(r.boxes["sum"].size(), 1U);
  }
  {
    Recorder r({"linear"});
    (void)runtime::evaluate_oracle(g, in, {.kernels = &r.kernels});
    // Every call the rules make covers one box in n blocks: the counts are multiples of n.
    const std::int64_t n = runtime::detail::kMaxBlocks;
    EXPECT_GE(r.boxes["linear"].size(), 4U * static_cast<std::size_t>(n));
    EXPECT_EQ(r.boxes["linear"].size() % static_cast<std::size_t>(n), 0U);
    const std::int64_t first = index_of(g, "linear", 0).size() / n;
    const std::int64_t second = index_of(g, "linear", 1).size() / n;
    for (const Range& b : r.boxes["linear"]) EXPECT_TRUE(b.size() == first || b.size() == second);
  }
}

bool bitwise_equal(const Buffer& a, const Buffer& b) {
  return a.dtype() == b.dtype() && a.range() == b.range() &&
         std::memcmp(a.bytes(), b.bytes(),
                     static_cast<std::size_t>(a.size()) * ir::dtype_size_bytes(a.dtype())) == 0;
}

// The oracle's value, σ, D and bar, and the naive run's outputs, on 1, 2 and 3 threads: bitwise
// the same (the blocks are cut by sizes alone). Fails if the cut followed the thread count.
TEST(OperationBlocks, TheNumbersAreTheSameOnOneTwoAndThreeThreads) {
  const ir::Graph g = build(kGraph);
  const BufferMap in = runtime::generate_inputs(g, {.seed = 5});
  const runtime::NaiveExecutor naive(g, runtime::fast_kernels());
  std::vector<runtime::Oracle> oracles;
  std::vector<BufferMap> naive_runs;
  const tbb::global_control up_to_three(tbb::global_control::max_allowed_parallelism, 3);
  for (int threads : {1, 2, 3}) {
    tbb::task_arena arena(threads);
    oracles.push_back(arena.execute([&] { return runtime::evaluate_oracle(g, in); }));
    naive_runs.push_back(arena.execute([&] { return naive.run_outputs(in); }));
  }
  for (std::size_t i = 1; i < oracles.size(); ++i) {
    for (ir::TensorId t : runtime::graph_outputs(g)) {
      SCOPED_TRACE(runtime::tensor_name(g, t) + " on " + std::to_string(i + 1) + " threads");
      EXPECT_TRUE(bitwise_equal(oracles[0].value.at(t), oracles[i].value.at(t)));
      EXPECT_TRUE(bitwise_equal(oracles[0].sigma.at(t), oracles[i].sigma.at(t)));
      EXPECT_TRUE(bitwise_equal(oracles[0].bound.at(t), oracles[i].bound.at(t)));
      EXPECT_TRUE(bitwise_equal(oracles[0].bar(t), oracles[i].bar(t)));
      EXPECT_TRUE(bitwise_equal(naive_runs[0].at(t), naive_runs[i].at(t)));
    }
  }
}

// Each block's float32 sums are rounded up on their own: every bar of the blocked oracle is ≥
// the float64 oracle's (single_precision_sums = false), and the naive run (fast kernels, in
// blocks) and the float64 values agree within the bars.
TEST(OperationBlocks, BlocksOfFloat32SumsKeepTheBarsAboveTheFloat64Ones) {
  const ir::Graph g = build(kGraph);
  const BufferMap in = runtime::generate_inputs(g, {.seed = 9});
  const runtime::Oracle single = runtime::evaluate_oracle(g, in);
  const runtime::Oracle exact64 = runtime::evaluate_oracle(g, in, {.single_precision_sums = false});
  const BufferMap naive = runtime::NaiveExecutor(g, runtime::fast_kernels()).run_outputs(in);
  for (ir::TensorId t : runtime::graph_outputs(g)) {
    SCOPED_TRACE(runtime::tensor_name(g, t));
    const Buffer bar = single.bar(t);
    const Buffer bar64 = exact64.bar(t);
    const auto* b = reinterpret_cast<const double*>(bar.bytes());
    const auto* b64 = reinterpret_cast<const double*>(bar64.bytes());
    const auto* v = reinterpret_cast<const double*>(single.value.at(t).bytes());
    const auto* y = reinterpret_cast<const float*>(naive.at(t).bytes());
    std::int64_t below = 0, outside = 0;
    for (std::int64_t c = 0; c < bar.size(); ++c) {
      below += b[c] < b64[c] ? 1 : 0;
      outside += std::abs(static_cast<double>(y[c]) - v[c]) > b[c] ? 1 : 0;
    }
    EXPECT_EQ(below, 0);
    EXPECT_EQ(outside, 0);
  }
}

}  // namespace
}  // namespace tapestry
