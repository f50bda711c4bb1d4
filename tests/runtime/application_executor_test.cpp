// The runtime's proof obligation (docs/design.md §7): with reference kernels and no reduction
// split, running an operation as Applications over sub-boxes of its index gives results bitwise
// identical to running it whole on the naive executor. Every built-in kernel is sharded several
// ways here — uneven pieces, size-1 dims, tensors at negative coordinates — and property tests
// draw random shapes, starts and grids.
#include "tapestry/runtime/application_executor.h"

#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "kernel_cases.h"
#include "kernel_graphs.h"
#include "run_helpers.h"
#include "tapestry/ir/dialect.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: test helpers
using ::testing::HasSubstr;

/// Builds the graph, shards its operation by `parts` (one entry per index dim), runs it naive
/// and sharded on seeded inputs, and checks every output is bitwise identical.
void expect_sharded_equals_naive(const BuildFn& build, const std::vector<std::int64_t>& parts,
                                 std::uint64_t seed = 1) {
  GraphBuilder b;
  const Built built = build(b);
  b.shard(built.op, parts);
  const ir::ValidationReport report = ir::validate(b.graph, ir::Dialect::application());
  EXPECT_TRUE(report.is_valid()) << ir::format_issues_text(report.issues);
  const BufferMap inputs = generate_inputs(b.graph, {.seed = seed});
  const BufferMap naive = NaiveExecutor(b.graph).run(inputs);
  const BufferMap sharded = ApplicationExecutor(b.graph).run(inputs);
  const TensorsComparison c = compare_tensors(b.graph, naive, sharded);
  EXPECT_TRUE(c.all_bitwise_equal()) << b.graph.operation(built.op).kernel() << " parts "
                                     << Point(std::span<const std::int64_t>(parts)) << "\n"
                                     << c.summary();
  // Poison would survive in a cell no application wrote; the naive result has none.
  visit_dtype(sharded.at(built.result).dtype(), [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T>) {
      for (T v : sharded.at(built.result).values<T>()) ASSERT_FALSE(std::isnan(v));
    }
  });
}

TEST(ShardedEqualsNaive, EveryKernelEverySharding) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    for (const auto& parts : c.shardings) expect_sharded_equals_naive(c.build, parts);
  }
}

TEST(ShardedEqualsNaive, ChainsShardedDifferently) {
  // Y = relu(linear(X, W, b)): linear split 3×2 on (batch, out), relu 2×3, so each relu shard
  // reads from several linear shards.
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range({-40, 20}, {-33, 29}));
  Built lin = add_linear(b, x, b.tensor("W", "float32", Range::of_shape({6, 9})),
                         b.tensor("b", "float32", Range::of_shape({6})));
  Built relu = add_unary(b, "relu", lin.result);
  Built sm = add_softmax(b, relu.result);
  b.shard(lin.op, {3, 2, 1});
  b.shard(relu.op, {2, 3});
  b.shard(sm.op, {4});
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 17});
  ApplicationExecutor sharded(b.graph);
  EXPECT_EQ(sharded.schedule().order.size(), 6u + 6u + 4u);
  const BufferMap a = sharded.run(inputs);
  const BufferMap n = NaiveExecutor(b.graph).run(inputs);
  const TensorsComparison c =
      compare_tensors(b.graph, a, n, std::vector<TensorId>{lin.result, relu.result, sm.result});
  EXPECT_TRUE(c.all_bitwise_equal()) << c.summary();
}

TEST(ShardedEqualsNaive, UnevenExplicitSizes) {
  GraphBuilder b;
  Built lin = add_linear(b, b.tensor("X", "float32", Range({-5, 0}, {6, 7})),
                         b.tensor("W", "float32", Range::of_shape({4, 7})),
                         b.tensor("b", "float32", Range::of_shape({4})));
  b.shard_sizes(lin.op, 0, {1, 7, 0, 3});  // an empty piece too
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 2});
  EXPECT_TRUE(compare_tensors(b.graph, NaiveExecutor(b.graph).run(inputs),
                              ApplicationExecutor(b.graph).run(inputs))
                  .all_bitwise_equal());
}

// A reduction split by hand (what the rewrite module will generate): matmul a [4, 6] · b [6, 3]
// with k split into 2 blocks of 3 — matmul' over [block, m, n, k'] writes partials P [2, 4, 3],
// then reduce(P, sum). The sums are associated differently, so floats agree within a bound,
// integers exactly.
struct SplitMatmul {
  GraphBuilder b;
  TensorId a, c, p;
  Built split, total, whole;
  explicit SplitMatmul(const std::string& dtype) {
    a = b.tensor("A", dtype, Range({-2, 0}, {2, 6}));
    c = b.tensor("B", dtype, Range::of_shape({6, 3}));
    p = b.tensor("P", dtype, Range::of_shape({2, 4, 3}));
    // index (block, m, n, k'); k = 3·block + k'
    const OperationId op =
        b.op("matmul", Range::of_shape({2, 4, 3, 3}),
             {{"a", a, ipf({{0, 1, 0, 0}, {3, 0, 0, 1}}, {-2, 0})},
              {"b", c, ipf({{3, 0, 0, 1}, {0, 0, 1, 0}}, {0, 0})}},
             {{"result", p, ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}, {0, 0, 0})}}, nullptr,
             {"block", "m", "n", "k"}, {{"k", ir::Monoid::kSum}});
    split = {op, p};
    total = add_reduce(b, p, ir::Monoid::kSum);
    whole = add_matmul(b, a, c, Point{});
  }
};

TEST(ReductionSplit, AgreesWithinABoundAndShards) {
  SplitMatmul f("float32");
  f.b.shard(f.split.op, {2, 2, 1, 1});
  f.b.shard(f.total.op, {2, 3, 1});
  f.b.shard(f.whole.op, {2, 1, 1});
  ASSERT_TRUE(ir::validate(f.b.graph, ir::Dialect::application()).is_valid());
  const BufferMap inputs = generate_inputs(f.b.graph, {.seed = 8});
  const BufferMap naive = NaiveExecutor(f.b.graph).run(inputs);
  const BufferComparison c = compare_buffers(naive.at(f.total.result), naive.at(f.whole.result));
  EXPECT_TRUE(c.within(1e-6, 1e-5)) << c.summary();
  const BufferMap sharded = ApplicationExecutor(f.b.graph).run(inputs);
  EXPECT_TRUE(compare_tensors(f.b.graph, naive, sharded).all_bitwise_equal());

  SplitMatmul i("int32");
  const BufferMap exact = NaiveExecutor(i.b.graph).run(generate_inputs(i.b.graph, {.seed = 8}));
  EXPECT_TRUE(compare_buffers(exact.at(i.total.result), exact.at(i.whole.result)).bitwise_equal);
}

// ---- property tests: random shapes, starts and grids -------------------------------------------

Point random_start(std::size_t rank) {
  std::vector<std::int64_t> start;
  for (std::size_t k = 0; k < rank; ++k) start.push_back(*rc::gen::inRange<std::int64_t>(-50, 50));
  return Point(std::span<const std::int64_t>(start));
}

Range random_range(std::size_t rank, std::int64_t max_extent) {
  std::vector<std::int64_t> start, end;
  for (std::size_t k = 0; k < rank; ++k) {
    const auto s = *rc::gen::inRange<std::int64_t>(-50, 50);
    const auto e = *rc::gen::inRange<std::int64_t>(1, max_extent + 1);
    start.push_back(s);
    end.push_back(s + e);
  }
  return Range(Point(std::span<const std::int64_t>(start)),
               Point(std::span<const std::int64_t>(end)));
}

// Random parts for each index dim: 1..extent (capped at 4), 1 on the reduced dims.
std::vector<std::int64_t> random_parts(const GraphBuilder& b, OperationId op,
                                       const std::vector<std::size_t>& reduced) {
  const Range index = *b.graph.operation(op).ipf_index();
  std::vector<std::int64_t> parts;
  for (std::size_t d = 0; d < index.rank(); ++d) {
    const bool is_reduced = std::find(reduced.begin(), reduced.end(), d) != reduced.end();
    const std::int64_t cap = std::min<std::int64_t>(index.extent(d), 4);
    parts.push_back(is_reduced || cap <= 1 ? 1 : *rc::gen::inRange<std::int64_t>(1, cap + 1));
  }
  return parts;
}

bool sharded_equals_naive(GraphBuilder& b, const Built& built,
                          const std::vector<std::size_t>& reduced) {
  b.shard(built.op, random_parts(b, built.op, reduced));
  RC_ASSERT(ir::validate(b.graph, ir::Dialect::application()).is_valid());
  const auto seed = *rc::gen::arbitrary<std::uint32_t>();
  const BufferMap inputs = generate_inputs(b.graph, {.seed = seed});
  return compare_tensors(b.graph, NaiveExecutor(b.graph).run(inputs),
                         ApplicationExecutor(b.graph).run(inputs))
      .all_bitwise_equal();
}

RC_GTEST_PROP(ShardedEqualsNaiveProperty, Linear, ()) {
  GraphBuilder b;
  const Range xr = random_range(2, 7);
  const auto out = *rc::gen::inRange<std::int64_t>(1, 6);
  Built lin = add_linear(
      b, b.tensor("X", "float32", xr),
      b.tensor("W", "float32", Range::of_start_shape(random_start(2), Point{out, xr.extent(1)})),
      b.tensor("b", "float32", Range::of_start_shape(random_start(1), Point{out})));
  RC_ASSERT(sharded_equals_naive(b, lin, {2}));
}

RC_GTEST_PROP(ShardedEqualsNaiveProperty, BroadcastMul, ()) {
  GraphBuilder b;
  const Range ar = random_range(3, 5);
  // b broadcasts along dim 0 (missing) and, at random, dim 1 (size 1).
  const bool squeeze = *rc::gen::arbitrary<bool>();
  const Point bshape{squeeze ? 1 : ar.extent(1), ar.extent(2)};
  TensorId a = b.tensor("A", "float64", ar);
  TensorId c = b.tensor("B", "float64", Range::of_start_shape(random_start(2), bshape));
  RC_ASSERT(sharded_equals_naive(b, add_binary(b, "mul", a, c, ar.shape()), {}));
}

RC_GTEST_PROP(ShardedEqualsNaiveProperty, Conv2d, ()) {
  GraphBuilder b;
  const auto stride = *rc::gen::inRange<std::int64_t>(1, 4);
  const auto kh = *rc::gen::inRange<std::int64_t>(1, 4);
  const auto kw = *rc::gen::inRange<std::int64_t>(1, 4);
  const auto c = *rc::gen::inRange<std::int64_t>(1, 4);
  const Point xshape{*rc::gen::inRange<std::int64_t>(1, 3), c,
                     kh + *rc::gen::inRange<std::int64_t>(0, 6),
                     kw + *rc::gen::inRange<std::int64_t>(0, 6)};
  TensorId x = b.tensor("X", "float32", Range::of_start_shape(random_start(4), xshape));
  const Point wshape{*rc::gen::inRange<std::int64_t>(1, 4), c, kh, kw};
  TensorId w = b.tensor("W", "float32", Range::of_start_shape(random_start(4), wshape));
  RC_ASSERT(sharded_equals_naive(b, add_conv2d(b, x, w, stride), {4}));
}

RC_GTEST_PROP(ShardedEqualsNaiveProperty, SumAndSoftmax, ()) {
  GraphBuilder b;
  const Range xr = random_range(3, 5);
  const auto dim = *rc::gen::inRange<std::size_t>(0, 3);
  TensorId x = b.tensor("X", "float32", xr);
  RC_ASSERT(sharded_equals_naive(b, add_reduction(b, "sum", x, dim), {2}));
  GraphBuilder s;
  RC_ASSERT(sharded_equals_naive(s, add_softmax(s, s.tensor("X", "float32", xr)), {}));
}

// ---- errors ------------------------------------------------------------------------------------

TEST(ApplicationExecutor, OperationWithoutApplicationsIsAnError) {
  GraphBuilder b;
  Built relu = add_unary(b, "relu", b.tensor("X", "float32", Range::of_shape({4})));
  EXPECT_EQ(error_of([&] { ApplicationExecutor sharded(b.graph); }),
            "operation 'relu_1' has no applications; the application executor runs applications "
            "only");
  b.shard(relu.op, {2});
  EXPECT_NO_THROW(ApplicationExecutor sharded(b.graph));
}

TEST(ApplicationExecutor, SplittingAReductionDimIsAnError) {
  // Two shards of `in` would both write every result cell (that needs the reduction-split
  // rewrite): the schedule refuses.
  GraphBuilder b;
  Built lin = add_linear(b, b.tensor("X", "float32", Range::of_shape({2, 4})),
                         b.tensor("W", "float32", Range::of_shape({3, 4})),
                         b.tensor("b", "float32", Range::of_shape({3})));
  b.shard(lin.op, {1, 1, 2});
  EXPECT_THAT(error_of([&] { ApplicationExecutor sharded(b.graph); }),
              HasSubstr("both write cells of tensor 'R3' (zr[0:2, 0:3] and zr[0:2, 0:3])"));
}

TEST(ApplicationExecutor, ApplicationSelectionMustMatchItsIpf) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({4}));
  Built relu = add_unary(b, "relu", x);
  ir::ApplicationBody body{.operation = relu.op};
  body.inputs.append("x", {x, Range({0}, {3})});
  body.outputs.append("result", {relu.result, Range({0}, {4})});
  ir::ApplicationId app = b.graph.add_application(std::move(body), {.label = "shard0"});
  b.graph.set_ipf_index(app, Range::of_shape({4}));
  EXPECT_EQ(error_of([&] {
              (void)run_sharded(b.graph, {{"X", Buffer(DType::kFloat32, Range::of_shape({4}))}});
            }),
            "application 'shard0': selection x[0] is zr[0:3], but its IPF gives zr[0:4] for "
            "index zr[0:4]");
}

}  // namespace
}  // namespace tapestry::runtime
