// The one located diagnostic type (support/diagnostic.h): each Location shape, caret quoting, a
// list of diagnostics as one Error.
#include "tapestry/support/diagnostic.h"

#include <gtest/gtest.h>

#include <memory>

namespace tapestry::support {
namespace {

TEST(Location, EachShapeFormatsItsPlace) {
  EXPECT_EQ(format_location({}), "");
  EXPECT_EQ(format_location({.file = "f.tap", .pos = {3, 7}}), "f.tap:3:7");
  EXPECT_EQ(format_location({.file = "f.tap", .pos = {3, 0}}), "f.tap:3");
  EXPECT_EQ(format_location({.pos = {3, 7}}), "<input>:3:7");
  EXPECT_EQ(format_location({.file = "plan.json", .pointer = "/ops/Y~1linear"}),
            "plan.json: /ops/Y~1linear");
  EXPECT_EQ(format_location({.pointer = "/outputs/Q"}), "/outputs/Q");
  EXPECT_EQ(format_location({.node = "H/linear"}), "node 'H/linear'");
  EXPECT_EQ(format_location({.file = "m.onnx", .node = "H/linear"}), "m.onnx: node 'H/linear'");
  EXPECT_EQ(format_location({.file = "m.onnx", .node = "pool", .node_note = "MaxPool, node 0"}),
            "m.onnx: node 'pool' (MaxPool, node 0)");
  EXPECT_EQ(format_location({.file = "f.tap"}), "f.tap");
}

TEST(Diagnostic, EachShapeFormatsAsTheReadersPrintIt) {
  EXPECT_EQ(format_diagnostic({.message = "no place"}), "no place");  // an unreadable file
  EXPECT_EQ(format_diagnostic(Diagnostic::in_file("w.npy", "truncated header")),
            "w.npy: truncated header");
  Diagnostic json{.message = "duplicate key \"a\""};
  json.where = {.file = "t.json", .pos = {2, 2}};
  EXPECT_EQ(format_diagnostic(json), "t.json:2:2: duplicate key \"a\"");
  Diagnostic pointer = Diagnostic::at_pointer("/ops/Y/split/out", "no dimension 'out'");
  EXPECT_EQ(format_diagnostic(pointer), "/ops/Y/split/out: no dimension 'out'");
  pointer.where.file = "plan.json";
  EXPECT_EQ(format_diagnostic(pointer), "plan.json: /ops/Y/split/out: no dimension 'out'");
  EXPECT_EQ(format_diagnostic(Diagnostic::at_pointer("", "expected an object", "t.json")),
            "t.json: /: expected an object");
  Diagnostic node{.message = "unsupported", .where = {.node = "H/linear"}};
  EXPECT_EQ(format_diagnostic(node), "node 'H/linear': unsupported");
  node.severity = Severity::kWarning;
  EXPECT_EQ(format_diagnostic(node), "node 'H/linear': warning: unsupported");
}

TEST(Diagnostic, QuotesTheSourceLineWithACaretThatLinesUpUnderTabs) {
  auto file = std::make_shared<const SourceFile>("f.tap", "a\n\tY = relu(Q)\n");
  EXPECT_EQ(format_diagnostic(Diagnostic::at_source(file, {2, 11}, "unknown variable 'Q'")),
            "f.tap:2:11: error: unknown variable 'Q'\n  \tY = relu(Q)\n  \t         ^");
  Diagnostic warning = Diagnostic::at_source(file, {1, 1}, "unused");
  warning.severity = Severity::kWarning;
  EXPECT_EQ(format_diagnostic(warning), "f.tap:1:1: warning: unused\n  a\n  ^");
  // A line without a column: the line, no caret; the file without a position: no quote.
  EXPECT_EQ(format_diagnostic(Diagnostic::at_source(file, {2, 0}, "m")),
            "f.tap:2: error: m\n  \tY = relu(Q)");
  EXPECT_EQ(format_diagnostic(Diagnostic::at_source(file, {}, "m")), "f.tap: error: m");
  // No file: "<input>", nothing to quote.
  EXPECT_EQ(format_diagnostic(Diagnostic::at_source(nullptr, {1, 2}, "m")), "<input>:1:2: m");
  // Bytes a terminal would act on are shown as '?'.
  auto garbage = std::make_shared<const SourceFile>("g.tap", std::string("a\x1b[2Jb"));
  EXPECT_EQ(format_diagnostic(Diagnostic::at_source(garbage, {1, 2}, "m")),
            "g.tap:1:2: error: m\n  a?[2Jb\n   ^");
}

TEST(Diagnostic, SourcePositionCountsLinesAndBytes) {
  EXPECT_EQ(source_position("ab\ncd", 0), (SourcePos{1, 1}));
  EXPECT_EQ(source_position("ab\ncd", 4), (SourcePos{2, 2}));
  EXPECT_EQ(source_position("ab\ncd", 99), (SourcePos{2, 3}));
}

TEST(DiagnosticError, CarriesEveryDiagnosticAndPrintsThemAsOneError) {
  const std::vector<Diagnostic> problems = {
      Diagnostic::at_pointer("/ops/Y/split/out", "operation 'Y' has no index dimension 'out'"),
      Diagnostic::at_pointer("/outputs/Q", "no graph output named 'Q' (outputs: Y)")};
  try {
    throw DiagnosticError(problems);
  } catch (const Error& e) {  // every existing catch (const Error&) still sees it
    EXPECT_STREQ(e.what(),
                 "/ops/Y/split/out: operation 'Y' has no index dimension 'out'\n"
                 "/outputs/Q: no graph output named 'Q' (outputs: Y)");
    const auto* located = dynamic_cast<const DiagnosticError*>(&e);
    ASSERT_NE(located, nullptr);
    EXPECT_EQ(located->diagnostics(), problems);
  }
  // Under a heading that names the file, each diagnostic leaves its file out.
  std::vector<Diagnostic> in_plan = problems;
  for (Diagnostic& d : in_plan) d.where.file = "plan.json";
  const DiagnosticError headed("plan.json: the plan does not fit the graph", in_plan);
  EXPECT_STREQ(headed.what(),
               "plan.json: the plan does not fit the graph:\n"
               "  /ops/Y/split/out: operation 'Y' has no index dimension 'out'\n"
               "  /outputs/Q: no graph output named 'Q' (outputs: Y)");
  EXPECT_EQ(headed.diagnostics()[1].where.file, "plan.json");
  EXPECT_EQ(headed.heading(), "plan.json: the plan does not fit the graph");
  // A quoted diagnostic under a heading keeps its place, and its quote stays indented under it.
  auto file = std::make_shared<const SourceFile>("f.tap", "Y = relu(Q)\n");
  EXPECT_STREQ(
      DiagnosticError("2 problems", {Diagnostic::at_source(file, {1, 10}, "unknown 'Q'")}).what(),
      "2 problems:\n  f.tap:1:10: error: unknown 'Q'\n    Y = relu(Q)\n             ^");
  EXPECT_THROW(throw_diagnostics(problems), DiagnosticError);
  EXPECT_NO_THROW(throw_diagnostics({}));
}

}  // namespace
}  // namespace tapestry::support
