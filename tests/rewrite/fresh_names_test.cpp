// The naming rule of rewrites (fresh_names.h), and lowering with user names chosen to collide
// with the names rewrites generate.
#include "tapestry/rewrite/fresh_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "rewrite/rewrite_testing.h"
#include "tapestry/rewrite/lower.h"

namespace tapestry::rewrite {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Every operation label, and every tensor label, appears once (an operation and the tensor it
// writes may share one: the .tap rule names a result after its operation).
void expect_unique_names(const ir::Graph& g) {
  std::map<std::string, int> ops;
  std::map<std::string, int> tensors;
  for (ir::OperationId op : g.operations()) ++ops[operation_name(g, op)];
  for (ir::TensorId t : g.tensors()) ++tensors[g.tensor(t).label()];
  for (const auto& [name, n] : ops) EXPECT_EQ(n, 1) << "operation name " << name;
  for (const auto& [name, n] : tensors) EXPECT_EQ(n, 1) << "tensor label " << name;
}

std::vector<std::string> operation_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (ir::OperationId op : g.operations()) names.push_back(operation_name(g, op));
  return names;
}

TEST(FreshNames, AvoidsLabelsKeysAndPlanNamesWithTheDotRule) {
  ir::Graph g = testing::build(R"(
X: f32[4]
V1/matmul = relu(X)
Y/linear = neg(X)
Y/linear.2 = exp(X)
output V1/matmul, Y/linear, Y/linear.2
)");
  Plan plan;
  plan.ops["P"] = {};
  FreshNames names(g, plan);
  EXPECT_EQ(names.take("V1/transpose"), "V1/transpose");
  EXPECT_EQ(names.take("V1/transpose"), "V1/transpose.2");  // handed out: taken
  EXPECT_EQ(names.take("V1/matmul"), "V1/matmul.2");
  EXPECT_EQ(names.take("V1/matmul"), "V1/matmul.3");
  EXPECT_EQ(names.take("Y/linear"), "Y/linear.3");  // .2 is the user's
  EXPECT_EQ(names.take("X"), "X.2");                // a tensor label
  EXPECT_EQ(names.take("P"), "P.2");                // a name the plan uses
  const std::string key(g.key(g.operations()[0]));
  EXPECT_EQ(names.take(key), key + ".2");  // an operation key (plans may use keys)
}

// The issue's case: `linear(matmul(X, A), W, b)` named V1 already has an operation V1/matmul;
// decompose-linear's matmul must not take that name, or the split lands on the wrong matmul.
constexpr std::string_view kNestedMatmul = R"(
X: f32[8, 6]
A: f32[6, 12]
W: f32[4, 12]
b: f32[4]
V1 = linear(matmul(X, A), W, b)
output V1
)";

TEST(FreshNames, DecomposeLinearDoesNotReuseTheInnerMatmulsName) {
  ir::Graph g = testing::build(kNestedMatmul);
  LowerResult r = lower(g, parse_plan(R"({"ops": {"V1": {"split": {"in": 2}}}})"));
  expect_unique_names(r.graph);
  // The user's V1/matmul (k = 6) is untouched: one application over its whole index.
  auto inner = find_operation(r.graph, "V1/matmul");
  ASSERT_TRUE(inner);
  EXPECT_EQ(r.graph.operation(*inner).kernel(), "matmul");
  EXPECT_EQ(*r.graph.operation(*inner).ipf_index(), zspace::Range::of_shape({8, 12, 6}));
  EXPECT_EQ(r.graph.applications_of(*inner).size(), 1u);
  // The new one (k = 12) is V1/matmul.2, split in 2 blocks of 6.
  auto added = find_operation(r.graph, "V1/matmul.2");
  ASSERT_TRUE(added);
  EXPECT_EQ(*r.graph.operation(*added).ipf_index(), zspace::Range::of_shape({2, 8, 4, 6}));
  EXPECT_TRUE(find_operation(r.graph, "V1/matmul.2/reduce"));
  ASSERT_FALSE(r.log.empty());
  EXPECT_EQ(r.log[0].to_string(),
            "applied  decompose-linear on V1: V1 -> V1/matmul.2 (linear_nobias) + V1 (bias_add)");
  const runtime::VerifyReport report =
      testing::within_documented_bound(g, testing::run_lowered(g, r.graph));
  EXPECT_TRUE(report.pass()) << report.text();
}

TEST(FreshNames, BothMatmulsKeepTheirOwnPlanEntries) {
  ir::Graph g = testing::build(kNestedMatmul);
  LowerResult r = lower(g, parse_plan(R"({"ops": {"V1": {"split": {"in": 2, "out": 2}},
                                                 "V1/matmul": {"split": {"m": 4}}}})"));
  expect_unique_names(r.graph);
  EXPECT_EQ(r.graph.applications_of(*find_operation(r.graph, "V1/matmul")).size(), 4u);
  EXPECT_EQ(r.graph.applications_of(*find_operation(r.graph, "V1/matmul.2")).size(), 4u);
  // The bias_add follows the combine: out 2 as inherited × batch 2, its reduce-scatter.
  EXPECT_EQ(r.graph.applications_of(*find_operation(r.graph, "V1")).size(), 4u);
  const runtime::VerifyReport report =
      testing::within_documented_bound(g, testing::run_lowered(g, r.graph));
  EXPECT_TRUE(report.pass()) << report.text();
}

// User operations named like everything decompose-linear and split-reduction would generate.
TEST(FreshNames, AdversarialUserNamesAroundDecomposeAndEvenSplit) {
  ir::Graph g = testing::build(R"(
X: f32[8, 6]
W: f32[4, 6]
b: f32[4]
Y/matmul = relu(X)
Y/matmul.2 = neg(X)
Y/transpose = exp(X)
Y/matmul.3/reduce = tanh(X)
Y/matmul.3/partial = sigmoid(X)
Y = linear(X, W, b)
output Y, Y/matmul, Y/matmul.2, Y/transpose, Y/matmul.3/reduce, Y/matmul.3/partial
)");
  LowerResult r = lower(g, parse_plan(R"({"ops": {"Y": {"split": {"in": 2}},
                                                 "Y/matmul": {"split": {"d0": 2}}}})"));
  expect_unique_names(r.graph);
  EXPECT_THAT(operation_names(r.graph),
              ::testing::IsSupersetOf({"Y/matmul.3", "Y/matmul.3/reduce.2"}));
  EXPECT_EQ(r.graph.operation(*find_operation(r.graph, "Y/matmul")).kernel(), "relu");
  EXPECT_EQ(r.graph.applications_of(*find_operation(r.graph, "Y/matmul")).size(), 2u);
  EXPECT_EQ(r.graph.operation(*find_operation(r.graph, "Y/matmul.3/reduce")).kernel(), "tanh");
  const runtime::VerifyReport report =
      testing::within_documented_bound(g, testing::run_lowered(g, r.graph));
  EXPECT_TRUE(report.pass()) << report.text();
}

TEST(FreshNames, AdversarialUserNamesAroundAnUnevenSplit) {
  ir::Graph g = testing::build(R"(
A: f32[6, 10]
B: f32[10, 5]
N: f32[6, 5]
C/block0 = relu(N)
C/block1/partial = neg(N)
C/combine0 = exp(N)
C = matmul(A, B)
output C, C/block0, C/block1/partial, C/combine0
)");
  LowerResult r = lower(g, parse_plan(R"({"ops": {"C": {"split": {"k": 4}}}})"));
  expect_unique_names(r.graph);
  EXPECT_THAT(operation_names(r.graph),
              ::testing::IsSupersetOf({"C/block0.2", "C/block1", "C/combine0.2", "C/combine1"}));
  EXPECT_EQ(r.graph.operation(*find_operation(r.graph, "C/block0")).kernel(), "relu");
  const runtime::VerifyReport report =
      testing::within_documented_bound(g, testing::run_lowered(g, r.graph));
  EXPECT_TRUE(report.pass()) << report.text();
}

// Refusals and errors name the operation the plan named, not what a rewrite renamed it to.
TEST(FreshNames, ErrorsNameTheOperationThePlanNamed) {
  struct Case {
    std::string_view tap;
    std::string_view plan;
    std::string_view expected;
  };
  const Case cases[] = {
      // An uneven split of a `min` reduction: the real reason, not "'block' needs
      // split-reduction".
      {"X: f32[10, 4]\nY = reduce(X, op=\"min\")\noutput Y\n",
       R"({"ops": {"Y": {"split": {"block": 4}}}})",
       "operation 'Y': cannot split reduction dim 'block' into 4: split-reduction refused: no "
       "elementwise kernel combines 'min' partials; split 'block' evenly"},
      // The same, fused into its consumer: still the reduce, not the fused consumer, and the
      // refusal once.
      {"X: f32[10, 4]\nY = relu(reduce(X, op=\"min\"))\noutput Y\n",
       R"({"ops": {"Y/reduce": {"split": {"block": 4}}}, "fuse": "auto"})",
       "operation 'Y/reduce' (as 'Y' after the rewrites): cannot split reduction dim 'block' "
       "into 4: split-reduction refused: no elementwise kernel combines 'min' partials; split "
       "'block' evenly"},
  };
  for (const Case& c : cases) {
    ir::Graph g = testing::build(c.tap);
    EXPECT_THAT([&] { (void)lower(g, parse_plan(c.plan)); },
                ::testing::ThrowsMessage<Error>(::testing::StrEq(
                    "the plan cannot be carried out:\n  " + std::string(c.expected))))
        << c.plan;
  }
}

TEST(FreshNames, ExplainNamesTheOriginOfAGeneratedOperation) {
  ir::Graph g = testing::build(kNestedMatmul);
  LowerResult r = lower(g, parse_plan(R"({"ops": {"V1": {"split": {"in": 2}}}})"));
  std::vector<std::string> lines;
  for (const RewriteEvent& e : r.log) lines.push_back(e.to_string());
  EXPECT_THAT(lines,
              ElementsAre(HasSubstr("decompose-linear on V1:"),
                          HasSubstr("split-reduction on V1/matmul.2 (from V1 in the plan)"),
                          HasSubstr("shard-grid on V1: 2 shards"),
                          HasSubstr("shard-grid on V1/matmul.2 (from V1 in the plan)"),
                          HasSubstr("shard-grid on V1/matmul.2/reduce (from V1 in the plan)")));
}

}  // namespace
}  // namespace tapestry::rewrite
