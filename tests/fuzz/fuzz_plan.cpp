// Fuzz harness: plan JSON → the rewrite plan parser; then the plan is checked against the
// running example's graph (check_plan) and round-trips through Plan::to_json.
#include <string>

#include "fuzz_support.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/plan.h"

using namespace tapestry;  // NOLINT

namespace {

// Y = relu(linear(X, W, b)) as an operation graph: the plans of examples/plans name its ops.
const ir::Graph& example_graph() {
  static const ir::Graph graph = [] {
    auto file = std::make_shared<const metakernel::SourceFile>(
        "linear_relu.tap",
        "X: f32[-40:60, 20:32]\nW: f32[32, 12]\nb: f32[32]\nY = relu(linear(X, W, b))\noutput Y\n");
    metakernel::ApplyOptions options;
    options.add_application = false;
    metakernel::BuildResult built =
        metakernel::build_tap(file, metakernel::builtin_signatures(), options);
    FUZZ_CHECK(built.ok());
    return std::move(*built.graph);
  }();
  return graph;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const ir::Graph& graph = example_graph();
  try {
    const rewrite::Plan plan = rewrite::parse_plan(fuzz::as_text(data, size), "fuzz.json");
    (void)rewrite::check_plan(plan, graph);
    FUZZ_CHECK(rewrite::parse_plan(plan.to_json().dump(), "again.json") == plan);
  } catch (const Error&) {
    // Bad input, reported as it should be.
  }
  return 0;
}
