// The operation-dialect constraints: each fires on a small damaged graph and stays quiet on the
// valid ones (the last tests).
#include <gtest/gtest.h>

#include "ir_testing.h"
#include "tapestry/ir/constraints.h"
#include "tapestry/ir/dialect.h"

namespace tapestry::ir {
namespace {

using testing::issues_of;
using testing::zr;

const Dialect& op_dialect() {
  return Dialect::operation();
}

TEST(NodeTypeConstraint, FiresOnApplicationsInTheOperationDialectAndUnknownTypes) {
  auto m = testing::linear_relu(2);
  EXPECT_EQ(issues_of(m.g, op_dialect(), "node-type").size(), 4u);
  m.g.add_opaque({.type = "urn:x:Widget", .body = nlohmann::json::object()});
  auto issues = issues_of(m.g, Dialect::application(), "node-type");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].summary, "Unknown node type");
}

TEST(TagTypeConstraint, FiresOnMisplacedAndUnknownTags) {
  auto a = testing::add_graph();
  a.g.set_ipf_index(a.x, zr("zr[0:1]"));
  a.g.set_other_tag(a.op, "urn:x:tag", 1);
  auto issues = issues_of(a.g, op_dialect(), "tag-type");
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].summary, "Tag not allowed on this node kind");
  EXPECT_EQ(issues[1].summary, "Unknown tag type");
}

TEST(BodySchemaConstraint, ListsEveryProblemWithItsPath) {
  Graph g;
  g.add_opaque({.type = std::string(kTensorTypeUrl),
                .body = {{"dtype", 3}, {"range", {{"start", {0, "x"}}, {"end", {1}}}}}},
               {.key = "t"});
  auto issues = issues_of(g, op_dialect(), "body-schema");
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].contexts[0].jsonpath, "$.nodes[?(@.id=='t')].body.dtype");
  EXPECT_EQ(issues[1].contexts[0].jsonpath, "$.nodes[?(@.id=='t')].body.range.start[1]");
  EXPECT_EQ(issues[0].contexts[0].where.node, "t");  // the node, typed (issue.h)
}

TEST(TagSchemaConstraint, FiresOnAMalformedKnownTag) {
  auto a = testing::add_graph();
  a.g.set_other_tag(a.op, "loom:IPFIndex", {{"start", {5}}, {"end", {1}}});
  auto issues = issues_of(a.g, op_dialect(), "tag-schema");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("is after end"), std::string::npos);
}

TEST(BodyExtensionFieldConstraint, WarnsAboutFieldsOutsideTheSchema) {
  auto a = testing::add_graph();
  a.g.set_extensions(a.x, {{"layout", "nchw"}});
  ValidationReport report = validate(a.g, op_dialect());
  EXPECT_TRUE(report.is_valid());
  ASSERT_EQ(testing::types_of(report.issues), std::vector<std::string>{"body-extension-field"});
  EXPECT_EQ(report.issues[0].severity, Severity::kWarning);
}

TEST(TensorDTypeConstraint, FiresOnUnknownDTypes) {
  Graph g;
  g.add_tensor({.dtype = LoomDType::parse("boolean"), .range = zr("zr[0:1]")});
  g.add_tensor({.dtype = DType::kBool, .range = zr("zr[0:1]")});
  auto issues = issues_of(g, op_dialect(), "tensor-dtype");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].params["dtype"], "boolean");
}

TEST(NodeReferenceConstraint, FiresOnMissingAndWrongKindReferences) {
  auto a = testing::add_graph();
  nlohmann::json doc = testing::to_document(a.g);
  auto& op = testing::node_labelled(doc, "add");
  op["body"]["inputs"]["tensors"][0]["tensorId"] = "nowhere";
  op["body"]["inputs"]["tensors"][1]["tensorId"] = op["id"];  // an operation, not a tensor
  ReadResult r = read_graph_json(doc.dump());
  auto issues = issues_of(*r.graph, op_dialect(), "node-reference");
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].summary, "Reference to a missing node");
  EXPECT_EQ(issues[1].summary, "Reference to a node that is not a Tensor");
  // Constraints that need resolved references are skipped rather than misled.
  ValidationReport report = validate(*r.graph, op_dialect());
  EXPECT_NE(std::find(report.skipped.begin(), report.skipped.end(), "selection-range"),
            report.skipped.end());
}

TEST(SelectionRangeConstraint, FiresOnSelectionsOutsideTheTensor) {
  auto a = testing::add_graph();
  nlohmann::json doc = testing::to_document(a.g);
  testing::node_labelled(doc, "Y")["body"]["range"]["end"] = {210, 54};
  auto issues = issues_of(testing::from_document(doc), op_dialect(), "selection-range");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("inputs.tensors[1].range zr[200:210, 50:55] is not inside Y"),
            std::string::npos)
      << issues[0].message;
}

TEST(SelectionRangeConstraint, FiresOnRankMismatch) {
  auto a = testing::add_graph();
  nlohmann::json doc = testing::to_document(a.g);
  testing::node_labelled(doc, "X")["body"]["range"] = {{"start", {0}}, {"end", {10}}};
  auto issues = issues_of(testing::from_document(doc), op_dialect(), "selection-range");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].summary, "Selection rank differs from its tensor's rank");
}

TEST(OperationAcyclicConstraint, ReportsTheCycleNodes) {
  Graph g;
  TensorId a = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:4]")}, {.label = "A"});
  TensorId b = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:4]")}, {.label = "B"});
  for (auto [in, out, name] : {std::tuple{a, b, "f"}, std::tuple{b, a, "h"}}) {
    OperationBody body{.kernel = name};
    body.inputs.append("x", {in, zr("zr[0:4]")});
    body.outputs.append("y", {out, zr("zr[0:4]")});
    g.add_operation(std::move(body), {.label = name});
  }
  auto issues = issues_of(g, op_dialect(), "operation-acyclic");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message, "A → f → B → h → A");
  EXPECT_EQ(issues[0].contexts.size(), 4u);
}

TEST(TensorSingleProducerConstraint, FiresOnTwoWriters) {
  auto a = testing::add_graph();
  OperationBody again{.kernel = "copy"};
  again.inputs.append("x", {a.x, zr("zr[0:10, 0:5]")});
  again.outputs.append("y", {a.z, zr("zr[0:10, 0:5]")});
  a.g.add_operation(std::move(again), {.label = "copy"});
  auto issues = issues_of(a.g, op_dialect(), "tensor-single-producer");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message, "Z is written by add and copy");
}

TEST(OperationIpfPresentConstraint, WarnsWithoutTagsAndFailsWithOnlyOne) {
  Graph g;
  TensorId x = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:4]")});
  OperationBody body{.kernel = "k"};
  body.outputs.append("y", {x, zr("zr[0:4]")});
  OperationId op = g.add_operation(std::move(body));
  auto warning = issues_of(g, op_dialect(), "operation-ipf-present");
  ASSERT_EQ(warning.size(), 1u);
  EXPECT_EQ(warning[0].severity, Severity::kWarning);
  g.set_ipf_index(op, zr("zr[0:4]"));
  auto error = issues_of(g, op_dialect(), "operation-ipf-present");
  ASSERT_EQ(error.size(), 1u);
  EXPECT_EQ(error[0].summary, "Operation has an IPFIndex but no IPFSignature");
}

TEST(OperationIndexNamesConstraint, FiresOnBadNamesAndReductions) {
  auto m = testing::linear_relu(0);
  nlohmann::json doc = testing::to_document(m.g);
  auto& lin = testing::node_labelled(doc, "linear")["body"];
  lin["indexNames"] = {"batch", "batch"};
  lin["reductions"] = {{"k", "sum"}};
  auto issues = issues_of(testing::from_document(doc), op_dialect(), "operation-index-names");
  EXPECT_EQ(testing::types_of(issues).size(), 3u);
  EXPECT_EQ(issues[0].summary, "Index names do not match the index rank");
  EXPECT_EQ(issues[1].summary, "Duplicate index name");
  EXPECT_EQ(issues[2].summary, "Reduction of an unknown index dimension");
}

TEST(OperationIpfAgreementConstraint, FiresWhenASelectionIsNotIpfOfTheIndex) {
  auto a = testing::add_graph();
  nlohmann::json doc = testing::to_document(a.g);
  testing::node_labelled(doc, "add")["body"]["inputs"]["tensors"][1]["range"]["end"] = {210, 54};
  auto issues = issues_of(testing::from_document(doc), op_dialect(), "operation-ipf-agreement");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message,
            "inputs.tensors[1]: the IPF maps index zr[0:10, 0:5] to zr[200:210, 50:55], but the "
            "selection is zr[200:210, 50:54]");
}

TEST(OperationIpfAgreementConstraint, FiresOnPortAndRankMismatches) {
  auto a = testing::add_graph();
  nlohmann::json doc = testing::to_document(a.g);
  auto& sig = testing::node_labelled(doc, "add")["tags"][testing::ipf_signature_tag()];
  sig["inputs"]["tensors"].erase(1);
  sig["outputs"]["result"][0]["affineMap"] = {{"projection", {{1, 0, 0}, {0, 1, 0}}},
                                              {"offset", {0, 0}}};
  auto issues = issues_of(testing::from_document(doc), op_dialect(), "operation-ipf-agreement");
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].message, "selection inputs.tensors[1] has no IPF");
  EXPECT_EQ(issues[1].summary, "IPF rank differs from the index rank");
}

TEST(OperationReductionConstraint, FiresWhenAnOutputMovesAlongAReductionDim) {
  auto a = testing::add_graph();
  nlohmann::json doc = testing::to_document(a.g);
  testing::node_labelled(doc, "add")["body"]["reductions"] = {{"d1", "max"}};
  auto issues = issues_of(testing::from_document(doc), op_dialect(), "operation-reduction");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message,
            "outputs.result[0] moves along \"d1\" (column 1 of its IPF is [0, 1]), but \"d1\" is a "
            "max reduction");
}

TEST(OperationOutputInjectiveConstraint, FiresOnAnUndeclaredReduction) {
  auto m = testing::linear_relu(0);
  nlohmann::json doc = testing::to_document(m.g);
  testing::node_labelled(doc, "linear")["body"].erase("reductions");
  auto issues = issues_of(testing::from_document(doc), op_dialect(), "operation-output-injective");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("does not move along index dim \"in\" (extent 4)"),
            std::string::npos);
}

// Output IPF (i + j): index points (0, 1) and (1, 0) write the same cell.
Graph diagonal_sum(zspace::Range index, std::int64_t extent) {
  Graph g;
  TensorId x = g.add_tensor({.dtype = DType::kInt32, .range = index}, {.label = "X"});
  TensorId y = g.add_tensor({.dtype = DType::kInt32, .range = zspace::Range::of_shape({extent})},
                            {.label = "Y"});
  OperationBody body{.kernel = "k"};
  body.inputs.append("x", {x, index});
  body.outputs.append("y", {y, zspace::Range::of_shape({extent})});
  OperationId op = g.add_operation(std::move(body));
  IpfSignature sig;
  sig.inputs.append("x", zspace::IndexProjection::identity(2));
  sig.outputs.append("y", testing::ipf({{1, 1}}, {0}, {1}));
  g.set_ipf_index(op, index);
  g.set_ipf_signature(op, std::move(sig));
  return g;
}

TEST(OperationOutputInjectiveConstraint, FindsOverlapsByBruteForceOnSmallIndexes) {
  auto issues =
      issues_of(diagonal_sum(zr("zr[0:3, 0:3]"), 5), op_dialect(), "operation-output-injective");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message,
            "outputs.y[0]: index points (0, 1) and (1, 0) write overlapping cells");
}

TEST(OperationOutputInjectiveConstraint, WarnsWhenItCannotDecide) {
  auto issues = issues_of(diagonal_sum(zr("zr[0:100, 0:100]"), 199), op_dialect(),
                          "operation-output-injective");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].severity, Severity::kWarning);
}

TEST(OperationOutputInjectiveConstraint, HugeIndexesDoNotOverflow) {
  auto issues = issues_of(diagonal_sum(zr("zr[0:4611686018427387904, 0:3]"), 4611686018427387906),
                          op_dialect(), "operation-output-injective");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].severity, Severity::kWarning);
}

TEST(OperationOutputInjectiveConstraint, AcceptsStridedWindowsThatDoNotOverlap) {
  // Stride 2 with windows of 2 cells: disjoint; stride 2 with windows of 3 would overlap.
  Graph g;
  TensorId x = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:8]")});
  TensorId y = g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[0:8]")});
  OperationBody body{.kernel = "k"};
  body.inputs.append("x", {x, zr("zr[0:8]")});
  body.outputs.append("y", {y, zr("zr[0:8]")});
  OperationId op = g.add_operation(std::move(body));
  IpfSignature sig;
  sig.inputs.append("x", testing::ipf({{2}}, {0}, {2}));
  sig.outputs.append("y", testing::ipf({{2}}, {0}, {2}));
  g.set_ipf_index(op, zr("zr[0:4]"));
  g.set_ipf_signature(op, std::move(sig));
  EXPECT_TRUE(issues_of(g, op_dialect(), "operation-output-injective").empty());
}

TEST(OperationConstraints, ValidGraphsHaveNoIssues) {
  for (const Graph& g : {testing::add_graph().g, testing::linear_relu(0).g}) {
    ValidationReport report = validate(g, op_dialect());
    EXPECT_TRUE(report.issues.empty()) << format_issues_text(report.issues);
    EXPECT_TRUE(report.skipped.empty());
  }
}

TEST(OperationConstraints, EveryConstraintHasAStableNameAndADescription) {
  std::vector<std::string_view> names;
  for (const auto& c : Dialect::application().constraints()) {
    EXPECT_FALSE(c->description().empty()) << c->name();
    names.push_back(c->name());
  }
  EXPECT_EQ(names.size(), 18u);
  EXPECT_EQ(Dialect::application().constraint("operation-acyclic")->name(), "operation-acyclic");
  EXPECT_EQ(Dialect::operation().constraint("application-ipf-agreement"), nullptr);
}

}  // namespace
}  // namespace tapestry::ir
