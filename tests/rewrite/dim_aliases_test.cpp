// Index-dim aliases (dim_aliases.h): which names an elementwise operation takes from its
// producer, the ones it must not take, and plans that use them lowering to the same graph as
// plans that use the operation's own names.
#include "tapestry/rewrite/dim_aliases.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rewrite/rewrite_testing.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {
namespace {

using Aliases = std::map<std::string, std::string>;

Aliases aliases_of(const ir::Graph& g, std::string_view op) {
  return index_dim_aliases(g, *find_operation(g, op));
}

TEST(DimAliases, ElementwiseConsumerTakesItsProducersNames) {
  const ir::Graph g = testing::build(R"(
X: f32[-40:60, 20:32]
W: f32[32, 12]
b: f32[32]
Y = relu(linear(X, W, b))
)");
  EXPECT_EQ(aliases_of(g, "Y"), (Aliases{{"batch", "d0"}, {"out", "d1"}}));
  EXPECT_TRUE(aliases_of(g, "Y/linear").empty());  // a reduction: not elementwise
}

TEST(DimAliases, ChainsAndBroadcastsFollowTheTensorDims) {
  const ir::Graph g = testing::build(R"(
X: f32[4, 6, 8]
W: f32[5, 8]
b: f32[5]
c: f32[5]
L = linear(X, W, b)
R = relu(L)
S = add(R, c)
)");
  // linear over a rank-3 x names batch0, batch1, out; relu takes them. add takes only its
  // producer's own names, which for relu are d0…d2 — its own: nothing new.
  EXPECT_EQ(aliases_of(g, "R"), (Aliases{{"batch0", "d0"}, {"batch1", "d1"}, {"out", "d2"}}));
  EXPECT_TRUE(aliases_of(g, "S").empty());  // the same names d0…d2: nothing new
}

TEST(DimAliases, GenericNamesAreNotTaken) {
  // pad's index (lead0, lead1, ph, pw) follows relu's d0, d1 one to one, but `d0` says nothing.
  const ir::Graph g = testing::build("X: f32[2, 3, 4, 4]\nR = relu(X)\nP = pad(R, padding=1)\n");
  EXPECT_TRUE(aliases_of(g, "P").empty());
}

TEST(DimAliases, NonElementwiseAndNonUnitMapsTakeNone) {
  const ir::Graph g = testing::build(R"(
A: f32[6, 4]
B: f32[4, 3]
M = matmul(A, B)
T = transpose(M)
S = sum(M, dim=0)
)");
  EXPECT_TRUE(aliases_of(g, "M").empty());  // k is a reduction
  EXPECT_TRUE(aliases_of(g, "S").empty());  // a reduction
  // transpose's index is (n, m) and so is its result; it follows M's dims crosswise, and M names
  // them m and n too: the names it would take are its own.
  EXPECT_TRUE(aliases_of(g, "T").empty());
}

TEST(DimAliases, ConflictingProducersGiveNoAlias) {
  // transpose names its result dims (n, m); matmul names its result dims (m, n). An add of the
  // two would call d0 both 'n' and 'm': neither name may be an alias.
  const ir::Graph g = testing::build(R"(
X: f32[4, 4]
A: f32[4, 3]
B: f32[3, 4]
Z = add(transpose(X), matmul(A, B))
)");
  EXPECT_TRUE(aliases_of(g, "Z").empty());
  // Each alone gives its names.
  const ir::Graph one = testing::build("A: f32[4, 3]\nB: f32[3, 4]\nZ = relu(matmul(A, B))\n");
  EXPECT_EQ(aliases_of(one, "Z"), (Aliases{{"m", "d0"}, {"n", "d1"}}));
}

TEST(DimAliases, PlansNameDimsByAliasAndLowerToTheSameGraph) {
  const std::string tap = R"(
X: f32[-40:60, 20:32]
W: f32[32, 12]
b: f32[32]
Y = relu(linear(X, W, b))
)";
  const ir::Graph g = testing::build(tap);
  const LowerResult by_alias =
      lower(g, parse_plan(R"({"ops": {"Y": {"split": {"batch": 2, "out": 4}}}})"));
  const LowerResult by_name =
      lower(g, parse_plan(R"({"ops": {"Y": {"split": {"d0": 2, "d1": 4}}}})"));
  EXPECT_EQ(by_alias.graph.applications().size(), 9u);  // Y/linear 1 + Y 8
  EXPECT_EQ(by_alias.graph.applications().size(), by_name.graph.applications().size());
  EXPECT_EQ(by_alias.plan, by_name.plan);
  const auto cmp = testing::run_both(g, by_alias.graph);
  EXPECT_TRUE(cmp.all_bitwise_equal()) << cmp.summary();
}

TEST(DimAliases, BadAliasUsesAreRefusedWithTheAliasesListed) {
  const ir::Graph g = testing::build(R"(
X: f32[8, 12]
W: f32[32, 12]
b: f32[32]
Y = relu(linear(X, W, b))
)");
  const auto error = [&](const char* plan) {
    try {
      (void)lower(g, parse_plan(plan));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // `in` is a dim of the producer that no tensor dim of Y follows: not an alias.
  EXPECT_THAT(error(R"({"ops": {"Y": {"split": {"in": 2}}}})"),
              ::testing::HasSubstr("operation 'Y' has no index dimension 'in' (it has: d0, d1; "
                                   "aliases: batch = d0, out = d1)"));
  // The same dim twice, once by alias.
  EXPECT_THAT(error(R"({"ops": {"Y": {"split": {"batch": 2, "d0": 2}}}})"),
              ::testing::HasSubstr("names dimension 'd0' of 'Y' again (as 'batch')"));
  // Aliases hold only on the consumer: the producer has no `d0`.
  EXPECT_THAT(error(R"({"ops": {"Y/linear": {"split": {"d0": 2}}}})"),
              ::testing::HasSubstr("operation 'Y/linear' has no index dimension 'd0' (it has: "
                                   "batch, out, in)"));
  // Counts are still checked against the extent, whichever name is used.
  EXPECT_THAT(error(R"({"ops": {"Y": {"split": {"batch": 9}}}})"),
              ::testing::HasSubstr("cannot cut dimension 'batch' of extent 8 into 9 shards"));
}

}  // namespace
}  // namespace tapestry::rewrite
