// Fuzz harness: `.tap` source → the metakernel front end (lexer, parser, builder, kernels).
//
// A program of calls that builds must give a graph that validates (operation statements and
// tensors of dtypes no kernel takes may say what a loom file may, invalid graphs included), and
// the documented round trip must hold: graph → JSON → graph → print_tap → build gives the same
// operation graph (ir/graph_compare.h), which prints the same. (Not the same JSON: the printer
// puts declarations first, so a source that declares an input after some assignments gives the
// same graph with its nodes in another order.)
#include <memory>
#include <string>

#include "fuzz_support.h"
#include "tapestry/ir/graph_compare.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/metakernel/tap_parser.h"

using namespace tapestry;  // NOLINT

namespace {

// True when the program has no operation statement and declares only dtypes kernels take.
bool only_calls(const metakernel::SourceFile& file) {
  const metakernel::tap::ParseResult parsed =
      metakernel::tap::parse_program(std::make_shared<const metakernel::SourceFile>(file));
  for (const metakernel::tap::Statement& s : parsed.program.statements) {
    if (std::holds_alternative<metakernel::tap::OperationStmt>(s)) return false;
    if (const auto* decl = std::get_if<metakernel::tap::Decl>(&s);
        decl && !(decl->dtype == ir::LoomDType(decl->type.dtype)))
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const metakernel::SignatureRegistry& signatures = metakernel::builtin_signatures();
  try {
    auto file = std::make_shared<const metakernel::SourceFile>(
        "fuzz.tap", std::string(fuzz::as_text(data, size)));
    metakernel::BuildResult first = metakernel::build_tap(file, signatures);
    if (!first.ok()) {
      (void)support::format_diagnostics(first.diagnostics);  // quotes lines, draws carets
      return 0;
    }
    if (only_calls(*file)) FUZZ_CHECK(metakernel::validate_built_graph(*first.graph).is_valid());
    const std::string json = ir::write_graph_json(*first.graph);
    const ir::Graph read = ir::read_graph_json_or_throw(json);
    const std::string printed = metakernel::print_tap(read, signatures);
    metakernel::BuildResult second = metakernel::build_tap(
        std::make_shared<const metakernel::SourceFile>("printed.tap", printed), signatures);
    FUZZ_CHECK(second.ok());
    FUZZ_CHECK(ir::compare_operation_graphs(read, *second.graph).is_empty());
    FUZZ_CHECK(metakernel::print_tap(*second.graph, signatures) == printed);
  } catch (const Error&) {
    // Bad input, reported as it should be.
  }
  return 0;
}
