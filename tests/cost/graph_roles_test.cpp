// graph_roles(): batch-like dims, activations and weights, contractions — on graphs whose answer
// is known by construction (the examples' layers), and the faults a looser rule would let in.
#include "tapestry/cost/graph_roles.h"

#include <gtest/gtest.h>

#include "cost/cost_testing.h"
#include "tapestry/support/file.h"

namespace tapestry::cost {
namespace {

namespace fs = std::filesystem;
using testing::example;

ir::TensorId tensor(const ir::Graph& g, std::string_view label) {
  for (ir::TensorId t : g.tensors()) {
    if (g.tensor(t).label() == label) return t;
  }
  ADD_FAILURE() << "no tensor " << label;
  return ir::TensorId();
}

// The batch-like index dims of operation `name`, by name.
std::vector<std::string> batch_of(const GraphRoles& roles, std::string_view name) {
  const auto at = roles.find(name);
  EXPECT_TRUE(at.has_value()) << name;
  if (!at) return {};
  const OperationRoles& op = roles.operations[*at];
  std::vector<std::string> dims;
  for (std::size_t d = 0; d < op.dims.size(); ++d) {
    if (op.batch[d]) dims.push_back(op.dims[d]);
  }
  return dims;
}

TEST(GraphRoles, TheLinearsBatchIsBatchLikeItsWeightsAreWeights) {
  const ir::Graph g = example("mlp");
  const GraphRoles roles = graph_roles(g);
  EXPECT_EQ(batch_of(roles, "H/linear"), std::vector<std::string>{"batch"});
  EXPECT_EQ(batch_of(roles, "H"), std::vector<std::string>{"d0"});  // relu's rows
  EXPECT_EQ(batch_of(roles, "Y"), std::vector<std::string>{"batch"});
  EXPECT_TRUE(roles.is_activation(tensor(g, "X")));
  for (std::string_view w : {"W1", "b1", "W2", "b2"}) {
    EXPECT_TRUE(roles.is_weight(tensor(g, w))) << w;
    EXPECT_FALSE(roles.is_activation(tensor(g, w))) << w;
  }
  EXPECT_FALSE(roles.is_weight(tensor(g, "H")));
  EXPECT_EQ(roles.batch_dims(tensor(g, "H")), (std::vector<bool>{true, false}));
  EXPECT_TRUE(roles.operations[*roles.find("Y")].contraction);
  EXPECT_FALSE(roles.operations[*roles.find("H")].contraction);
}

// The sample dim survives the reshape into heads; the position in the sequence and the heads are
// not batch-like, nor is anything the weights alone make.
TEST(GraphRoles, TheSequenceNotThePositionIsBatchLikeThroughReshapes) {
  const ir::Graph g = example("transformer_block");
  const GraphRoles roles = graph_roles(g);
  EXPECT_EQ(batch_of(roles, "Q/reshape"), std::vector<std::string>{"d0"});
  EXPECT_EQ(roles.batch_dims(tensor(g, "Q")), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(batch_of(roles, "Scores/matmul"), std::vector<std::string>{"batch0"});
  EXPECT_EQ(batch_of(roles, "P"), std::vector<std::string>{"batch0"});
  EXPECT_EQ(batch_of(roles, "Attn"), std::vector<std::string>{"batch"});
  EXPECT_EQ(batch_of(roles, "Y"), std::vector<std::string>{"d0"});
  EXPECT_TRUE(roles.is_weight(tensor(g, "Scale")));  // broadcast: its dim follows nothing
  EXPECT_TRUE(roles.is_activation(tensor(g, "X")));
  EXPECT_TRUE(roles.operations[*roles.find("Scores/matmul")].contraction);
}

// A convolution's images are activations, its filters weights.
TEST(GraphRoles, ConvolutionsImagesAndFilters) {
  const ir::Graph g = example("convnet");
  const GraphRoles roles = graph_roles(g);
  EXPECT_TRUE(roles.is_activation(tensor(g, "Img")));
  EXPECT_TRUE(roles.is_weight(tensor(g, "K1")));
  EXPECT_EQ(batch_of(roles, "C1/conv2d"), std::vector<std::string>{"n"});
  EXPECT_EQ(batch_of(roles, "Logits"), std::vector<std::string>{"batch"});
  EXPECT_TRUE(roles.operations[*roles.find("C1/conv2d")].contraction);
}

// A weight transposed is still a weight, and is never batch-like. The rule reads structure, not
// names: a graph input whose leading dim reaches a result's leading dim is an activation, so a
// matmul's left operand V is one even when it holds parameters.
TEST(GraphRoles, WhatOnlyWeightsMakeIsAWeight) {
  const ir::Graph g = rewrite::testing::build(
      "X: f32[16, 8]\nW: f32[4, 8]\nV: f32[8, 4]\nT = transpose(W)\nP = matmul(V, W)\n"
      "Y = matmul(X, T)\noutput Y\noutput P\n");
  const GraphRoles roles = graph_roles(g);
  EXPECT_TRUE(roles.is_weight(tensor(g, "W")));
  EXPECT_TRUE(roles.is_weight(tensor(g, "T")));
  EXPECT_TRUE(batch_of(roles, "T").empty());
  EXPECT_FALSE(roles.is_weight(tensor(g, "Y")));
  EXPECT_EQ(batch_of(roles, "Y"), std::vector<std::string>{"m"});
  EXPECT_TRUE(roles.is_activation(tensor(g, "X")));
  EXPECT_TRUE(roles.is_activation(tensor(g, "V")));
  EXPECT_EQ(batch_of(roles, "P"), std::vector<std::string>{"m"});
}

}  // namespace
}  // namespace tapestry::cost
