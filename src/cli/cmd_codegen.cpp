// `tapestry codegen`: a placed plan as programs that run without Tapestry (docs/codegen.md).
//
//   tapestry codegen examples/mlp.tap --plan examples/plans/mlp-megatron.json --target cpu-local
//     --to torch -o mlp_torch/
//   torchrun --nproc-per-node 2 mlp_torch/main.py --inputs in/ --outputs out/
//   tapestry verify examples/mlp.tap --inputs in/ --outputs out/
//
// The plan is lowered and placed on the target (or on --ranks N devices rank:0 … rank:N-1, as
// `launch -n N` places it), device i being rank i; the placement's transfers become the messages
// and collectives the MPI executor derives (workflow/mpi.h, runtime/rank_program.h), and
// codegen/torch.h writes them as PyTorch. Every file is generated before any is written, then
// all are written or none (exit 2 on bad input: an unknown --to, a plan that does not fit, a
// kernel with no torch mapping or no body, named with its application). A kernel file's kernel
// with a `body:` travels as torch ops (--to torch) or as its body (--to cpp).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <filesystem>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "kernel_sources.h"
#include "priced_plan.h"
#include "tapestry/codegen/cpp.h"
#include "tapestry/codegen/torch.h"
#include "tapestry/cost/explain.h"
#include "tapestry/support/error.h"
#include "tapestry/workflow/mpi.h"
#include "tapestry/workflow/price.h"
#include "tensor_files.h"

namespace tapestry::cli {

namespace {

struct CodegenOptions {
  PricingOptions pricing;  // GRAPH, --plan, --split, --target or --ranks, kernels, --dim, …
  std::string to;
  std::string output;
};

std::string command_line(const CodegenOptions& o) {
  const PricingOptions& p = o.pricing;
  std::string text = "tapestry codegen " + p.graph;
  if (!p.plan.empty()) text += " --plan " + p.plan;
  for (const std::string& s : p.splits) text += " --split " + s;
  if (!p.target.empty()) text += " --target " + p.target;
  if (p.ranks > 0) text += fmt::format(" --ranks {}", p.ranks);
  for (const std::string& d : p.dims) text += " --dim " + d;
  return text + " --to " + o.to + " -o " + o.output;
}

int run_codegen(const CodegenOptions& options) {
  if (options.to != "torch" && options.to != "cpp") {
    throw Error(fmt::format("--to {}: expected torch or cpp", options.to));
  }
  if (options.pricing.target.empty() == (options.pricing.ranks == 0)) {
    throw Error("give --target T (a preset or file: one rank per device) or --ranks N, not both");
  }
  ir::Graph graph;
  const PricedPlan priced = price_plan(options.pricing, &graph);
  const cost::Explanation explanation = cost::explain(priced.lowered.graph, priced.placement,
                                                      priced.target, priced.cost, priced.schedule);
  const runtime::RankSchedule schedule = workflow::rank_schedule(priced.placement, priced.target);
  // The kernel files' signatures: their kernels with a body travel with the program.
  const metakernel::SignatureRegistry signatures = load_signatures(options.pricing.kernel_sources);
  std::vector<std::pair<std::string, std::string>> program;
  if (options.to == "cpp") {
    program = codegen::generate_cpp(graph, priced.lowered, schedule,
                                    {.command = command_line(options),
                                     .strategy = explanation.strategy.summary,
                                     .kernels = &signatures})
                  .files;
  } else {
    program = codegen::generate_torch(graph, priced.lowered, schedule,
                                      {.command = command_line(options),
                                       .strategy = explanation.strategy.summary,
                                       .target = priced.target.name,
                                       .kernels = &signatures})
                  .files;
  }

  const std::filesystem::path dir(options.output);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw Error(
        fmt::format("-o {}: cannot create the directory: {}", options.output, ec.message()));
  StagedFiles files;
  for (const auto& [name, text] : program) files.add(dir / name, text);
  files.commit();
  fmt::print("wrote {} files to {} ({} ranks; {})\n", program.size(), dir.string(),
             schedule.ranks(), explanation.strategy.summary);
  if (options.to == "cpp") {
    const std::string build = (dir / "build").string();
    fmt::print(
        "build: cmake -S {} -B {} -G Ninja -DCMAKE_PREFIX_PATH=<Tapestry's prefix> && "
        "cmake --build {}\n",
        dir.string(), build, build);
    fmt::print("run: {}{}/program --inputs IN --outputs OUT\n",
               schedule.ranks() > 1 ? fmt::format("mpirun -np {} ", schedule.ranks()) : "", build);
  } else {
    fmt::print("run: torchrun --nproc-per-node {} {} --inputs IN --outputs OUT\n", schedule.ranks(),
               (dir / "main.py").string());
  }
  return kExitOk;
}

}  // namespace

void register_codegen(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<CodegenOptions>();
  CLI::App* cmd = app.add_subcommand(
      "codegen",
      "Write a placed plan as a program that runs without Tapestry: per-rank PyTorch or C++");
  PricingOptions& pricing = options->pricing;
  cmd->add_option("graph", pricing.graph, "the graph: a .tap program or loom JSON")->required();
  cmd->add_option("--plan", pricing.plan, "a plan file (JSON; see docs/rewrites.md)");
  cmd->add_option("--split", pricing.splits, "shorthand for one split: OP.DIM=N (repeatable)");
  cmd->add_option("--target", pricing.target,
                  "a target (preset or JSON file): one rank per device, device i is rank i");
  cmd->add_option("--ranks", pricing.ranks,
                  "instead of --target: N ranks rank:0 … rank:N-1, placed as `launch -n N` places")
      ->check(CLI::Range(1, 4096));
  cmd->add_option(
         "--to", options->to,
         "what to generate: torch (per-rank PyTorch) or cpp (a C++ program on the kernel library)")
      ->required();
  cmd->add_option("-o,--output", options->output, "the directory to write the program into")
      ->required();
  add_kernel_source_options(*cmd, pricing.kernel_sources);
  add_dim_option(*cmd, pricing.dims);
  cmd->add_flag("--trust-ipfs", pricing.trust_ipfs, kTrustIpfsHelp);
  cmd->add_flag("--ignore-placement", pricing.ignore_placement, kIgnorePlacementHelp);
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "codegen";
    dispatch.run = [options] { return run_codegen(*options); };
  });
}

}  // namespace tapestry::cli
