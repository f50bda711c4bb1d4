// The importer's errors name the model file and the node as a structured Location
// (support/diagnostic.h), not only as text.
#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/diagnostic_testing.h"
#include "tapestry/onnx/import.h"

namespace tapestry::onnx {
namespace {

// A model reading float[2, 3] X and writing Y through a chain of one-input nodes, each
// (op, name, input, output).
struct ChainNode {
  std::string op, name, input, output;
};
std::string chain_model(const std::vector<ChainNode>& nodes) {
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  ::onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("g");
  const auto value = [](::onnx::ValueInfoProto& v, const std::string& n) {
    v.set_name(n);
    auto& tensor = *v.mutable_type()->mutable_tensor_type();
    tensor.set_elem_type(::onnx::TensorProto::FLOAT);
    tensor.mutable_shape()->add_dim()->set_dim_value(2);
    tensor.mutable_shape()->add_dim()->set_dim_value(3);
  };
  value(*graph.add_input(), "X");
  value(*graph.add_output(), "Y");
  for (const ChainNode& n : nodes) {
    ::onnx::NodeProto& node = *graph.add_node();
    node.set_op_type(n.op);
    node.set_name(n.name);
    node.add_input(n.input);
    node.add_output(n.output);
  }
  return model.SerializeAsString();
}

// A model of one node `op` named `name`, reading `input` (X) and writing Y.
std::string one_node_model(const std::string& op, const std::string& name,
                           const std::string& input = "X") {
  return chain_model({{op, name, input, "Y"}});
}

TEST(ImportErrors, AnUnsupportedOperatorIsLocatedAtItsNode) {
  const std::string bytes = one_node_model("Cos", "cosine");
  const support::Diagnostic d = support::testing::thrown_diagnostic(
      [&] { (void)import_onnx_bytes(bytes, "m.onnx", ImportOptions{}); });
  EXPECT_EQ(d.where.file, "m.onnx");
  EXPECT_EQ(d.where.node, "cosine");
  EXPECT_EQ(d.where.node_note, "Cos, node 0");
  EXPECT_EQ(support::format_diagnostic(d),
            "m.onnx: node 'cosine' (Cos, node 0): operator Cos is not supported "
            "(`tapestry import --list-ops` lists those that are)");
}

TEST(ImportErrors, AnUndefinedInputIsLocatedAtTheNodeThatReadsIt) {
  const std::string bytes = one_node_model("Relu", "r", "ghost");
  const support::Diagnostic d = support::testing::thrown_diagnostic(
      [&] { (void)import_onnx_bytes(bytes, "m.onnx", ImportOptions{}); });
  EXPECT_EQ(d.where.file, "m.onnx");
  EXPECT_EQ(d.where.node, "r");
  EXPECT_EQ(d.message, "input 'ghost' is not defined (no node, input or initializer produces it)");
}

// --check (ImportOptions::check): every blocker, each located at its node — also one after a
// blocker, whose input ONNX's shape inference stood in for.
TEST(ImportCheck, ListsEveryBlockerAtItsNode) {
  const std::string bytes = chain_model(
      {{"Cos", "cosine", "X", "A"}, {"Relu", "rectify", "A", "B"}, {"Sin", "sine", "B", "Y"}});

  ImportOptions options;
  options.check = true;
  const ImportResult r = import_onnx_bytes(bytes, "m.onnx", options);
  ASSERT_EQ(r.blockers.size(), 2U);
  EXPECT_EQ(r.blockers[0].where.node, "cosine");
  EXPECT_EQ(r.blockers[1].where.node, "sine");
  EXPECT_EQ(r.blockers[1].where.file, "m.onnx");
  EXPECT_EQ(r.blockers[1].where.node_note, "Sin, node 2");
  EXPECT_TRUE(r.graph.operations().empty()) << "a model with blockers gives no graph";

  // Without --check the first blocker is the error.
  const support::Diagnostic d = support::testing::thrown_diagnostic(
      [&] { (void)import_onnx_bytes(bytes, "m.onnx", ImportOptions{}); });
  EXPECT_EQ(d.where.node, "cosine");
}

}  // namespace
}  // namespace tapestry::onnx
