// `tapestry grad`: the reverse-mode gradient graph of a loss (metakernel/autodiff.h).
//
//   tapestry grad examples/mlp_loss.tap --loss L --wrt W1,b1,W2,b2 -o step.json
//   tapestry grad model.json --loss Y --wrt W --seed S
//
// GRAPH is anything `run` reads (.tap or loom JSON; an ONNX model after `tapestry import`). The
// result is an ordinary operation graph — the forward operations, then the backward ones — whose
// outputs are the graph's outputs, the loss and one gradient per --wrt tensor (`d<name>`, or
// --names). A --wrt tensor the loss does not read gets zeros and a warning; a kernel on the path
// without a VJP is an error naming the operation (exit 2).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/autodiff.h"
#include "tapestry/metakernel/tap_frontend.h"

namespace tapestry::cli {

namespace {

struct GradCmdOptions {
  std::string file;
  std::vector<std::string> dims;  // --dim NAME=N
  std::string output;
  std::string loss;
  std::vector<std::string> wrt;
  std::vector<std::string> names;
  std::string seed;
  KernelSources kernel_sources;
};

int run_grad(const GradCmdOptions& options) {
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  const ir::Graph graph = load_graph(options.file, signatures, false, options.dims);
  metakernel::GradRequest request{options.loss, options.wrt, std::nullopt, options.names};
  if (!options.seed.empty()) request.seed = options.seed;
  const metakernel::GradResult result = metakernel::grad(graph, request, signatures);
  if (!result.issues.empty()) fmt::print(stderr, "{}", ir::format_issues_text(result.issues));
  const ir::ValidationReport report = metakernel::validate_built_graph(result.graph);
  if (!report.is_valid()) {
    fmt::print(stderr, "{}", ir::format_issues_text(report.issues));
    return kExitFailed;
  }
  if (options.output.empty()) {
    fmt::print("{}", ir::write_graph_json(result.graph));
  } else {
    ir::write_graph_file(result.graph, options.output);
  }
  return kExitOk;
}

}  // namespace

void register_grad(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<GradCmdOptions>();
  CLI::App* cmd = app.add_subcommand(
      "grad", "Add the reverse-mode gradients of a loss to a graph (docs/training.md)");
  cmd->add_option("graph", options->file, "the forward graph: .tap or loom JSON")->required();
  cmd->add_option("--loss", options->loss, "the tensor to differentiate (rank 0 unless --seed)")
      ->required();
  cmd->add_option("--wrt", options->wrt, "the tensors to differentiate by, comma-separated")
      ->required()
      ->delimiter(',');
  cmd->add_option("--names", options->names,
                  "the gradients' names, comma-separated, one per --wrt (default d<name>)")
      ->delimiter(',');
  cmd->add_option("--seed", options->seed,
                  "a graph input of the loss's shape: its cotangent (for a non-scalar loss)");
  cmd->add_option("-o,--output", options->output,
                  "where to write the graph JSON (default: stdout)");
  add_kernel_source_options(*cmd, options->kernel_sources);
  add_dim_option(*cmd, options->dims);
  cmd->footer(exit_codes_footer("the gradient graph fails validation (a kernel-file bug)"));
  cmd->callback([&dispatch, options] {
    dispatch.name = "grad";
    dispatch.run = [options] { return run_grad(*options); };
  });
}

}  // namespace tapestry::cli
