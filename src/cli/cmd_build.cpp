// `tapestry build`: compile a .tap file into a validated loom JSON operation graph.
//
//   tapestry build examples/mlp.tap -o mlp.json
//   tapestry build model.tap --kernel-dir my_kernels/ --operation-only
//
// Syntax and kernel errors print as `file:line:col: error: …` with the source line and a caret
// (exit 2); a graph that fails validation prints its issues (exit 1); otherwise the JSON is
// written atomically to -o (or stdout). With --operation-only no Application nodes are added.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/support/diagnostic.h"

namespace tapestry::cli {

namespace {

struct BuildOptions {
  std::string file;
  std::string output;
  KernelSources kernel_sources;
  bool operation_only = false;
};

int run_build(const BuildOptions& options) {
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  metakernel::BuildResult built = metakernel::build_tap_file(
      options.file, signatures, {.add_application = !options.operation_only});
  if (!built.ok()) {
    fmt::print(stderr, "{}\n", support::format_diagnostics(built.diagnostics));
    return kExitBadInput;
  }
  const ir::ValidationReport report = metakernel::validate_built_graph(*built.graph);
  if (!report.is_valid()) {
    fmt::print(stderr, "{}", ir::format_issues_text(report.issues));
    return kExitFailed;
  }
  if (options.output.empty()) {
    fmt::print("{}", ir::write_graph_json(*built.graph));
  } else {
    ir::write_graph_file(*built.graph, options.output);
  }
  return kExitOk;
}

}  // namespace

void register_build(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<BuildOptions>();
  CLI::App* cmd =
      app.add_subcommand("build", "Compile a .tap file into a validated loom JSON graph");
  cmd->add_option("file", options->file, ".tap source file")->required();
  cmd->add_option("-o,--output", options->output,
                  "where to write the graph JSON (default: stdout)");
  add_kernel_source_options(*cmd, options->kernel_sources);
  cmd->add_flag("--operation-only", options->operation_only,
                "no whole-index Application per operation (an operation-dialect graph)");
  cmd->footer(exit_codes_footer("the built graph fails validation (a kernel-file bug)"));
  cmd->callback([&dispatch, options] {
    dispatch.name = "build";
    dispatch.run = [options] { return run_build(*options); };
  });
}

}  // namespace tapestry::cli
