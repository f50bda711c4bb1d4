// Invalid input: every malformed document gives located issues, never a crash (MLIR's
// invalid.mlir style: the bad input next to the issue it must produce).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "ir_testing.h"
#include "tapestry/ir/dialect.h"
#include "tapestry/ir/json_io.h"

namespace tapestry::ir {
namespace {

struct Case {
  const char* name;
  const char* text;
  const char* type;     // an issue of this type must be reported…
  const char* located;  // …whose message or first context's jsonpath contains this
  bool has_graph;       // whether the reader still returns a graph
};

// Reads, and when there is a graph validates it in the application dialect.
std::vector<Issue> all_issues(const std::string& text, bool* has_graph = nullptr) {
  ReadResult read = read_graph_json(text, "test.json");
  if (has_graph) *has_graph = read.graph.has_value();
  std::vector<Issue> issues = std::move(read.issues);
  if (read.graph) {
    for (Issue& i : validate(*read.graph, Dialect::application()).issues)
      issues.push_back(std::move(i));
  }
  return issues;
}

#define T(x) "{\"nodes\": [" x "]}"
#define TENSOR(id, body) "{\"id\": \"" id "\", \"type\": \"loom:Tensor\", \"body\": " body "}"

const Case kCases[] = {
    {"empty input", "", "json-syntax", "test.json:1:1", false},
    {"unclosed object", "{\"nodes\": [", "json-syntax", "1:12", false},
    {"syntax error on line 3", "{\n  \"nodes\": [\n    {,}\n  ]\n}", "json-syntax", "test.json:3:6",
     false},
    {"trailing comma", T("{\"id\": \"a\",}"), "json-syntax", "1:23", false},
    {"trailing text", "{\"nodes\": []} x", "json-syntax", "1:15", false},
    {"duplicate key", T("{\"id\": \"a\", \"id\": \"b\"}"), "json-syntax", "duplicate key", false},
    {"invalid UTF-8", "{\"nodes\": [], \"id\": \"\xff\"}", "json-syntax", "invalid UTF-8", false},
    {"bad escape", "{\"nodes\": [], \"id\": \"\\q\"}", "json-syntax", "invalid escape", false},
    {"not an object", "[1, 2]", "graph-structure", "expected a JSON object", false},
    {"nodes not an array", "{\"nodes\": {}}", "graph-structure", "must be an array", false},
    {"no nodes", "{\"id\": \"g\"}", "graph-structure", "no \"nodes\"", false},
    {"node not an object", T("3"), "graph-structure", "$.nodes[0]", true},
    {"node without id", T("{\"type\": \"loom:Note\", \"body\": {\"message\": \"m\"}}"),
     "graph-structure", "$.nodes[0]", true},
    {"id not a string", T("{\"id\": 7, \"type\": \"loom:Note\", \"body\": {}}"), "graph-structure",
     "$.nodes[0].id", true},
    {"empty id", T("{\"id\": \"\", \"type\": \"loom:Note\", \"body\": {\"message\": \"m\"}}"),
     "graph-structure", "$.nodes[0]", true},
    {"node without body", T("{\"id\": \"a\", \"type\": \"loom:Note\"}"), "graph-structure",
     "@.id=='a'", true},
    {"label not a string",
     T("{\"id\": \"a\", \"type\": \"loom:Note\", \"label\": 1, \"body\": {\"message\": \"m\"}}"),
     "graph-structure", "@.id=='a')].label", true},
    {"unknown node field",
     T("{\"id\": \"a\", \"type\": \"loom:Note\", \"extra\": 1, \"body\": {\"message\": \"m\"}}"),
     "graph-structure", "$.nodes[0].extra", true},
    {"duplicate id",
     T(TENSOR("a", "{\"dtype\": \"int32\", \"range\": {\"start\": [0], \"end\": [1]}}") ", " TENSOR(
         "a", "{\"dtype\": \"int32\", \"range\": {\"start\": [0], \"end\": [1]}}")),
     "duplicate-node-id", "$.nodes[1]", true},
    {"unknown node type", T("{\"id\": \"a\", \"type\": \"urn:x:Thing\", \"body\": {}}"),
     "node-type", "@.id=='a')].type", true},
    {"dtype not a string",
     T(TENSOR("a", "{\"dtype\": 3, \"range\": {\"start\": [0], \"end\": [1]}}")), "body-schema",
     "@.id=='a')].body.dtype", true},
    {"missing range", T(TENSOR("a", "{\"dtype\": \"int32\"}")), "body-schema",
     "missing required field \"range\"", true},
    {"huge number",
     T(TENSOR(
         "a",
         "{\"dtype\": \"int32\", \"range\": {\"start\": [0], \"end\": [99999999999999999999]}}")),
     "body-schema", "@.id=='a')].body.range.end[0]", true},
    {"huge negative number",
     T(TENSOR(
         "a",
         "{\"dtype\": \"int32\", \"range\": {\"start\": [-99999999999999999999], \"end\": [1]}}")),
     "body-schema", "body.range.start[0]", true},
    {"float overflow",
     T(TENSOR("a", "{\"dtype\": \"int32\", \"range\": {\"start\": [0], \"end\": [1e400]}}")),
     "body-schema", "body.range.end[0]", true},
    {"fractional coordinate",
     T(TENSOR("a", "{\"dtype\": \"int32\", \"range\": {\"start\": [0.5], \"end\": [1]}}")),
     "body-schema", "expected an int64 integer", true},
    {"start after end",
     T(TENSOR("a", "{\"dtype\": \"int32\", \"range\": {\"start\": [3], \"end\": [1]}}")),
     "body-schema", "is after end", true},
    {"rank mismatch in range",
     T(TENSOR("a", "{\"dtype\": \"int32\", \"range\": {\"start\": [0, 0], \"end\": [1]}}")),
     "body-schema", "start has rank 2 but end has rank 1", true},
    {"unknown monoid",
     T("{\"id\": \"o\", \"type\": \"loom:Operation\", \"body\": {\"kernel\": \"k\", "
       "\"reductions\": {\"d0\": \"avg\"}}}"),
     "body-schema", "body.reductions.d0", true},
    {"empty selection list",
     T("{\"id\": \"o\", \"type\": \"loom:Operation\", \"body\": {\"kernel\": \"k\", \"inputs\": "
       "{\"x\": []}}}"),
     "body-schema", "body.inputs.x", true},
    {"port name not an identifier",
     T("{\"id\": \"o\", \"type\": \"loom:Operation\", \"body\": {\"kernel\": \"k\", \"inputs\": "
       "{\"1x\": []}}}"),
     "body-schema", "not an identifier", true},
    {"malformed IPFIndex tag",
     T("{\"id\": \"o\", \"type\": \"loom:Operation\", \"body\": {\"kernel\": \"k\"}, \"tags\": "
       "{\"loom:IPFIndex\": {\"start\": [1]}}}"),
     "tag-schema", "missing required field \"end\"", true},
    {"unknown tag",
     T("{\"id\": \"o\", \"type\": \"loom:Operation\", \"body\": {\"kernel\": \"k\"}, \"tags\": "
       "{\"urn:t\": 1}}"),
     "tag-type", ".tags['urn:t']", true},
    {"tags not an object",
     T("{\"id\": \"o\", \"type\": \"loom:Operation\", \"body\": {\"kernel\": \"k\"}, \"tags\": "
       "[]}"),
     "graph-structure", "@.id=='o')].tags", true},
};

class InvalidInputTest : public ::testing::TestWithParam<Case> {};

TEST_P(InvalidInputTest, ReportsALocatedIssue) {
  const Case& c = GetParam();
  bool has_graph = false;
  std::vector<Issue> issues = all_issues(c.text, &has_graph);
  EXPECT_EQ(has_graph, c.has_graph);
  bool found = false;
  for (const Issue& i : issues) {
    if (i.type != c.type) continue;
    std::string where = i.message + " | " + (i.contexts.empty() ? "" : i.contexts[0].jsonpath);
    found = found || where.find(c.located) != std::string::npos;
  }
  EXPECT_TRUE(found) << "expected " << c.type << " mentioning \"" << c.located << "\", got:\n"
                     << format_issues_text(issues);
}

INSTANTIATE_TEST_SUITE_P(Cases, InvalidInputTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(InvalidInputTest, DeepNestingIsASyntaxErrorNotAStackOverflow) {
  std::string text =
      "{\"nodes\": [], \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  std::vector<Issue> issues = all_issues(text);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].type, "json-syntax");
  EXPECT_NE(issues[0].message.find("nesting deeper"), std::string::npos);
}

TEST(InvalidInputTest, AMalformedNodeDoesNotHideTheOthers) {
  std::string text =
      T(TENSOR("a", "{\"dtype\": 3, \"range\": {\"start\": [0], \"end\": [1]}}") ", " TENSOR(
          "b", "{\"dtype\": \"int32\", \"range\": {\"start\": [0], \"end\": [1]}}"));
  ReadResult r = read_graph_json(text);
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(r.graph->tensors().size(), 1u);
  EXPECT_EQ(r.graph->opaque_nodes().size(), 1u);
}

// Random damage to a real graph never crashes reading or validation.
RC_GTEST_PROP(InvalidInputProperty, MutatedGraphsNeverCrash, ()) {
  static const std::vector<std::string> bases = {
      testing::read_data("compat/application-dialect-example.json"),
      testing::read_data("ir/linear_relu_4x.json"),
      testing::read_data("ir/golden/bad_bodies.operation.json")};
  std::string text = *rc::gen::elementOf(bases);
  int edits = *rc::gen::inRange(1, 8);
  for (int i = 0; i < edits && !text.empty(); ++i) {
    auto at = static_cast<std::size_t>(*rc::gen::inRange<std::size_t>(0, text.size()));
    int op = *rc::gen::inRange(0, 3);
    char c = *rc::gen::elementOf(std::string("{}[],:\"0123456789-eE.a \\"));
    if (op == 0) text[at] = c;
    if (op == 1) text.erase(at, 1);
    if (op == 2) text.insert(at, 1, c);
  }
  ReadResult r = read_graph_json(text);
  if (r.graph) {
    validate(*r.graph, Dialect::application());
    validate(*r.graph, Dialect::operation());
    write_graph_json(*r.graph);
  } else {
    RC_ASSERT(!r.issues.empty());
  }
}

}  // namespace
}  // namespace tapestry::ir
