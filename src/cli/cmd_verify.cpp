// `tapestry verify`: check outputs produced anywhere against the naive evaluation of a graph.
//
//   tapestry run examples/mlp.tap --plan examples/plans/mlp-best.json --inputs in/ --outputs out/
//   tapestry verify examples/mlp.tap --inputs in/ --outputs out/
//   tapestry verify examples/mlp.tap --inputs in/ --outputs out/ --format json
//
// Outputs from another run, another machine, PyTorch or the MPI executor are read from
// DIR/<output>.npy (every declared output must be there), inputs from DIR/<input>.npy; the
// verdict is the one `run --verify` gives (runtime/verify.h): each cell within its own bar of
// the float64 oracle, `--bitwise` to demand bitwise equality with the naive run, `--exact` the
// exact value (inputs in {-1, 0, 1}). `--plan` is checked against the graph (it must lower) and
// named in the report; the bar does not depend on it. Exit 0 PASS, 1 FAIL or UNCHECKED (cells
// whose error the oracle cannot bound; `--allow-unchecked` makes that a PASS with a warning),
// 2 unreadable input.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/runtime/verify.h"
#include "tapestry/support/error.h"
#include "tensor_files.h"

namespace tapestry::cli {

namespace {

struct VerifyOptions {
  std::string graph;
  std::vector<std::string> dims;  // --dim NAME=N
  std::string inputs;
  std::string outputs;
  std::string plan;
  KernelSources kernel_sources;
  bool bitwise = false;
  bool exact = false;
  bool allow_unchecked = false;
  std::string format = "text";
  int threads = 0;    // the naive run's and the oracle's (0: one per hardware thread)
  bool tf32 = false;  // the outputs came from a run on TF32 tensor cores
};

int run_verify(const VerifyOptions& options) {
  if (options.format != "text" && options.format != "json")
    throw Error(fmt::format("--format {}: expected text or json", options.format));
  if (options.bitwise && options.exact) throw Error("--bitwise and --exact exclude each other");
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  const ir::Graph graph = load_graph(options.graph, signatures, false, options.dims);
  if (!options.plan.empty()) {
    const rewrite::Plan plan = load_plan(graph, options.plan, {});
    (void)rewrite::lower(graph, plan, {.driver = {}, .validate = true, .signatures = &signatures});
  }
  const runtime::BufferMap inputs =
      read_tensor_files(graph, options.inputs, runtime::graph_inputs(graph), "input");
  const runtime::BufferMap results =
      read_tensor_files(graph, options.outputs, runtime::graph_outputs(graph), "output");
  const runtime::VerifyMode mode = options.exact     ? runtime::VerifyMode::kExact
                                   : options.bitwise ? runtime::VerifyMode::kBitwise
                                                     : runtime::VerifyMode::kBound;
  // The built-in kernels plus the plugins' and those the kernel files give a body.
  const runtime::ExecutableKernels reference =
      load_executable_kernels(options.kernel_sources, signatures, runtime::KernelSet::kReference);
  const runtime::ExecutableKernels fast =
      load_executable_kernels(options.kernel_sources, signatures, runtime::KernelSet::kFast);
  // On an arena of --threads threads, as `run --verify` verifies on the run's threads.
  runtime::VerifyReport report;
  runtime::run_on_threads(options.threads, [&] {
    report = runtime::verify_outputs(
        graph, inputs, results,
        {.mode = mode,
         .oracle = {.kernels = &fast, .tf32_products = options.tf32},
         .naive_kernels = mode == runtime::VerifyMode::kBitwise ? &reference : &fast,
         .unchecked = options.allow_unchecked ? runtime::UncheckedCells::kAllow
                                              : runtime::UncheckedCells::kFail});
  });
  if (options.format == "json") {
    fmt::print("{}\n", report.to_json().dump(1));
  } else {
    fmt::print("{}", report.text());
  }
  return report.pass() ? kExitOk : kExitFailed;
}

}  // namespace

void register_verify(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check outputs (DIR/<output>.npy) against the naive evaluation of the graph");
  cmd->add_option("graph", options->graph, "the graph: a .tap program or loom JSON")->required();
  cmd->add_option("--inputs", options->inputs, "DIR/<input>.npy for every graph input")->required();
  cmd->add_option("--outputs", options->outputs, "DIR/<output>.npy for every graph output")
      ->required();
  cmd->add_option("--plan", options->plan, "the plan the outputs were computed under (checked)");
  add_kernel_source_options(*cmd, options->kernel_sources);
  add_dim_option(*cmd, options->dims);
  cmd->add_flag("--bitwise", options->bitwise, "demand bitwise equality with the naive run");
  cmd->add_flag("--exact", options->exact,
                "demand the exact value (inputs in {-1,0,1}, sums below 2^24)");
  cmd->add_flag("--allow-unchecked", options->allow_unchecked,
                "cells whose error the oracle cannot bound PASS with a warning instead of "
                "UNCHECKED (exit 1). Unsafe: a wrong value in those cells passes");
  cmd->add_option("--format", options->format, "text (default) or json");
  cmd->add_option("--threads", options->threads,
                  "threads of the naive run and the oracle (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--tf32", options->tf32,
                "the outputs come from float32 GEMMs on TF32 tensor cores (a GPU run with "
                "--tf32): the bars count their operands' rounding");
  cmd->footer(
      exit_codes_footer("some output FAILs or is UNCHECKED (0: every output PASSes; a missing "
                        "output file is exit 2, named)"));
  cmd->callback([&dispatch, options] {
    dispatch.name = "verify";
    dispatch.run = [options] { return run_verify(*options); };
  });
}

}  // namespace tapestry::cli
