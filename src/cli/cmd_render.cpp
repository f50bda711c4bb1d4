// `tapestry render`: draw a loom JSON graph with Graphviz (in-process; no `dot` binary needed).
//
//   tapestry render graph.json -o graph.png     (or .svg, .dot)
//   tapestry render graph.json -o ops.svg --operations-only --no-ipfs
//
// The format follows the output's extension. Exit code 2 when the input cannot be read as a
// graph or the output cannot be written; reading problems that leave a graph are printed to
// stderr and the graph is drawn anyway.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "tapestry/export/graphviz.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/support/error.h"

namespace tapestry::cli {

namespace {

struct RenderCommandOptions {
  std::string file;
  std::string output;
  bool no_ipfs = false;
  bool operations_only = false;
  int max_shards = 64;
};

int run_render(const RenderCommandOptions& options) {
  ir::ReadResult read = ir::read_graph_file(options.file);
  if (!read.issues.empty()) fmt::print(stderr, "{}", ir::format_issues_text(read.issues));
  if (!read.graph) return kExitBadInput;
  exporter::RenderOptions render{.show_ipfs = !options.no_ipfs,
                                 .show_applications = !options.operations_only,
                                 .max_shards_drawn = options.max_shards};
  exporter::render_file(*read.graph, options.output, render);
  return kExitOk;
}

}  // namespace

void register_render(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<RenderCommandOptions>();
  CLI::App* cmd = app.add_subcommand("render", "Draw a loom JSON graph as DOT, SVG or PNG");
  cmd->add_option("file", options->file, "loom JSON graph")->required();
  cmd->add_option("-o,--output", options->output, "output file: .dot, .svg or .png")->required();
  cmd->add_flag("--no-ipfs", options->no_ipfs, "leave the IPF matrices out of operation nodes");
  cmd->add_flag("--operations-only", options->operations_only,
                "draw the operation graph even when the graph has applications");
  cmd->add_option("--max-shards", options->max_shards,
                  "summarise an operation's shards as one node above this many (default 64)")
      ->check(CLI::PositiveNumber);
  cmd->callback([&dispatch, options] {
    dispatch.name = "render";
    dispatch.run = [options] { return run_render(*options); };
  });
}

}  // namespace tapestry::cli
