#include "tapestry/runtime/application_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernel_graphs.h"
#include "run_helpers.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: test helpers
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ApplicationSchedule, DependenciesFromBoxIntersections) {
  // The header's example: Z = linear(X, W, b) split on batch into A0 (Z[0:2]) and A1 (Z[2:4]);
  // Y = relu(Z) split into R0 (Z[0:3]) and R1 (Z[3:4]). Relu's applications come first in graph
  // order, so the order must be derived, not copied.
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({4, 2}));
  Built lin = add_linear(b, x, b.tensor("W", "float32", Range::of_shape({3, 2})),
                         b.tensor("b", "float32", Range::of_shape({3})));
  Built relu = add_unary(b, "relu", lin.result);
  b.shard_sizes(relu.op, 0, {3, 1});  // applications 0 (R0), 1 (R1)
  b.shard_sizes(lin.op, 0, {2, 2});   // applications 2 (A0), 3 (A1)
  const ApplicationSchedule s = schedule_applications(b.graph);
  ASSERT_EQ(s.applications.size(), 4u);
  EXPECT_THAT(s.depends_on[0], ElementsAre(2, 3));
  EXPECT_THAT(s.depends_on[1], ElementsAre(3));
  EXPECT_TRUE(s.depends_on[2].empty());
  EXPECT_TRUE(s.depends_on[3].empty());
  EXPECT_THAT(s.order, ElementsAre(2, 3, 0, 1));
}

TEST(ApplicationSchedule, TiesKeepGraphOrder) {
  GraphBuilder b;
  Built relu = add_unary(b, "relu", b.tensor("X", "float32", Range::of_shape({6})));
  b.shard(relu.op, {3});
  const ApplicationSchedule s = schedule_applications(b.graph);
  EXPECT_THAT(s.order, ElementsAre(0, 1, 2));
}

TEST(ApplicationSchedule, EmptyGraph) {
  ir::Graph g;
  const ApplicationSchedule s = schedule_applications(g);
  EXPECT_TRUE(s.order.empty());
}

TEST(ApplicationSchedule, OverlappingWritesAreAnError) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({4}));
  Built relu = add_unary(b, "relu", x);
  b.application(relu.op, Range({0}, {3}));
  b.application(relu.op, Range({2}, {4}));
  EXPECT_THAT(error_of([&] { (void)schedule_applications(b.graph); }),
              HasSubstr("both write cells of tensor 'R1' (zr[0:3] and zr[2:4])"));
}

TEST(ApplicationSchedule, CyclesAreAnError) {
  // Two operations feeding each other (an invalid graph the dialect would reject too).
  GraphBuilder b;
  TensorId p = b.tensor("P", "float32", Range::of_shape({2}));
  TensorId q = b.tensor("Q", "float32", Range::of_shape({2}));
  const IndexProjection id = IndexProjection::identity(1);
  OperationId f = b.op("relu", Range::of_shape({2}), {{"x", p, id}}, {{"result", q, id}});
  OperationId g = b.op("neg", Range::of_shape({2}), {{"x", q, id}}, {{"result", p, id}});
  b.shard(f, {1});
  b.shard(g, {1});
  EXPECT_THAT(error_of([&] { (void)schedule_applications(b.graph); }),
              HasSubstr("applications depend on each other in a cycle"));
}

}  // namespace
}  // namespace tapestry::runtime
