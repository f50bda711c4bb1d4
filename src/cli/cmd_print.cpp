// `tapestry print`: show a graph as .tap text.
//
//   tapestry print graph.json          a loom JSON graph
//   tapestry print examples/mlp.tap    a .tap file, built and printed back (normalised)
//
// Reading the printed text back with `tapestry build` gives the same operation graph when the
// graph came from .tap or the C++ builder (see include/tapestry/metakernel/printer.h).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/support/diagnostic.h"

namespace tapestry::cli {

namespace {

struct PrintOptions {
  std::string file;
  KernelSources kernel_sources;
};

int run_print(const PrintOptions& options) {
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  if (options.file.ends_with(".tap")) {
    metakernel::BuildResult built = metakernel::build_tap_file(options.file, signatures);
    if (!built.ok()) {
      fmt::print(stderr, "{}\n", support::format_diagnostics(built.diagnostics));
      return kExitBadInput;
    }
    fmt::print("{}", metakernel::print_tap(*built.graph, signatures));
    return kExitOk;
  }
  ir::ReadResult read = ir::read_graph_file(options.file);
  if (!read.graph || ir::has_errors(read.issues)) {
    fmt::print(stderr, "{}", ir::format_issues_text(read.issues));
    return kExitBadInput;
  }
  fmt::print("{}", metakernel::print_tap(*read.graph, signatures));
  return kExitOk;
}

}  // namespace

void register_print(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<PrintOptions>();
  CLI::App* cmd = app.add_subcommand("print", "Show a graph (loom JSON or .tap) as .tap text");
  cmd->add_option("file", options->file, "a loom JSON graph or a .tap file")->required();
  add_kernel_source_options(*cmd, options->kernel_sources);
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "print";
    dispatch.run = [options] { return run_print(*options); };
  });
}

}  // namespace tapestry::cli
