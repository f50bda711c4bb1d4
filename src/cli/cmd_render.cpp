// `tapestry render`: draw a loom JSON graph with Graphviz (in-process; no `dot` binary needed).
//
//   tapestry render graph.json -o graph.png     (or .svg, .dot)
//   tapestry render graph.json -o ops.svg --operations-only --no-ipfs
//   tapestry render vit.tap -o vit.svg                 (a summary above 40 operations: --detail)
//   tapestry render examples/mlp.tap --plan examples/plans/mlp-megatron.json --target h100x8 -o
//   p.svg
//
// With --target (and optionally --plan / --split), the graph (.tap or JSON) is lowered under the
// plan and placed on the target, and every shard is coloured by the device it runs on.
//
// The format follows the output's extension. Exit code 2 when the input cannot be read as a
// graph or the output cannot be written; reading problems that leave a graph are printed to
// stderr and the graph is drawn anyway.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "priced_plan.h"
#include "tapestry/cost/placement.h"
#include "tapestry/export/graphviz.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/support/error.h"

namespace tapestry::cli {

namespace {

struct RenderCommandOptions {
  std::string file;
  std::vector<std::string> dims;  // --dim NAME=N
  std::string plan;
  std::vector<std::string> splits;
  std::string target;
  std::string output;
  bool no_ipfs = false;
  bool operations_only = false;
  int max_shards = 64;
  std::string detail = "auto";
  KernelSources kernel_sources;
};

exporter::Detail detail_of(const std::string& text) {
  if (text == "full") return exporter::Detail::kFull;
  if (text == "summary") return exporter::Detail::kSummary;
  return exporter::Detail::kAuto;
}

// Lowers and places the graph, then draws the shards in their devices' colours.
int run_render_placed(const RenderCommandOptions& options) {
  const PricedPlan priced = price_plan({.graph = options.file,
                                        .plan = options.plan,
                                        .splits = options.splits,
                                        .target = options.target,
                                        .kernel_sources = options.kernel_sources,
                                        .trust_ipfs = false});
  exporter::RenderOptions render{.show_ipfs = !options.no_ipfs,
                                 .show_applications = true,
                                 .max_shards_drawn = options.max_shards,
                                 .device_of = {},
                                 .detail = detail_of(options.detail)};
  for (const cost::PlacedApplication& a : priced.placement.applications) {
    render.device_of.emplace(a.id.index(), priced.target.devices[a.device].name);
  }
  exporter::render_file(priced.lowered.graph, options.output, render);
  return kExitOk;
}

int run_render(const RenderCommandOptions& options) {
  if (!options.target.empty()) return run_render_placed(options);
  if (!options.plan.empty() || !options.splits.empty()) {
    throw Error("--plan and --split need --target (render draws a placed plan)");
  }
  ir::ReadResult read =
      read_graph_input(options.file, load_signatures(options.kernel_sources), options.dims);
  if (!read.issues.empty()) fmt::print(stderr, "{}", ir::format_issues_text(read.issues));
  if (!read.graph) return kExitBadInput;
  exporter::RenderOptions render{.show_ipfs = !options.no_ipfs,
                                 .show_applications = !options.operations_only,
                                 .max_shards_drawn = options.max_shards,
                                 .device_of = {},
                                 .detail = detail_of(options.detail)};
  exporter::render_file(*read.graph, options.output, render);
  return kExitOk;
}

}  // namespace

void register_render(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<RenderCommandOptions>();
  CLI::App* cmd =
      app.add_subcommand("render", "Draw a graph (loom JSON or .tap) as DOT, SVG or PNG");
  cmd->add_option("file", options->file, "the graph: loom JSON or a .tap program")->required();
  cmd->add_option("--target", options->target,
                  "lower under the plan, place on this target (preset or file) and colour every "
                  "shard by its device");
  cmd->add_option("--plan", options->plan, "with --target: a plan file");
  cmd->add_option("--split", options->splits, "with --target: one split OP.DIM=N (repeatable)");
  cmd->add_option("-o,--output", options->output, "output file: .dot, .svg or .png")->required();
  cmd->add_flag("--no-ipfs", options->no_ipfs, "leave the IPF matrices out of operation nodes");
  cmd->add_flag("--operations-only", options->operations_only,
                "draw the operation graph even when the graph has applications");
  cmd->add_option("--max-shards", options->max_shards,
                  "summarise an operation's shards as one node above this many (default 64)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--detail", options->detail,
                  "full: every operation; summary: operations grouped by the path of their names, "
                  "repeated groups (a model's layers) drawn once; auto (default): the summary "
                  "above 40 operations")
      ->check(CLI::IsMember({"auto", "full", "summary"}));
  add_kernel_source_options(*cmd, options->kernel_sources);
  add_dim_option(*cmd, options->dims);
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "render";
    dispatch.run = [options] { return run_render(*options); };
  });
}

}  // namespace tapestry::cli
