// Fuzz harness: `.tap` source → the metakernel front end (lexer, parser, builder, kernels).
//
// A program that builds must give a graph that validates, and the documented round trip must
// hold: graph → JSON → graph → print_tap → build gives a graph that prints the same. (Not the
// same JSON: the printer puts every declaration first, so a source that declares an input after
// some assignments gives the same graph with its nodes in another order.)
#include <memory>
#include <string>

#include "fuzz_support.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_frontend.h"

using namespace tapestry;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const metakernel::SignatureRegistry& signatures = metakernel::builtin_signatures();
  try {
    auto file = std::make_shared<const metakernel::SourceFile>(
        "fuzz.tap", std::string(fuzz::as_text(data, size)));
    metakernel::BuildResult first = metakernel::build_tap(file, signatures);
    if (!first.ok()) {
      (void)metakernel::format_diagnostics(first.diagnostics);  // quotes lines, draws carets
      return 0;
    }
    FUZZ_CHECK(metakernel::validate_built_graph(*first.graph).is_valid());
    const std::string json = ir::write_graph_json(*first.graph);
    const ir::Graph read = ir::read_graph_json_or_throw(json);
    const std::string printed = metakernel::print_tap(read, signatures);
    metakernel::BuildResult second = metakernel::build_tap(
        std::make_shared<const metakernel::SourceFile>("printed.tap", printed), signatures);
    FUZZ_CHECK(second.ok());
    FUZZ_CHECK(metakernel::print_tap(*second.graph, signatures) == printed);
  } catch (const Error&) {
    // Bad input, reported as it should be.
  }
  return 0;
}
