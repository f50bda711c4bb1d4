// Printing graphs as .tap: build(print(g)) has the same operation graph as g, for every graph of
// the repository, and the pieces that make it so (quoted names, operation statements).
#include <gmock/gmock.h>

#include <filesystem>

#include "tapestry/ir/graph_compare.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "test_util.h"

namespace tapestry::metakernel {
namespace {

using namespace testing;  // NOLINT
using ::testing::Contains;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ir::Graph build_text(const std::string& text) {
  BuildResult r = build_tap(std::make_shared<const SourceFile>("t.tap", text), signatures());
  if (!r.ok()) throw Error(format_diagnostics(r.diagnostics));
  return std::move(*r.graph);
}

TEST(Printer, NestsStatementsLikeTheSource) {
  const std::string source = R"(X: f32[-40:60, 20:32]
W: f32[32, 12]
b: f32[32]
Y = relu(linear(X, W, b))
output Y
)";
  EXPECT_EQ(print_tap(build_text(source), signatures()), source);
}

TEST(Printer, SharedResultsAndDefaultsPrintAsStatements) {
  const ir::Graph g = build_text(R"(A: f32[2, 3]
S = sum(relu(A), dim=-1)
T = add(S, S)
P = conv2d(pad(reshape(A, shape=[1, 1, 2, 3]), padding=1), reshape(A, shape=[1, 1, 2, 3]), stride=1)
)");
  EXPECT_EQ(print_tap(g, signatures()), R"(A: f32[2, 3]
S = sum(relu(A), dim=1)
T = add(S, S)
P = conv2d(pad(reshape(A, shape=[1, 1, 2, 3]), padding=1), reshape(A, shape=[1, 1, 2, 3]))
)");
}

// A size default (mse's count = n·f) is left out while it equals its expression's value on the
// operation's inputs — the printed program then recomputes it when a shape is edited — and
// printed when it was given otherwise.
TEST(Printer, SizeDefaultsPrintOnlyWhenTheyDiffer) {
  const ir::Graph g = build_text(R"(P: f32[4, 3]
T: f32[4, 3]
L = mse(P, T)
M = mse(P, T, count=6)
)");
  EXPECT_EQ(print_tap(g, signatures()), R"(P: f32[4, 3]
T: f32[4, 3]
L = mse(P, T)
M = mse(P, T, count=6)
)");
  for (ir::OperationId op : g.operations()) {  // both record their count
    EXPECT_TRUE(g.operation(op).params().contains("count"));
  }
}

TEST(Printer, NamesThatDoNotFollowTheRulesPrintFlat) {
  ir::Graph g = build_text("X: f32[4]\nY = relu(neg(X))\n");
  for (ir::OperationId op : g.operations()) {
    if (g.operation(op).label() != "Y/neg") continue;
    g.set_label(op, "other");
    g.set_label(g.operation(op).outputs().list("result")[0].tensor, "other");
  }
  EXPECT_EQ(print_tap(g, signatures()), "X: f32[4]\nother = neg(X)\nY = relu(other)\n");
}

// An operation whose result is labelled apart from it cannot be a call: it prints verbatim, and
// its result is declared under its own label.
TEST(Printer, AResultLabelledApartPrintsVerbatim) {
  ir::Graph g = build_text("X: f32[4]\nY = relu(neg(X))\n");
  for (ir::OperationId op : g.operations()) {
    if (g.operation(op).label() == "Y/neg") g.set_label(op, "other");
  }
  const std::string printed = print_tap(g, signatures());
  EXPECT_THAT(printed,
              StartsWith("X: f32[4]\nY/neg: f32[4]\noperation {\n  \"label\": \"other\","));
  EXPECT_THAT(printed, EndsWith("}\nY = relu(Y/neg)\n"));
}

// .tap -> graph -> JSON -> graph -> .tap -> graph: the JSON of both graphs is identical.
TEST(Printer, ExamplesRoundTripThroughJson) {
  for (const auto& entry : std::filesystem::directory_iterator(TAPESTRY_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".tap") continue;
    BuildResult first = build_tap_file(entry.path(), signatures());
    ASSERT_TRUE(first.ok()) << format_diagnostics(first.diagnostics);
    const std::string json = ir::write_graph_json(*first.graph);
    const ir::Graph read = ir::read_graph_json_or_throw(json);
    const std::string printed = print_tap(read, signatures());
    BuildResult second =
        build_tap(std::make_shared<const SourceFile>("printed.tap", printed), signatures());
    ASSERT_TRUE(second.ok()) << printed << format_diagnostics(second.diagnostics);
    EXPECT_EQ(ir::write_graph_json(*second.graph), json) << entry.path() << "\n" << printed;
    EXPECT_EQ(print_tap(*second.graph, signatures()), printed);
  }
}

BuildResult build_printed(const std::string& text) {
  return build_tap(std::make_shared<const SourceFile>("printed.tap", text), signatures());
}

std::string build_error(const std::string& text) {
  BuildResult r = build_printed(text);
  return r.ok() ? "" : format_diagnostics(r.diagnostics);
}

// The graph of a repository file: a .tap that builds, or loom JSON that reads without errors;
// nullopt for the deliberately broken ones (syntax errors, duplicate ids, …).
std::optional<ir::Graph> repository_graph(const std::filesystem::path& path) {
  if (path.extension() == ".tap") {
    BuildResult r = build_tap_file(path, signatures());
    return r.ok() ? std::move(r.graph) : std::nullopt;
  }
  ir::ReadResult read = ir::read_graph_file(path);
  if (!read.graph || ir::has_errors(read.issues) || read.graph->size() == 0) return std::nullopt;
  if (!read.graph->topological_order().cycle.empty()) return std::nullopt;
  return std::move(read.graph);
}

// build(print(g)) == g for every graph in the repository: examples, test data (loom graphs of
// both dialects, Tapestry's compat graphs with kernels such as op:add), the fuzz corpora.
TEST(Printer, EveryGraphInTheRepositoryRoundTrips) {
  std::vector<std::string> checked;
  for (const char* dir : {"examples", "tests/data", "tests/fuzz/corpus"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(
             std::filesystem::path(TAPESTRY_SOURCE_DIR) / dir)) {
      const std::filesystem::path& path = entry.path();
      if (path.extension() != ".tap" && path.extension() != ".json") continue;
      std::optional<ir::Graph> g = repository_graph(path);
      if (!g) continue;
      const std::string printed = print_tap(*g, signatures());
      BuildResult rebuilt = build_printed(printed);
      ASSERT_TRUE(rebuilt.ok()) << path << "\n"
                                << printed << format_diagnostics(rebuilt.diagnostics);
      const ir::OperationGraphDifference d = ir::compare_operation_graphs(*g, *rebuilt.graph);
      EXPECT_TRUE(d.is_empty()) << path << "\n" << printed << d.to_string();
      EXPECT_EQ(print_tap(*rebuilt.graph, signatures()), printed) << path;
      checked.push_back(path.lexically_relative(TAPESTRY_SOURCE_DIR).string());
    }
  }
  EXPECT_GE(checked.size(), 25u);
  for (const char* must : {"tests/data/compat/application-dialect-example.json",
                           "tests/data/compat/operation-dialect-example.json",
                           "tests/data/compat/loom-minimal-example.json",
                           "tests/data/ir/linear_relu_4x.json", "examples/mlp.tap"}) {
    EXPECT_THAT(checked, Contains(std::string(must)));
  }
}

TEST(Printer, TheComparisonSeesEveryPart) {
  const ir::Graph g = build_text("X: f32[4]\nY = relu(X)\noutput Y\n");
  EXPECT_TRUE(
      ir::compare_operation_graphs(g, build_text("X: f32[4]\nY = relu(X)\noutput Y\n")).is_empty());
  for (const char* other :
       {"X: f32[4]\nZ = relu(X)\noutput Z\n", "X: f32[4]\nY = relu(X)\n",
        "X: f64[4]\nY = relu(X)\noutput Y\n", "X: f32[1:5]\nY = relu(X)\noutput Y\n",
        "X: f32[4]\nY = neg(X)\noutput Y\n"}) {
    EXPECT_FALSE(ir::compare_operation_graphs(g, build_text(other)).is_empty()) << other;
  }
}

TEST(Printer, NamespacedKernelsPrintAsOperationStatements) {
  const ir::Graph g = ir::read_graph_file(std::filesystem::path(TAPESTRY_SOURCE_DIR) /
                                          "tests/data/compat/application-dialect-example.json")
                          .graph.value();
  const std::string printed = print_tap(g, signatures());
  EXPECT_THAT(printed, HasSubstr("\"kernel\": \"op:add\""));
  EXPECT_THAT(printed, HasSubstr("\"label\": \"op:add\""));
  EXPECT_THAT(printed, StartsWith("t1: i32[200:210, 50:55]\nt0: i32[10, 5]\nz: i32[10, 5]\n"));
}

// An operation its kernel would derive differently (here: another IPF) prints verbatim.
TEST(Printer, OperationsTheKernelWouldNotRebuildPrintVerbatim) {
  ir::Graph g = build_text("X: f32[4]\nY = relu(X)\n");
  const ir::OperationId op = g.operations().front();
  ir::IpfSignature sig = *g.operation(op).ipf_signature();
  sig.inputs = ir::IpfMap();
  sig.inputs.append("x", ipf({{0}}, {0}, {1}));
  g.set_ipf_signature(op, sig);
  const std::string printed = print_tap(g, signatures());
  EXPECT_THAT(printed, HasSubstr("operation {"));
  BuildResult rebuilt = build_printed(printed);
  ASSERT_TRUE(rebuilt.ok()) << format_diagnostics(rebuilt.diagnostics);
  EXPECT_EQ(ir::compare_operation_graphs(g, *rebuilt.graph).to_string(), "");
}

// An operation with several outputs, each named <operation>.<port> as a call names them, prints
// as the call; its outputs keep their place among the graph's outputs (declared up front as an
// operation statement's, S.result would come before L and the text would not round-trip).
TEST(Printer, SeveralOutputsPrintAsACall) {
  const std::string source =
      "P: f32[3]\nG: f32[3]\nV: f32[3]\nL = sum(P, dim=0)\n"
      "S = sgd_momentum(P, G, V, lr=0.1, momentum=0.9)\nN = neg(S.velocity_next)\n"
      "output L, S.result, S.velocity_next, N\n";
  const ir::Graph g = build_text(source);
  const std::string printed = print_tap(g, signatures());
  EXPECT_EQ(printed, source);
  BuildResult rebuilt = build_printed(printed);
  ASSERT_TRUE(rebuilt.ok()) << format_diagnostics(rebuilt.diagnostics);
  EXPECT_EQ(ir::compare_operation_graphs(g, *rebuilt.graph).to_string(), "");
}

TEST(Printer, NamesThatAreNotIdentifiersAreStrings) {
  const std::string source =
      "\"in put\": f32[4]\n\"op:y\" = \"relu\"(\"in put\")\noutput \"op:y\"\n";
  const ir::Graph g = build_text(source);
  EXPECT_EQ(g.operation(g.operations().front()).label(), "op:y");
  EXPECT_EQ(print_tap(g, signatures()),
            "\"in put\": f32[4]\n\"op:y\" = relu(\"in put\")\noutput \"op:y\"\n");
}

TEST(Printer, ACycleIsAnError) {
  const ir::Graph g = ir::read_graph_file(std::filesystem::path(TAPESTRY_SOURCE_DIR) /
                                          "tests/data/ir/golden/cycle.operation.json")
                          .graph.value();
  EXPECT_THROW(print_tap(g, signatures()), Error);
}

// The operation statement rejects what a loom file may not say, at the statement's line.
TEST(OperationStatement, BadInputIsLocated) {
  const std::string decls = "X: f32[4]\nY: f32[4]\n";
  auto op = [&](const std::string& json) {
    return build_error(decls + "operation " + json + "\n");
  };
  const std::string ok =
      R"({"label": "o", "body": {"kernel": "k", "inputs": {"x": [{"tensorId": "X", "range": {"start": [0], "end": [4]}}]}, "outputs": {"y": [{"tensorId": "Y", "range": {"start": [0], "end": [4]}}]}}})";
  EXPECT_EQ(op(ok), "");
  EXPECT_THAT(
      op(R"({"body": {"kernel": "k", "inputs": {"x": [{"tensorId": "Q", "range": {"start": [0], "end": [4]}}]}, "outputs": {}}})"),
      HasSubstr("printed.tap:3:1: error: unknown variable 'Q'"));
  EXPECT_THAT(op(R"({"id": "x", "body": {}})"), HasSubstr("has no \"id\""));
  EXPECT_THAT(op(R"({"body": {"kernel": 3, "inputs": {}, "outputs": {}}})"),
              HasSubstr("printed.tap:3:1: error:"));
  EXPECT_THAT(op(R"({"colour": 1, "body": {}})"), HasSubstr("no field \"colour\""));
  EXPECT_THAT(op("{\"body\": {\n \"kernel\" \"k\"}}"),
              HasSubstr("printed.tap:4:13: error: invalid JSON"));
  EXPECT_THAT(build_error(decls + "operation {\"body\": {\n"),
              HasSubstr("printed.tap:3:11: error: unterminated '{'"));
  EXPECT_THAT(build_error("M: bool[4]\nY = relu(M)\n"),
              HasSubstr("dtype bool, which no kernel takes"));
  EXPECT_THAT(build_error("M: \"\"[4]\n"), HasSubstr("printed.tap:1:"));
}

}  // namespace
}  // namespace tapestry::metakernel
