// The application-dialect constraints: exact partitions, shard selections, output coverage.
#include <gtest/gtest.h>

#include "ir_testing.h"
#include "tapestry/ir/dialect.h"

namespace tapestry::ir {
namespace {

using testing::issues_of;
using testing::zr;

const Dialect& app_dialect() {
  return Dialect::application();
}

// add_graph's operation with the given index boxes as applications.
Graph add_sharded(const std::vector<zspace::Range>& boxes) {
  auto a = testing::add_graph();
  testing::shard(a.g, a.op, boxes);
  return std::move(a.g);
}

TEST(ApplicationIndexPartitionConstraint, AcceptsGridsAndIrregularPartitions) {
  EXPECT_TRUE(validate(add_sharded(zr("zr[0:10, 0:5]").split_grid(std::vector<std::int64_t>{3, 2})),
                       app_dialect())
                  .issues.empty());
  // A k-d split: not a grid, still an exact partition.
  Graph g = add_sharded(
      {zr("zr[0:4, 0:5]"), zr("zr[4:10, 0:2]"), zr("zr[4:7, 2:5]"), zr("zr[7:10, 2:5]")});
  ValidationReport report = validate(g, app_dialect());
  EXPECT_TRUE(report.issues.empty()) << format_issues_text(report.issues);
}

TEST(ApplicationIndexPartitionConstraint, CatchesAnOverlapHiddenByAnEqualGap) {
  // Sizes add up (25 + 25 = 50 = 10·5), which fooled the Java check; rows 3–4 are covered twice,
  // rows 8–9 not at all.
  Graph g = add_sharded({zr("zr[0:5, 0:5]"), zr("zr[3:8, 0:5]")});
  auto issues = issues_of(g, app_dialect(), "application-index-partition");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message, "index point (3, 0) of add is covered by 2 applications");
  EXPECT_EQ(issues[0].contexts.size(), 3u);  // the operation and both applications
}

TEST(ApplicationIndexPartitionConstraint, ReportsGapsAndBoxesOutside) {
  auto gap = issues_of(add_sharded({zr("zr[0:5, 0:5]"), zr("zr[6:10, 0:5]")}), app_dialect(),
                       "application-index-partition");
  ASSERT_EQ(gap.size(), 1u);
  EXPECT_EQ(gap[0].message, "index point (5, 0) of add is not covered by any application");

  auto a = testing::add_graph();
  ApplicationBody body{.operation = a.op};
  ApplicationId app = a.g.add_application(std::move(body));
  a.g.set_ipf_index(app, zr("zr[0:11, 0:5]"));
  auto outside = issues_of(a.g, app_dialect(), "application-index-partition");
  ASSERT_EQ(outside.size(), 1u);
  EXPECT_NE(outside[0].message.find("outside add's index"), std::string::npos);
}

TEST(ApplicationIndexPartitionConstraint, ReportsOperationsWithoutApplications) {
  auto m = testing::linear_relu(0);
  testing::shard(m.g, m.relu, {zr("zr[0:8, 0:6]")});
  auto issues = issues_of(m.g, app_dialect(), "application-index-partition");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].summary, "Operation has no applications");
}

TEST(ApplicationIpfAgreementConstraint, FiresWhenAShardSelectionIsNotIpfOfItsBox) {
  auto m = testing::linear_relu(4);
  nlohmann::json doc = testing::to_document(m.g);
  testing::application_of(doc, "linear", 1)["body"]["inputs"]["x"][0]["range"]["end"] = {4, 3};
  auto issues = issues_of(testing::from_document(doc), app_dialect(), "application-ipf-agreement");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message,
            "inputs.x[0]: the IPF maps the sub-box zr[2:4, 0:6, 0:4] to zr[2:4, 0:4], but the "
            "selection is zr[2:4, 0:3]");
}

TEST(ApplicationIpfAgreementConstraint, FiresOnOtherTensorsAndMissingPorts) {
  auto m = testing::linear_relu(2);
  nlohmann::json doc = testing::to_document(m.g);
  auto& app = testing::application_of(doc, "linear", 0)["body"];
  app["inputs"]["x"][0]["tensorId"] = testing::node_labelled(doc, "Z")["id"];
  app["inputs"].erase("bias");
  auto issues = issues_of(testing::from_document(doc), app_dialect(), "application-ipf-agreement");
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].message, "operation selection inputs.bias[0] has no application selection");
  EXPECT_EQ(issues[1].summary, "Application selects a different tensor than its operation");
}

TEST(ApplicationOutputCoverageConstraint, FiresWhenAReductionIsSplitAcrossShards) {
  // Splitting `in` gives two shards that each write the whole of Z: an exact partition of the
  // index, but every output cell is written twice.
  auto m = testing::linear_relu(0);
  testing::shard(m.g, m.linear, zr("zr[0:8, 0:6, 0:4]").split_even(2, 2));
  testing::shard(m.g, m.relu, {zr("zr[0:8, 0:6]")});
  ValidationReport report = validate(m.g, app_dialect());
  EXPECT_EQ(testing::types_of(report.issues),
            std::vector<std::string>{"application-output-coverage"});
  EXPECT_EQ(report.issues[0].message,
            "cell (0, 0) of outputs.result[0] (tensor Z) is written by 2 applications");
}

TEST(ApplicationOutputCoverageConstraint, FiresWhenAnOutputIsNotWritten) {
  auto m = testing::linear_relu(2);
  nlohmann::json doc = testing::to_document(m.g);
  testing::application_of(doc, "relu", 1)["body"].erase("outputs");
  auto issues =
      issues_of(testing::from_document(doc), app_dialect(), "application-output-coverage");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].message,
            "cell (4, 0) of outputs.result[0] (tensor Y) is not written by any application");
}

TEST(ApplicationConstraints, TheFourShardLinearReluGraphIsValid) {
  auto m = testing::linear_relu(4);
  ValidationReport report = validate(m.g, app_dialect());
  EXPECT_TRUE(report.issues.empty()) << format_issues_text(report.issues);
}

TEST(ApplicationConstraints, ApplicationsOfAnOpaqueOperationCannotBeChecked) {
  std::string text = testing::read_data("compat/application-dialect-example.json");
  nlohmann::json doc = nlohmann::json::parse(text);
  testing::node_labelled(doc, "op:add")["tags"].erase(testing::ipf_signature_tag());
  testing::node_labelled(doc, "op:add")["tags"].erase(testing::ipf_index_tag());
  Graph g = testing::from_document(doc);
  auto issues = issues_of(g, app_dialect(), "application-ipf-agreement");
  EXPECT_EQ(issues.size(), 2u);
}

}  // namespace
}  // namespace tapestry::ir
