// Fuzz harness: loom JSON graph text → the IR reader, then validation in both dialects
// (operation and application).
//
// Reading never throws (issues are data), so any exception is a finding here — even Error. A
// graph that reads without issues must write back to JSON that reads to the same JSON.
#include <string>

#include "fuzz_support.h"
#include "tapestry/ir/dialect.h"
#include "tapestry/ir/issue.h"
#include "tapestry/ir/json_io.h"

using namespace tapestry;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ir::ReadResult result = ir::read_graph_json(fuzz::as_text(data, size), "fuzz.json");
  (void)ir::format_issues_text(result.issues);
  if (!result.has_graph()) return 0;
  for (const ir::Dialect* dialect : {&ir::Dialect::operation(), &ir::Dialect::application()}) {
    const ir::ValidationReport report = ir::validate(*result.graph, *dialect);
    (void)ir::format_issues_text(report.issues);
    (void)ir::format_issues_json(report.issues);
  }
  const std::string json = ir::write_graph_json(*result.graph);
  if (!result.issues.empty()) return 0;
  ir::ReadResult again = ir::read_graph_json(json, "written.json");
  FUZZ_CHECK(again.has_graph() && again.issues.empty());
  FUZZ_CHECK(ir::write_graph_json(*again.graph) == json);
  return 0;
}
