#include "tapestry/runtime/compare.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "graph_builder.h"

namespace tapestry::runtime {
namespace {

TEST(CompareBuffers, BitwiseEqual) {
  Buffer a = Buffer::from_values<float>(Range({-1}, {2}), {1, 2, 3});
  BufferComparison c = compare_buffers(a, a);
  EXPECT_TRUE(c.comparable);
  EXPECT_TRUE(c.bitwise_equal);
  EXPECT_EQ(c.cells, 3);
  EXPECT_EQ(c.summary(), "bitwise equal");
}

TEST(CompareBuffers, Differences) {
  Buffer a = Buffer::from_values<double>(Range({-1, 0}, {1, 2}), {1, 2, 3, 4});
  Buffer b = Buffer::from_values<double>(Range({-1, 0}, {1, 2}), {1, 2.5, 3, 3.9});
  BufferComparison c = compare_buffers(a, b);
  EXPECT_FALSE(c.bitwise_equal);
  EXPECT_EQ(c.differing_cells, 2);
  EXPECT_DOUBLE_EQ(c.max_abs_diff, 0.5);
  EXPECT_DOUBLE_EQ(c.max_rel_diff, 0.2);
  EXPECT_EQ(c.worst_point, (Point{-1, 1}));
  EXPECT_TRUE(c.within(0.5, 0));
  EXPECT_TRUE(c.within(0, 0.2));
  EXPECT_FALSE(c.within(0.1, 0.1));
  EXPECT_EQ(c.summary(), "differs in 2 of 4 cells; max abs 0.5 at (-1, 1), max rel 0.2");
}

TEST(CompareBuffers, SignedZeroAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Buffer a = Buffer::from_values<float>(Range::of_shape({3}), {0.0f, nan, nan});
  Buffer b = Buffer::from_values<float>(Range::of_shape({3}), {-0.0f, nan, 1.0f});
  BufferComparison c = compare_buffers(a, b);
  EXPECT_EQ(c.differing_cells, 2);  // +0/-0 differ bitwise, NaN/NaN (same bits) do not
  EXPECT_TRUE(std::isinf(c.max_abs_diff));
  EXPECT_EQ(c.worst_point, Point{2});
}

// Bitwise comparison (the bitwise verify mode) treats infinities as values: only the same one
// matches; a finite number or NaN where an infinity belongs is infinitely far.
TEST(CompareBuffers, InfinitiesMatchOnlyTheSameInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Buffer a = Buffer::from_values<float>(Range::of_shape({4}), {inf, -inf, -inf, inf});
  Buffer b = Buffer::from_values<float>(Range::of_shape({4}), {inf, inf, 3e38f, nan});
  BufferComparison c = compare_buffers(a, b);
  EXPECT_EQ(c.differing_cells, 3);
  EXPECT_TRUE(std::isinf(c.max_abs_diff));
  EXPECT_FALSE(c.within(1e30, 1));
}

TEST(CompareBuffers, Integers) {
  Buffer a = Buffer::from_values<std::int64_t>(Range::of_shape({2}), {5, -7});
  Buffer b = Buffer::from_values<std::int64_t>(Range::of_shape({2}), {5, -4});
  EXPECT_DOUBLE_EQ(compare_buffers(a, b).max_abs_diff, 3);
}

TEST(CompareBuffers, NotComparable) {
  Buffer a(DType::kFloat32, Range::of_shape({2}));
  EXPECT_FALSE(compare_buffers(a, Buffer(DType::kFloat64, Range::of_shape({2}))).comparable);
  EXPECT_FALSE(compare_buffers(a, a.relocated(Point{1})).comparable);
  EXPECT_FALSE(compare_buffers(a, a.relocated(Point{1})).within(1e9, 1e9));
}

TEST(CompareTensors, PerTensorSummary) {
  testing::GraphBuilder b;
  const Range r = Range::of_shape({2});
  auto x = b.tensor("X", "float32", r);
  auto y = b.tensor("Y", "float32", r);
  b.op("relu", r, {{"x", x, testing::ipf({{1}}, {0})}}, {{"result", y, testing::ipf({{1}}, {0})}});
  BufferMap m1, m2;
  m1.emplace(y, Buffer::from_values<float>(r, {1, 2}));
  m2.emplace(y, Buffer::from_values<float>(r, {1, 3}));
  TensorsComparison c = compare_tensors(b.graph, m1, m2);
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_FALSE(c.all_bitwise_equal());
  EXPECT_DOUBLE_EQ(c.max_abs_diff(), 1);
  EXPECT_EQ(c.summary(), "Y: differs in 1 of 2 cells; max abs 1 at (1), max rel 0.333333\n");
  TensorsComparison missing = compare_tensors(b.graph, m1, {});
  EXPECT_FALSE(missing.all_within(1, 1));
  EXPECT_EQ(missing.summary(), "Y: missing on one side\n");
}

}  // namespace
}  // namespace tapestry::runtime
