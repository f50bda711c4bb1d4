// The combine of a split reduction is planned like any operation (issue 26, items 2 and 3):
// derived names in plans (plan.h), the default that follows the consumers
// (src/rewrite/combine_plan.h), decompose-linear keeping mesh and place (decompose_linear.h).
// Every lowered graph is executed against the naive run and held to --verify's bar.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rewrite/rewrite_testing.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/plan_skeleton.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// C = matmul(A, B): index [m 6, n 5, k 10]; C is a graph output nothing reads.
constexpr std::string_view kMatmul = R"(
A: f32[6, 10]
B: f32[10, 5]
C = matmul(A, B)
output C
)";

// The same with an elementwise consumer D of C.
constexpr std::string_view kMatmulRelu = R"(
A: f32[6, 10]
B: f32[10, 5]
C = matmul(A, B)
D = relu(C)
output D
)";

// Megatron's MLP at a small size: Y = linear(H, W2, b2) split on `in` is the row-parallel half.
constexpr std::string_view kMlp = R"(
X:  f32[8, 6]
W1: f32[16, 6]
b1: f32[16]
W2: f32[6, 16]
b2: f32[6]
H = relu(linear(X, W1, b1))
Y = linear(H, W2, b2)
output Y
)";

// Lowers and checks the result against the naive run within --verify's bar.
LowerResult lower_and_verify(const ir::Graph& g, std::string_view plan) {
  LowerResult r = lower(g, parse_plan(plan));
  const runtime::VerifyReport report =
      testing::within_documented_bound(g, testing::run_lowered(g, r.graph));
  EXPECT_TRUE(report.pass()) << plan << "\n" << report.text();
  return r;
}

std::size_t shards_of(const LowerResult& r, std::string_view op) {
  auto id = find_operation(r.graph, op);
  EXPECT_TRUE(id.has_value()) << op;
  return id ? r.graph.applications_of(*id).size() : 0;
}

OpPlan::Colocation with(std::string op, std::map<std::string, std::string> dims) {
  return {.with = std::move(op), .dims = std::move(dims)};
}

// ---- naming derived operations ---------------------------------------------------------------

TEST(CombineNames, APlanNamesTheCombineBySplitAndByAlias) {
  const ir::Graph g = testing::build(kMatmul);
  for (std::string_view plan : {R"({"ops": {"C": {"split": {"k": 2}},
                                            "C/reduce": {"split": {"d0": 3}}}})",
                                R"({"ops": {"C": {"split": {"k": 2}},
                                            "C/reduce": {"split": {"m": 3}}}})"}) {
    const LowerResult r = lower_and_verify(g, plan);
    EXPECT_EQ(shards_of(r, "C/reduce"), 3u) << plan;  // the entry, not the default (2 along m)
    EXPECT_EQ(r.plan.ops.at("C/reduce"), (OpPlan{.split = {{"d0", 3}}})) << plan;
  }
}

TEST(CombineNames, MeshAndPlaceOfTheCombineAreCarried) {
  const ir::Graph g = testing::build(kMatmul);
  const LowerResult mesh = lower_and_verify(g, R"({"ops": {"C": {"split": {"k": 2}},
      "C/reduce": {"split": {"n": 2}, "mesh": {"n": "tp"}}}})");
  EXPECT_EQ(mesh.plan.ops.at("C/reduce"), (OpPlan{.split = {{"d1", 2}}, .mesh = {{"d1", "tp"}}}));
  const LowerResult place = lower_and_verify(g, R"({"ops": {"C": {"split": {"k": 2}},
      "C/reduce": {"split": {"d1": 2}, "place": ["cpu:1", "cpu:0"]}}})");
  EXPECT_EQ(place.plan.ops.at("C/reduce"),
            (OpPlan{.split = {{"d1", 2}}, .place = {"cpu:1", "cpu:0"}}));
}

TEST(CombineNames, NamingTheDecompositionsProductOverridesWhatItTakesFromTheLinear) {
  const ir::Graph g = testing::build(kMlp);
  const LowerResult r = lower_and_verify(
      g, R"({"ops": {"Y": {"split": {"in": 2}}, "Y/matmul": {"split": {"in": 4, "batch": 2}}}})");
  EXPECT_EQ(shards_of(r, "Y/matmul"), 8u);  // block 4 × batch 2
  EXPECT_EQ(r.plan.ops.at("Y/matmul").split,
            (std::map<std::string, std::int64_t>{{"block", 4}, {"batch", 2}}));
}

// The user's entry for the combine carries over when the combine fuses with the bias_add.
TEST(CombineNames, TheCombinesEntryCarriesOverIntoTheFusedOperation) {
  const ir::Graph g = testing::build(kMlp);
  const LowerResult r = lower_and_verify(g, R"({"ops": {"Y": {"split": {"in": 2}},
      "Y/matmul/reduce": {"split": {"batch": 4}, "place": ["cpu:1"]}}, "fuse": "auto"})");
  EXPECT_FALSE(find_operation(r.graph, "Y/matmul/reduce"));  // fused into Y
  EXPECT_EQ(r.graph.operation(*find_operation(r.graph, "Y")).kernel(), "fused");
  EXPECT_EQ(shards_of(r, "Y"), 4u);
  EXPECT_EQ(r.plan.ops.at("Y"), (OpPlan{.split = {{"d0", 4}}, .place = {"cpu:1"}}));
}

TEST(CombineNames, AFusionGroupMayNameADerivedOperation) {
  const ir::Graph g = testing::build(kMlp);
  const LowerResult r = lower_and_verify(
      g, R"({"ops": {"Y": {"split": {"in": 2}}}, "fuse": [["Y/matmul/reduce", "Y"]]})");
  EXPECT_FALSE(find_operation(r.graph, "Y/matmul/reduce"));
  EXPECT_EQ(r.graph.operation(*find_operation(r.graph, "Y")).kernel(), "fused");
}

TEST(CombineNames, ANameNoRewriteCreatesIsALocatedError) {
  const ir::Graph g = testing::build(kMatmul);
  struct Case {
    std::string_view plan;
    std::string_view expected;
  };
  const Case cases[] = {
      {R"({"ops": {"C": {"split": {"k": 2}}, "C/reduce.2": {"split": {"d0": 2}}}})",
       "/ops/C~1reduce.2: no operation named 'C/reduce.2' (operations: C; derived by the "
       "rewrites of this plan: C/reduce)"},
      // k unsplit: nothing is derived, C/reduce does not exist.
      {R"({"ops": {"C/reduce": {"split": {"d0": 2}}}})",
       "/ops/C~1reduce: no operation named 'C/reduce' (operations: C; the rewrites of this plan "
       "derive none)"},
      {R"({"ops": {"C": {"split": {"k": 2}}}, "fuse": [["C/reduce", "Q"]]})",
       "/fuse/0/1: no operation named 'Q' (operations: C; derived by the rewrites of this plan: "
       "C/reduce)"},
      // A derived entry is checked like any other, against the operation it names.
      {R"({"ops": {"C": {"split": {"k": 2}}, "C/reduce": {"split": {"zz": 2}}}})",
       "/ops/C~1reduce/split/zz: operation 'C/reduce' has no index dimension 'zz' (it has: d0, "
       "d1, block; aliases: m = d0, n = d1)"},
      {R"({"ops": {"C": {"split": {"k": 2}}, "C/reduce": {"split": {"d0": 7}}}})",
       "/ops/C~1reduce/split/d0: cannot cut dimension 'd0' of extent 6 into 7 shards"},
      {R"({"ops": {"C": {"split": {"k": 2}}, "C/reduce": {"mesh": {"q": "tp"}}}})",
       "/ops/C~1reduce/mesh/q: operation 'C/reduce' has no index dimension 'q'"},
      {R"({"ops": {"C": {"split": {"k": 2}}, "C/reduce": {"substitute": ["decompose-linear"]}}})",
       "/ops/C~1reduce/substitute/0: decompose-linear rewrites a linear, but operation "
       "'C/reduce' is a reduce"},
  };
  for (const Case& c : cases) {
    const Plan plan = parse_plan(c.plan);
    EXPECT_THAT(testing::formatted(check_plan(plan, g)), ElementsAre(HasSubstr(c.expected)))
        << c.plan;
    EXPECT_THAT([&] { (void)lower(g, plan); },
                ThrowsMessage<Error>(
                    HasSubstr("the plan does not fit the graph:\n  " + std::string(c.expected))))
        << c.plan;
  }
}

// A bad entry of the graph's and a derived entry that names nothing: both at once.
TEST(CombineNames, EveryProblemIsReportedAtOnce) {
  const ir::Graph g = testing::build(kMatmul);
  const Plan plan = parse_plan(R"({"ops": {"C": {"split": {"k": 2, "q": 2}},
                                           "C/nothing": {"split": {"d0": 2}}}})");
  EXPECT_THAT(testing::formatted(check_plan(plan, g)),
              ElementsAre(HasSubstr("/ops/C/split/q: operation 'C' has no index dimension 'q'"),
                          HasSubstr("/ops/C~1nothing: no operation named 'C/nothing'")));
}

TEST(CombineNames, TapestryPlanListsTheDerivedOperationsWithTheirPlans) {
  const ir::Graph g = testing::build(kMlp);
  std::vector<RewriteEvent> log;
  const RewriteState state = rewrite_operations(
      g, parse_plan(R"({"ops": {"Y": {"split": {"in": 2}}}})"), LowerOptions{}, log);
  const std::string text = format_operations(derived_operations(state.derived));
  EXPECT_THAT(text, HasSubstr("Y/matmul         linear_nobias  batch 8, out 6, in 16 (reduction: "
                              "sum)\n"));
  EXPECT_THAT(text, HasSubstr("from Y (decompose-linear); plan: split in 2\n"));
  EXPECT_THAT(text, HasSubstr("Y/matmul/reduce  reduce         d0 8, d1 6, block 2 (reduction: "
                              "sum); aliases: batch = d0, out = d1\n"));
  EXPECT_THAT(text, HasSubstr("from Y (split-reduction); plan: split d0 2; with Y/matmul's "
                              "shards (d0 = block)\n"));
}

// ---- the combine's default follows its consumers ---------------------------------------------

TEST(CombineDefault, AGraphOutputNothingReadsIsReduceScattered) {
  const ir::Graph g = testing::build(kMatmul);
  const LowerResult r = lower_and_verify(g, R"({"ops": {"C": {"split": {"k": 2}}}})");
  // The outermost dim, 2 ways, shard j where block j is.
  EXPECT_EQ(r.plan.ops.at("C/reduce"),
            (OpPlan{.split = {{"d0", 2}}, .colocate = with("C", {{"d0", "block"}})}));
  EXPECT_EQ(shards_of(r, "C/reduce"), 2u);
}

TEST(CombineDefault, InheritedDimsKeepTheirCountsAndTheExtraDimIsAnother) {
  const ir::Graph g = testing::build(kMatmul);
  const LowerResult r = lower_and_verify(g, R"({"ops": {"C": {"split": {"k": 2, "m": 3}}}})");
  EXPECT_EQ(r.plan.ops.at("C/reduce"),
            (OpPlan{.split = {{"d0", 3}, {"d1", 2}},
                    .colocate = with("C", {{"d0", "m"}, {"d1", "block"}})}));
  EXPECT_EQ(shards_of(r, "C/reduce"), 6u);
}

TEST(CombineDefault, ASplitConsumerChoosesTheDim) {
  const ir::Graph g = testing::build(kMatmulRelu);
  const LowerResult r =
      lower_and_verify(g, R"({"ops": {"C": {"split": {"k": 2}}, "D": {"split": {"d1": 2}}}})");
  // D cuts C's second dim: the reduce-scatter cuts it too, not the outermost.
  EXPECT_EQ(r.plan.ops.at("C/reduce"),
            (OpPlan{.split = {{"d1", 2}}, .colocate = with("C", {{"d1", "block"}})}));
}

TEST(CombineDefault, AnUnsplitConsumerGetsAReduceOnItsDevice) {
  const ir::Graph g = testing::build(kMatmulRelu);
  const LowerResult r = lower_and_verify(g, R"({"ops": {"C": {"split": {"k": 2}}}})");
  EXPECT_FALSE(r.plan.ops.contains("C/reduce"));  // unsplit, on device 0 where D runs
  EXPECT_EQ(shards_of(r, "C/reduce"), 1u);
  const LowerResult placed =
      lower_and_verify(g, R"({"ops": {"C": {"split": {"k": 2}}, "D": {"place": ["gpu:3"]}}})");
  EXPECT_EQ(placed.plan.ops.at("C/reduce"), (OpPlan{.place = {"gpu:3"}}));
}

// Every device holding a partial reads the whole result (the next matmul is cut along n): the
// reduce-scatter, then the consumers' reads make the all-gather.
TEST(CombineDefault, ConsumersThatReadTheWholeResultGetAReduceScatter) {
  const ir::Graph g = testing::build(R"(
A: f32[6, 10]
B: f32[10, 5]
E: f32[5, 8]
C = matmul(A, B)
F = matmul(C, E)
output F
)");
  const LowerResult r =
      lower_and_verify(g, R"({"ops": {"C": {"split": {"k": 2}}, "F": {"split": {"n": 2}}}})");
  EXPECT_EQ(r.plan.ops.at("C/reduce"),
            (OpPlan{.split = {{"d0", 2}}, .colocate = with("C", {{"d0", "block"}})}));
}

TEST(CombineDefault, OnAMeshTheExtraDimTakesTheBlocksAxis) {
  const ir::Graph g = testing::build(kMatmul);
  const LowerResult r = lower_and_verify(
      g, R"({"ops": {"C": {"split": {"k": 2, "m": 3}, "mesh": {"k": "tp", "m": "dp"}}}})");
  EXPECT_EQ(r.plan.ops.at("C").mesh,
            (std::map<std::string, std::string>{{"block", "tp"}, {"m", "dp"}}));
  EXPECT_EQ(r.plan.ops.at("C/reduce"),
            (OpPlan{.split = {{"d0", 3}, {"d1", 2}}, .mesh = {{"d0", "dp"}, {"d1", "tp"}}}));
}

TEST(CombineDefault, NoDimWideEnoughLeavesAReduce) {
  const ir::Graph g = testing::build("A: f32[2, 10]\nB: f32[10, 3]\nC = matmul(A, B)\noutput C\n");
  const LowerResult r = lower_and_verify(g, R"({"ops": {"C": {"split": {"k": 5}}}})");
  EXPECT_EQ(r.plan.ops.at("C/reduce"), (OpPlan{.colocate = with("C", {})}));
  EXPECT_EQ(shards_of(r, "C/reduce"), 1u);
}

// Megatron's row-parallel linear whose output is the graph's: decompose-linear's bias_add follows
// the combine, takes its plan and fuses with it under "fuse": "auto".
TEST(CombineDefault, TheBiasAddFollowsTheCombine) {
  const ir::Graph g = testing::build(kMlp);
  const LowerResult r = lower_and_verify(g, R"({"ops": {"Y": {"split": {"in": 2}}}})");
  const OpPlan expected{.split = {{"d0", 2}}, .colocate = with("Y/matmul", {{"d0", "block"}})};
  EXPECT_EQ(r.plan.ops.at("Y/matmul/reduce"), expected);
  EXPECT_EQ(r.plan.ops.at("Y"),
            (OpPlan{.split = {{"batch", 2}}, .colocate = with("Y/matmul", {{"batch", "block"}})}));
  const LowerResult fused =
      lower_and_verify(g, R"({"ops": {"Y": {"split": {"in": 2}}}, "fuse": "auto"})");
  EXPECT_EQ(fused.plan.ops.at("Y"), expected);
  EXPECT_EQ(shards_of(fused, "Y"), 2u);
}

// dp 2 × tp 2 on a mesh: the combine's d0 inherits batch's count and axis, its d1 is the extra.
TEST(CombineDefault, DataTimesTensorParallelOnAMesh) {
  const ir::Graph g = testing::build(kMlp);
  const LowerResult r = lower_and_verify(g, R"({"ops": {
      "H/linear": {"split": {"batch": 2, "out": 2}, "mesh": {"batch": "dp", "out": "tp"}},
      "H": {"split": {"d0": 2, "d1": 2}, "mesh": {"d0": "dp", "d1": "tp"}},
      "Y": {"split": {"batch": 2, "in": 2}, "mesh": {"batch": "dp", "in": "tp"}}},
      "fuse": "auto"})");
  EXPECT_EQ(r.plan.ops.at("Y/matmul"), (OpPlan{.split = {{"block", 2}, {"batch", 2}},
                                               .mesh = {{"block", "tp"}, {"batch", "dp"}}}));
  EXPECT_EQ(r.plan.ops.at("Y"),
            (OpPlan{.split = {{"d0", 2}, {"d1", 2}}, .mesh = {{"d0", "dp"}, {"d1", "tp"}}}));
}

// ---- decompose-linear keeps mesh and place, and makes no transpose -----------------------------

TEST(DecomposeLinear, TheProductKeepsTheLinearsEntryWholeAndNoTransposeIsMade) {
  const ir::Graph g = testing::build(kMlp);
  const LowerResult r = lower_and_verify(
      g, R"({"ops": {"Y": {"split": {"batch": 2, "out": 3}, "substitute": ["decompose-linear"],
                           "place": ["cpu:0", "cpu:1"]}}})");
  EXPECT_EQ(testing::count_kernel(r.graph, "transpose"), 0u);
  EXPECT_EQ(r.graph.operation(*find_operation(r.graph, "Y/matmul")).kernel(), "linear_nobias");
  EXPECT_EQ(r.plan.ops.at("Y/matmul"),
            (OpPlan{.split = {{"batch", 2}, {"out", 3}}, .place = {"cpu:0", "cpu:1"}}));
  EXPECT_EQ(r.plan.ops.at("Y"),
            (OpPlan{.split = {{"batch", 2}, {"n", 3}}, .place = {"cpu:0", "cpu:1"}}));
}

TEST(DecomposeLinear, MeshEntriesFollowTheTensors) {
  const ir::Graph g = testing::build(kMlp);
  const LowerResult r = lower_and_verify(
      g, R"({"ops": {"Y": {"split": {"batch": 2, "out": 3}, "substitute": ["decompose-linear"],
                           "mesh": {"batch": "dp", "out": "tp"}}}})");
  EXPECT_EQ(r.plan.ops.at("Y/matmul").mesh,
            (std::map<std::string, std::string>{{"batch", "dp"}, {"out", "tp"}}));
  EXPECT_EQ(r.plan.ops.at("Y").mesh,
            (std::map<std::string, std::string>{{"batch", "dp"}, {"n", "tp"}}));
}

TEST(DecomposeLinear, AVectorXNeedsNoReshape) {
  const ir::Graph g = testing::build(
      "X: f32[6]\nW: f32[3, 6]\nb: f32[3]\nY = linear(X, W, b)\n"
      "output Y\n");
  const LowerResult r = lower_and_verify(g, R"({"ops": {"Y": {"split": {"in": 2}}}})");
  EXPECT_EQ(testing::count_kernel(r.graph, "reshape"), 0u);
  EXPECT_EQ(r.graph.operation(*find_operation(r.graph, "Y/matmul")).index_names(),
            (std::vector<std::string>{"block", "out", "in"}));
  EXPECT_EQ(shards_of(r, "Y/matmul"), 2u);
}

}  // namespace
}  // namespace tapestry::rewrite
