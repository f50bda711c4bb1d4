// Issues as JSON and as text.
#include "tapestry/ir/issue.h"

#include <gtest/gtest.h>

#include "ir_testing.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/support/error.h"

namespace tapestry::ir {
namespace {

Issue sample() {
  Issue i{.type = "application-index-partition",
          .summary = "Application index boxes do not partition the operation index",
          .message = "index point (5, 0) of add is covered by 2 applications"};
  i.params = {{"count", 2}, {"point", {5, 0}}};
  i.contexts.push_back({.name = "Operation",
                        .message = "add",
                        .jsonpath = "$.nodes[?(@.id=='op')]",
                        .data = {{"kernel", "add"}}});
  return i;
}

TEST(IssueTest, JsonRoundTrip) {
  Issue i = sample();
  nlohmann::json j = to_json(i);
  EXPECT_EQ(j["type"], "application-index-partition");
  EXPECT_EQ(j["severity"], "error");
  EXPECT_EQ(j["contexts"][0]["jsonpath"], "$.nodes[?(@.id=='op')]");
  EXPECT_EQ(issue_from_json(j), i);
  Issue w{.type = "x", .severity = Severity::kWarning, .summary = "s"};
  EXPECT_EQ(issue_from_json(to_json(w)), w);
  EXPECT_FALSE(to_json(w).contains("message"));
  EXPECT_FALSE(to_json(w).contains("params"));
}

TEST(IssueTest, TextFormIsAHeaderThenIndentedDetails) {
  EXPECT_EQ(format_issue_text(sample()),
            "error[application-index-partition]: Application index boxes do not partition the "
            "operation index\n"
            "  index point (5, 0) of add is covered by 2 applications\n"
            "  params:\n"
            "    count: 2\n"
            "    point: [5, 0]\n"
            "  - Operation: add\n"
            "    jsonpath: $.nodes[?(@.id=='op')]\n"
            "    data: {\n"
            "      \"kernel\": \"add\"\n"
            "    }\n");
}

TEST(IssueTest, SummaryLine) {
  std::vector<Issue> none;
  EXPECT_EQ(format_issues_text(none), "valid: no issues\n");
  std::vector<Issue> two{sample(),
                         Issue{.type = "w", .severity = Severity::kWarning, .summary = "s"}};
  std::string text = format_issues_text(two);
  EXPECT_NE(text.find("invalid: 1 error, 1 warning\n"), std::string::npos);
  EXPECT_TRUE(has_errors(two));
  EXPECT_EQ(count_type(two, "w"), 1u);
  nlohmann::json j = issues_to_json(two);
  EXPECT_EQ(j["valid"], false);
  EXPECT_EQ(j["errors"], 1);
}

TEST(IssueTest, JsonTextKeepsTheDocumentedFieldOrder) {
  std::vector<Issue> one{sample()};
  std::string text = format_issues_json(one);
  EXPECT_LT(text.find("\"type\""), text.find("\"summary\""));
  EXPECT_LT(text.find("\"summary\""), text.find("\"contexts\""));
  EXPECT_NE(text.find("\"point\": [5, 0]"), std::string::npos) << text;
  EXPECT_EQ(nlohmann::json::parse(text), issues_to_json(one));
}

// A reader's file position is typed (IssueContext::where) and written as loom's text, which
// reads back as the position; the issue is also one located Diagnostic.
TEST(IssueTest, AReadersPositionIsTypedAndWrittenAsLoomsText) {
  const ReadResult r = read_graph_json("{\n  \"nodes\": [\n    {,}\n  ]\n}", "g.json");
  ASSERT_EQ(r.issues.size(), 1u);
  const Issue& syntax = r.issues[0];
  ASSERT_EQ(syntax.type, "json-syntax");
  const IssueContext& file = syntax.contexts.at(0);
  EXPECT_EQ(file.where.file, "g.json");
  EXPECT_EQ(file.where.pos, (support::SourcePos{3, 6}));
  EXPECT_EQ(to_json(syntax)["contexts"][0]["jsonpath"], "line 3, column 6");
  EXPECT_EQ(issue_from_json(to_json(syntax)).contexts[0].where.pos, file.where.pos);
  const support::Diagnostic d = to_diagnostic(syntax);
  EXPECT_EQ(d.code, "json-syntax");
  EXPECT_EQ(d.severity, support::Severity::kError);
  EXPECT_EQ(d.where, file.where);
}

TEST(IssueTest, AConstraintsContextNamesItsNode) {
  Issue i = sample();
  i.contexts[0].where.node = "add";
  const support::Diagnostic d = to_diagnostic(i);
  EXPECT_EQ(support::format_diagnostic(d),
            "node 'add': index point (5, 0) of add is covered by 2 applications");
  EXPECT_EQ(to_json(i), to_json(sample()));  // the schema has no field for it
}

TEST(IssueTest, MalformedIssueJsonIsAnError) {
  EXPECT_THROW(issue_from_json(nlohmann::json::array()), Error);
  EXPECT_THROW(issue_from_json({{"type", "t"}}), Error);
}

}  // namespace
}  // namespace tapestry::ir
