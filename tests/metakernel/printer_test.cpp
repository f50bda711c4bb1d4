// Printing graphs as .tap: .tap -> graph -> JSON -> graph -> .tap gives the same graph.
#include <gmock/gmock.h>

#include <filesystem>

#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "test_util.h"

namespace tapestry::metakernel {
namespace {

using namespace testing;  // NOLINT

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

TEST(Printer, NamesThatDoNotFollowTheRulesPrintFlat) {
  ir::Graph g = build_text("X: f32[4]\nY = relu(neg(X))\n");
  for (ir::OperationId op : g.operations()) {
    if (g.operation(op).label() == "Y/neg") g.set_label(op, "other");
  }
  EXPECT_EQ(print_tap(g, signatures()), "X: f32[4]\nother = neg(X)\nY = relu(other)\n");
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

}  // namespace
}  // namespace tapestry::metakernel
