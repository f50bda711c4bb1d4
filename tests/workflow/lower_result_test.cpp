// rewrite::LowerResult's tensor map and reduction-split flag, on every example plan: the map
// agrees with looking each tensor up by name (what callers did before it existed), keeps every
// graph input and output, and the flag says whether split-reduction applied.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/split_reduction.h"
#include "tapestry/runtime/tensor_map.h"
#include "workflow_testing.h"

namespace tapestry {
namespace {

using workflow_testing::example;
using workflow_testing::example_plan;

struct Case {
  const char* graph;
  const char* plan;  // "" : no plan
};

const Case kCases[] = {
    {"linear_relu.tap", ""},
    {"linear_relu.tap", "linear_relu-batch2-fused.json"},
    {"linear_relu.tap", "linear_relu-grid.json"},
    {"linear_relu.tap", "linear_relu-split-in.json"},
    {"mlp.tap", "mlp-best.json"},
    {"mlp.tap", "mlp-data-parallel.json"},
    {"mlp.tap", "mlp-megatron.json"},
    {"convnet.tap", "convnet-batch.json"},
    {"resnet_bottleneck.tap", "resnet_bottleneck-batch.json"},
    {"transformer_block.tap", "transformer_block-heads.json"},
};

class LowerResultTest : public ::testing::TestWithParam<Case> {};

TEST_P(LowerResultTest, MapsTheGraphsTensorsAsTheirNamesDo) {
  const Case& c = GetParam();
  const ir::Graph graph = example(c.graph);
  const rewrite::Plan plan = *c.plan ? example_plan(c.plan) : rewrite::Plan{};
  const rewrite::LowerResult r = rewrite::lower(graph, plan);
  for (const std::vector<ir::TensorId>& kept :
       {runtime::graph_inputs(graph), runtime::graph_outputs(graph)}) {
    for (ir::TensorId t : kept) {
      ASSERT_TRUE(r.tensors.contains(t)) << runtime::tensor_name(graph, t);
    }
  }
  for (const auto& [from, to] : r.tensors) {
    const std::string name = runtime::tensor_name(graph, from);
    EXPECT_EQ(runtime::tensor_name(r.graph, to), name);
    EXPECT_EQ(runtime::find_tensor(r.graph, name), to) << name;
    EXPECT_EQ(r.lowered(from), to);
    EXPECT_EQ(r.original(to), from);
  }
  // A tensor of the input graph whose name the lowered graph still has is mapped (an Application
  // may take a removed tensor's key: names are looked up by label here, as callers did).
  for (ir::TensorId t : graph.tensors()) {
    const std::string name = runtime::tensor_name(graph, t);
    bool named = false;
    for (ir::TensorId l : r.graph.tensors()) named |= runtime::tensor_name(r.graph, l) == name;
    EXPECT_EQ(r.tensors.contains(t), named) << name;
  }
}

TEST_P(LowerResultTest, ReductionSplitIsWhetherSplitReductionApplied) {
  const Case& c = GetParam();
  const ir::Graph graph = example(c.graph);
  const rewrite::Plan plan = *c.plan ? example_plan(c.plan) : rewrite::Plan{};
  const rewrite::LowerResult r = rewrite::lower(graph, plan);
  const bool applied = std::any_of(r.log.begin(), r.log.end(), [](const rewrite::RewriteEvent& e) {
    return e.applied && e.pattern == rewrite::kSplitReduction;
  });
  EXPECT_EQ(r.reduction_split, applied);
}

INSTANTIATE_TEST_SUITE_P(Examples, LowerResultTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = std::string(info.param.graph) + "_" +
                                              (*info.param.plan ? info.param.plan : "none");
                           std::replace_if(
                               name.begin(), name.end(),
                               [](char ch) {
                                 return !std::isalnum(static_cast<unsigned char>(ch));
                               },
                               '_');
                           return name;
                         });

TEST(LowerResult, SplittingTheInDimSplitsAReduction) {
  const rewrite::LowerResult split =
      rewrite::lower(example("linear_relu.tap"), example_plan("linear_relu-split-in.json"));
  EXPECT_TRUE(split.reduction_split);
  const rewrite::LowerResult batch =
      rewrite::lower(example("linear_relu.tap"), example_plan("linear_relu-batch2-fused.json"));
  EXPECT_FALSE(batch.reduction_split);
}

TEST(LowerResult, FusionRemovesTheTensorsInsideAGroup) {
  const ir::Graph graph = example("linear_relu.tap");
  const rewrite::LowerResult r =
      rewrite::lower(graph, example_plan("linear_relu-batch2-fused.json"));
  // Y/linear's output lives inside the fused operation: not in the lowered graph, not mapped.
  EXPECT_LT(r.tensors.size(), graph.tensors().size());
  EXPECT_EQ(r.tensors.size(), r.graph.tensors().size());
}

TEST(LowerResult, OriginalOfANewTensorIsNone) {
  const ir::Graph graph = example("linear_relu.tap");
  const rewrite::LowerResult r = rewrite::lower(graph, example_plan("linear_relu-split-in.json"));
  // split-reduction adds the partial results' tensor: no tensor of the input graph.
  std::size_t fresh = 0;
  for (ir::TensorId t : r.graph.tensors()) fresh += r.original(t) ? 0 : 1;
  EXPECT_GT(fresh, 0U);
}

}  // namespace
}  // namespace tapestry
