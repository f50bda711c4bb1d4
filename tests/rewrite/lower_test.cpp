#include "tapestry/rewrite/lower.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rewrite/rewrite_testing.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {
namespace {

using testing::build;
using testing::count_kernel;
using ::testing::HasSubstr;
using testing::run_both;

constexpr std::string_view kLinearRelu = R"(
X: f32[-40:60, 20:32]
W: f32[32, 12]
b: f32[32]
Y = relu(linear(X, W, b))
output Y
)";

constexpr std::string_view kMatmul = R"(
A: f32[6, 10]
B: f32[10, 5]
C = matmul(A, B)
output C
)";

TEST(Lower, EmptyPlanGivesOneApplicationPerOperation) {
  ir::Graph g = build(kLinearRelu);
  LowerResult r = lower(g, Plan{});
  EXPECT_EQ(r.graph.applications().size(), 2u);
  EXPECT_TRUE(run_both(g, r.graph).all_bitwise_equal());
}

// Every pass of the pipeline is timed, in order, with its work: the rewrites each pattern
// applied (as the log lists them) and the operations shard-grid cut.
TEST(Lower, TimesEveryPassInPipelineOrder) {
  ir::Graph g = build(kLinearRelu);
  LowerResult r = lower(g, parse_plan(R"({"ops": {"Y/linear": {"split": {"batch": 2, "in": 2}}},
                                          "fuse": "auto"})"));
  std::vector<std::string> names;
  for (const PassTime& p : r.passes) {
    names.push_back(p.pass);
    EXPECT_GE(p.seconds, 0.0) << p.pass;
    std::int64_t applied = 0;
    for (const RewriteEvent& e : r.log) applied += e.applied && e.pattern == p.pass ? 1 : 0;
    if (p.pass != "check-plan" && p.pass != "validate") {
      EXPECT_EQ(p.work, applied) << p.pass;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"check-plan", "decompose-linear", "split-reduction",
                                             "fuse-elementwise", "shard-grid", "validate"}));
  EXPECT_GT(r.passes[1].work, 0);  // the split of `in` needed decompose-linear
  EXPECT_GT(r.passes[4].work, 0);
}

TEST(Lower, ShardOnBatchIsBitwiseEqual) {
  ir::Graph g = build(kLinearRelu);
  LowerResult r = lower(g, parse_plan(R"({"ops": {"Y/linear": {"split": {"batch": 2}},
                                                 "Y": {"split": {"d0": 2}}}})"));
  EXPECT_EQ(r.graph.applications().size(), 4u);
  auto cmp = run_both(g, r.graph);
  EXPECT_TRUE(cmp.all_bitwise_equal()) << cmp.summary();
}

TEST(Lower, UnevenGridIsBitwiseEqual) {
  ir::Graph g = build(kLinearRelu);
  LowerResult r =
      lower(g, parse_plan(R"({"ops": {"Y/linear": {"split": {"batch": 3, "out": 5}}}})"));
  EXPECT_EQ(r.graph.applications_of(*find_operation(r.graph, "Y/linear")).size(), 15u);
  auto cmp = run_both(g, r.graph);
  EXPECT_TRUE(cmp.all_bitwise_equal()) << cmp.summary();
}

TEST(Lower, EvenReductionSplitAddsABlockDimAndAReduce) {
  ir::Graph g = build(kMatmul);
  LowerResult r = lower(g, parse_plan(R"({"ops": {"C": {"split": {"k": 2, "m": 3}}}})"));
  ASSERT_EQ(r.log.size(), 3u);  // split-reduction, shard-grid C, shard-grid C/reduce
  EXPECT_EQ(r.log[0].pattern, "split-reduction");
  auto c = find_operation(r.graph, "C");
  auto reduce = find_operation(r.graph, "C/reduce");
  ASSERT_TRUE(c && reduce);
  EXPECT_EQ(r.graph.operation(*c).index_names(),
            (std::vector<std::string>{"block", "m", "n", "k"}));
  EXPECT_EQ(*r.graph.operation(*c).ipf_index(), zspace::Range::of_shape({2, 6, 5, 5}));
  EXPECT_EQ(r.graph.applications_of(*c).size(), 6u);  // block 2 × m 3
  // m 3 (inherited) × n 2 (the default reduce-scatter of a graph output: combine_test.cpp)
  EXPECT_EQ(r.graph.applications_of(*reduce).size(), 6u);
  auto cmp = run_both(g, r.graph);
  EXPECT_TRUE(cmp.all_within(1e-5, 1e-5)) << cmp.summary();
}

TEST(Lower, UnevenReductionSplitMakesOneOperationPerBlockAndAnAddTree) {
  ir::Graph g = build(kMatmul);
  LowerResult r = lower(g, parse_plan(R"({"ops": {"C": {"split": {"k": 4}}}})"));
  EXPECT_EQ(count_kernel(r.graph, "matmul"), 4u);
  EXPECT_EQ(count_kernel(r.graph, "add"), 3u);  // a balanced tree over 4 partials
  auto block3 = find_operation(r.graph, "C/block3");
  ASSERT_TRUE(block3);
  EXPECT_EQ(*r.graph.operation(*block3).ipf_index(), zspace::Range({0, 0, 8}, {6, 5, 10}));
  auto cmp = run_both(g, r.graph);
  EXPECT_TRUE(cmp.all_within(1e-5, 1e-5)) << cmp.summary();
}

TEST(Lower, SplittingLinearInDecomposesItFirst) {
  ir::Graph g = build(kLinearRelu);
  LowerResult r = lower(g, parse_plan(R"({"ops": {"Y/linear": {"split": {"in": 3, "out": 2}}}})"));
  ASSERT_GE(r.log.size(), 2u);
  EXPECT_EQ(r.log[0].pattern, "decompose-linear");
  EXPECT_EQ(r.log[1].pattern, "split-reduction");
  EXPECT_EQ(count_kernel(r.graph, "linear"), 0u);
  EXPECT_EQ(count_kernel(r.graph, "bias_add"), 1u);
  EXPECT_EQ(count_kernel(r.graph, "reduce"), 1u);
  // in → block (3) and out (2) on the product; out → the bias_add's n.
  auto mm = find_operation(r.graph, "Y/linear/matmul");
  ASSERT_TRUE(mm);
  EXPECT_EQ(r.graph.applications_of(*mm).size(), 6u);
  auto cmp = run_both(g, r.graph);
  EXPECT_TRUE(cmp.all_within(1e-5, 1e-5)) << cmp.summary();
}

TEST(Lower, SplitReductionRefusesLinearWhoseBiasEveryBlockWouldAdd) {
  ir::Graph g = build(kLinearRelu);
  LowerOptions options;
  options.driver.disabled.insert("decompose-linear");
  EXPECT_THAT(
      [&] {
        (void)lower(g, parse_plan(R"({"ops": {"Y/linear": {"split": {"in": 2}}}})"), options);
      },
      ::testing::ThrowsMessage<Error>(
          HasSubstr("operation 'Y/linear': cannot split reduction dim 'in' into 2: "
                    "split-reduction refused: input 'bias' does not depend on reduction dim")));
}

TEST(Lower, APlanThatDoesNotFitIsAnError) {
  ir::Graph g = build(kLinearRelu);
  EXPECT_THAT([&] { (void)lower(g, parse_plan(R"({"ops": {"Q": {"split": {"x": 2}}}})")); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no operation named 'Q'")));
}

// Found by the lowering property: reshape [2, 2] -> [4] writes result[2·d0 + d1]; cut on d1,
// the two shards write cells {0, 2} and {1, 3}, whose boxes [0:3] and [1:4] overlap. The lowered
// graph was invalid ("internal error"); shard-grid now refuses with the reason, and a cut of
// the outer dim (rows) still works.
TEST(Lower, ShardGridRefusesCuttingTheInnerDimOfAReshapeMerge) {
  ir::Graph g = build(R"(
X: i32[-4:-2, -4:-2]
Y = reshape(X, shape=[4])
output Y
)");
  EXPECT_THAT([&] { (void)lower(g, parse_plan(R"({"ops": {"Y": {"split": {"d1": 2}}}})")); },
              ::testing::ThrowsMessage<Error>(HasSubstr("write scattered cells of its output")));
  for (const char* ok : {R"({"ops": {"Y": {"split": {"d0": 2}}}})",
                         R"({"ops": {"Y": {"split": {"d0": 2, "d1": 2}}}})"}) {
    LowerResult r = lower(g, parse_plan(ok));
    EXPECT_TRUE(run_both(g, r.graph).all_bitwise_equal()) << ok;
  }
}

// Found by the lowering property: decompose-linear matched a linear whose x has no batch dim
// and then failed in apply ("matmul: ... must have rank at least 2"); it was then refused in
// match, so such a linear's `in` could not be split (issue 25: 23 of 600 random program × plan
// cases). Then it multiplied x as the one-row matrix [1, in] between two reshapes; now the
// product is linear_nobias, which takes a vector x as linear does: every split of `in` (even,
// uneven) and `out` lowers, and the result is within the bound of a split reduction; decomposed
// without a split it is bitwise equal.
TEST(Lower, DecomposeLinearOfAVectorX) {
  ir::Graph g = build(R"(
X: f32[-4:2]
W: f32[3, 6]
b: f32[3]
Y = linear(X, W, b)
output Y
)");
  LowerResult r = lower(g, parse_plan(R"({"ops": {"Y": {"split": {"out": 2},
                                                         "substitute": ["decompose-linear"]}}})"));
  ASSERT_FALSE(r.log.empty());
  EXPECT_TRUE(r.log[0].applied);
  EXPECT_EQ(r.log[0].detail, "Y -> Y/matmul (linear_nobias) + Y (bias_add)");
  EXPECT_EQ(count_kernel(r.graph, "reshape"), 0u);
  EXPECT_EQ(count_kernel(r.graph, "linear"), 0u);
  // out → the product's out and the bias_add's n: 2 shards each.
  for (const char* op : {"Y/matmul", "Y"}) {
    EXPECT_EQ(r.graph.applications_of(*find_operation(r.graph, op)).size(), 2u) << op;
  }
  auto cmp = run_both(g, r.graph);
  EXPECT_TRUE(cmp.all_bitwise_equal()) << cmp.summary();

  for (const char* plan : {R"({"ops": {"Y": {"split": {"in": 2}}}})",
                           R"({"ops": {"Y": {"split": {"in": 4, "out": 3}}}})",
                           R"({"ops": {"Y": {"split": {"in": 6}}}, "fuse": "auto"})"}) {
    r = lower(g, parse_plan(plan));
    EXPECT_EQ(count_kernel(r.graph, "linear"), 0u) << plan;
    // in → the product's blocks (split-reduction; uneven: one operation per block).
    std::size_t products = 0;
    for (ir::OperationId op : r.graph.operations()) {
      if (r.graph.operation(op).kernel() == "linear_nobias")
        products += r.graph.applications_of(op).size();
    }
    EXPECT_GE(products, 2u) << plan;
    const runtime::VerifyReport report =
        testing::within_documented_bound(g, testing::run_lowered(g, r.graph));
    EXPECT_TRUE(report.pass()) << plan << "\n" << report.text();
  }
}

// matmul needs matrices; a vector operand arrives as a one-row (or one-column) matrix between
// reshapes, as ONNX import writes numpy.matmul of a vector. Its k splits like any matmul's.
TEST(Lower, AMatmulOfAVectorSplitsItsReduction) {
  ir::Graph g = build(R"(
v: f32[6]
M: f32[6, 4]
u: f32[4]
R = reshape(matmul(reshape(v, shape=[1, 6]), M), shape=[4])
C = reshape(matmul(M, reshape(u, shape=[4, 1])), shape=[6])
output R, C
)");
  for (const char* plan :
       {R"({"ops": {"R/matmul": {"split": {"k": 2}}, "C/matmul": {"split": {"k": 4}}}})",
        R"({"ops": {"R/matmul": {"split": {"k": 4, "n": 2}},
                    "C/matmul": {"split": {"k": 3, "m": 3}}}, "fuse": "auto"})"}) {
    LowerResult r = lower(g, parse_plan(plan));
    int splits = 0;
    for (const RewriteEvent& e : r.log) splits += e.applied && e.pattern == "split-reduction";
    EXPECT_EQ(splits, 2) << plan;
    const runtime::VerifyReport report =
        testing::within_documented_bound(g, testing::run_lowered(g, r.graph));
    EXPECT_TRUE(report.pass()) << plan << "\n" << report.text();
  }
}

}  // namespace
}  // namespace tapestry::rewrite

namespace tapestry::rewrite {
namespace {

TEST(Fuse, RunningExampleGivesTwoFusedApplicationsAndDropsZ) {
  ir::Graph g = testing::build(kLinearRelu);
  LowerResult r = lower(g, parse_plan(R"({"ops": {"Y/linear": {"split": {"batch": 2}}},
                                          "fuse": [["Y/linear", "Y"]]})"));
  EXPECT_EQ(r.graph.operations().size(), 1u);
  EXPECT_EQ(r.graph.applications().size(), 2u);
  EXPECT_EQ(testing::count_kernel(r.graph, "fused"), 1u);
  EXPECT_EQ(r.graph.tensors().size(), 4u);  // X, W, b, Y: the intermediate is gone
  EXPECT_FALSE(testing::has_tensor_labelled(r.graph, "Y/linear"));
  auto cmp = testing::run_both(g, r.graph);
  EXPECT_TRUE(cmp.all_bitwise_equal()) << cmp.summary();
}

// The intermediate's dtype is recorded under its loom name; fused params read back to the same
// stages, and a spelling Tapestry does not know is kept as read (the fused kernel reports it).
TEST(Fuse, RecordsTheIntermediateDTypeByItsLoomName) {
  ir::Graph g = testing::build("X: f64[4, 3]\nY = exp(neg(X))\noutput Y\n");
  LowerResult r = lower(g, parse_plan(R"({"fuse": [["Y/neg", "Y"]]})"));
  ASSERT_EQ(testing::count_kernel(r.graph, "fused"), 1u);
  const nlohmann::json params = r.graph.operation(r.graph.operations().front()).params();
  EXPECT_EQ(params["stages"][0]["outputs"][0]["dtype"], "float64");
  std::vector<FusedStage> stages = fused_stages(params);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].outputs[0].dtype, ir::LoomDType(ir::DType::kFloat64));
  EXPECT_EQ(stages[1].outputs[0].dtype, std::nullopt);  // the fused output: no intermediate
  EXPECT_EQ(fused_params(stages), params);

  nlohmann::json odd = params;
  odd["stages"][0]["outputs"][0]["dtype"] = "f64";
  stages = fused_stages(odd);
  ASSERT_TRUE(stages[0].outputs[0].dtype.has_value());
  EXPECT_EQ(stages[0].outputs[0].dtype->known(), std::nullopt);
  EXPECT_EQ(fused_params(stages), odd);
}

TEST(Fuse, ChainOfThreeAfterADecompositionWithSplitReduction) {
  ir::Graph g = testing::build(R"(
X: f32[8, 12]
W: f32[6, 12]
b: f32[6]
Y = gelu(linear(X, W, b))
output Y
)");
  LowerResult r = lower(g, parse_plan(R"({"ops": {"Y/linear": {"split": {"in": 2, "batch": 2}}},
                                          "fuse": [["Y/linear", "Y"]]})"));
  EXPECT_EQ(testing::count_kernel(r.graph, "fused"), 1u);
  auto cmp = testing::run_both(g, r.graph);
  EXPECT_TRUE(cmp.all_within(1e-5, 1e-5)) << cmp.summary();
}

TEST(Fuse, RefusesWhenTheIntermediateEscapes) {
  ir::Graph g = testing::build(R"(
X: f32[8, 12]
W: f32[6, 12]
b: f32[6]
H = linear(X, W, b)
Y = relu(H)
Z = neg(H)
output Y
output Z
)");
  LowerResult r = lower(g, parse_plan(R"({"fuse": [["H", "Y"]]})"));
  ASSERT_EQ(r.log.size(), 1u);
  EXPECT_FALSE(r.log[0].applied);
  EXPECT_THAT(r.log[0].detail, ::testing::HasSubstr("has 2 readers"));
  EXPECT_EQ(testing::count_kernel(r.graph, "fused"), 0u);
}

TEST(Fuse, AutoFusesEveryEligibleChain) {
  ir::Graph g = testing::build(R"(
X: f32[8, 12]
W: f32[6, 12]
b: f32[6]
Y = neg(relu(linear(X, W, b)))
output Y
)");
  LowerResult r =
      lower(g, parse_plan(R"({"ops": {"Y/linear": {"split": {"out": 3}}}, "fuse": "auto"})"));
  EXPECT_EQ(r.graph.operations().size(), 1u);
  EXPECT_EQ(r.graph.applications().size(), 3u);
  auto cmp = testing::run_both(g, r.graph);
  EXPECT_TRUE(cmp.all_bitwise_equal()) << cmp.summary();
}

// Found by the lowering property: a stage port reading a rank-0 tensor has an IPF with no rows,
// and its JSON ("projection": []) lost the input rank, so the fused kernel addressed the scalar
// with a 0×0 map (out of bounds). Likewise a rank-0 stage's index map inside a rank-1 fusion.
TEST(Fuse, StagesReadingAndComputingRank0TensorsKeepTheirRanks) {
  ir::Graph g = testing::build(R"(
X: f32[-2:3, 4]
W: f32[3, 4]
b: f32[3]
S: f32[]
V = sub(linear(X, W, b), S)
T: f32[6]
U = relu(sum(T, dim=0))
output V, U
)");
  LowerResult r = lower(g, parse_plan(R"({"ops": {"V/linear": {"split": {"batch": 2}}},
                                          "fuse": "auto"})"));
  EXPECT_EQ(testing::count_kernel(r.graph, "fused"), 2u);
  auto cmp = testing::run_both(g, r.graph);
  EXPECT_TRUE(cmp.all_bitwise_equal()) << cmp.summary();
}

// Issue 25: `slice` is elementwise on h but reads one row of it. Fused into h's producer, the
// fused operation kept h's index space and wrote all 17 rows of the 1-row s: `run`, `cost`,
// `shard` and `run --optimize` ended in "internal error: the lowered graph is invalid:
// error[selection-range] … zr[0:2, 0:17, 0:8] is not inside s's range zr[0:2, 0:1, 0:8]", after
// the cost model had priced the plan. fuse-elementwise now refuses a reader of a sub-box.
constexpr std::string_view kSliceOfAdd = R"(
x: f32[2, 17, 8]
b: f32[8]
h = add(x, b)
s = slice(h, dim=1, start=0, end=1)
y = reshape(s, shape=[2, 8])
output y
)";

TEST(Fuse, RefusesAConsumerThatReadsASubBoxOfTheIntermediate) {
  ir::Graph g = testing::build(kSliceOfAdd);
  for (const char* plan :
       {R"({"fuse": "auto"})", R"({"ops": {"h": {"split": {"d1": 4}}}, "fuse": "auto"})"}) {
    LowerResult r = lower(g, parse_plan(plan));
    EXPECT_EQ(testing::count_kernel(r.graph, "fused"), 0u) << plan;
    auto cmp = testing::run_both(g, r.graph);
    EXPECT_TRUE(cmp.all_bitwise_equal()) << plan << cmp.summary();
  }
  // Asked for by name: refused with the reason.
  LowerResult r = lower(g, parse_plan(R"({"fuse": [["h", "s"]]})"));
  ASSERT_EQ(r.log.size(), 1u);
  EXPECT_FALSE(r.log[0].applied);
  EXPECT_EQ(r.log[0].detail,
            "s reads only zr[0:2, 0:1, 0:8] of h (zr[0:2, 0:17, 0:8]): fused, it would run over "
            "all of h's index");
}

// The rule is about the box read, not the kernel: a slice in the middle of a tensor that starts
// at negative coordinates (pad's result) is refused, one that keeps every cell fuses (bitwise,
// as every fusion).
TEST(Fuse, AConsumerThatReadsTheWholeIntermediateFusesWhateverItsKernel) {
  ir::Graph middle = testing::build(R"(
x: f32[2, 3, 4]
y = slice(pad(x, padding=1), dim=2, start=1, end=3)
output y
)");
  LowerResult r = lower(middle, parse_plan(R"({"fuse": [["y/pad", "y"]]})"));
  ASSERT_EQ(r.log.size(), 1u);
  EXPECT_THAT(
      r.log[0].detail,
      ::testing::HasSubstr("y reads only zr[0:2, -1:4, 0:2] of y/pad (zr[0:2, -1:4, -1:5])"));
  EXPECT_TRUE(testing::run_both(middle, r.graph).all_bitwise_equal());

  ir::Graph whole = testing::build(R"(
x: f32[3, -5:5]
y = slice(neg(x), dim=1, start=0, end=10)
output y
)");
  r = lower(whole, parse_plan(R"({"ops": {"y/neg": {"split": {"d1": 2}}},
                                 "fuse": [["y/neg", "y"]]})"));
  EXPECT_EQ(testing::count_kernel(r.graph, "fused"), 1u);
  EXPECT_EQ(r.graph.applications().size(), 2u);
  auto cmp = testing::run_both(whole, r.graph);
  EXPECT_TRUE(cmp.all_bitwise_equal()) << cmp.summary();
}

}  // namespace
}  // namespace tapestry::rewrite
