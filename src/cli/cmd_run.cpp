// `tapestry run`: execute a graph (sharded by a plan) with the reference kernels, and verify it.
//
//   tapestry run examples/linear_relu.tap --split Y/linear.batch=2 --verify
//   tapestry run examples/mlp.tap --plan plan.json --inputs in/ --outputs out/ --verify
//
// The graph is lowered under the plan (no plan: one application per operation) and run by the
// application executor. Inputs come from DIR/<input name>.npy with --inputs (every one must be
// there, with the tensor's dtype and shape), else they are generated from --seed. Outputs are
// written to DIR/<output name>.npy with --outputs ('/' in a name becomes '_').
//
// --verify also runs the unsharded graph on the naive executor with the same inputs and compares
// every graph output. Without a reduction split the reference kernels make the results bitwise
// equal, and that is the bar. A reduction split re-associates sums (partials, then a combine), so
// each output cell may differ by the rounding of a K-term sum computed in two orders, bounded by
// about 2·K·ε·Σ|terms|; with inputs in [-1, 1) the check is max abs diff <= K·ε·4 (f32 ε = 2^-23,
// f64 ε = 2^-52) or max rel diff <= 1e-4 (f32) / 1e-12 (f64). Exit 1 on FAIL.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <filesystem>

#include "command.h"
#include "graph_input.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/split_reduction.h"
#include "tapestry/runtime/application_executor.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/runtime/npy.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/support/error.h"

namespace tapestry::cli {

namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string graph;
  std::string plan;
  std::vector<std::string> splits;
  std::string inputs;
  std::string outputs;
  std::uint64_t seed = 0;
  bool verify = false;
  std::vector<std::string> kernel_dirs;
};

std::string file_name(const std::string& tensor) {
  std::string name = tensor;
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  return name + ".npy";
}

runtime::BufferMap read_inputs(const ir::Graph& graph, const RunOptions& options) {
  if (options.inputs.empty()) return runtime::generate_inputs(graph, {.seed = options.seed});
  if (!fs::is_directory(options.inputs))
    throw Error(fmt::format("--inputs {}: not a directory", options.inputs));
  runtime::BufferMap inputs;
  for (ir::TensorId t : runtime::graph_inputs(graph)) {
    const fs::path path = fs::path(options.inputs) / file_name(runtime::tensor_name(graph, t));
    if (!fs::exists(path))
      throw Error(fmt::format("{}: missing input file for tensor {}", path.string(),
                              runtime::tensor_name(graph, t)));
    runtime::Buffer buffer = runtime::read_npy(path, graph.tensor(t).range().shape());
    if (buffer.dtype() != runtime::tensor_dtype(graph, t)) {
      throw Error(fmt::format("{}: dtype {} but tensor {} is {}", path.string(),
                              ir::dtype_name(buffer.dtype()), runtime::tensor_name(graph, t),
                              graph.tensor(t).dtype()));
    }
    inputs.emplace(t, runtime::bind_buffer(graph, t, std::move(buffer)));
  }
  return inputs;
}

// The inputs of `from` re-keyed onto the same-named tensors of `to`.
runtime::BufferMap rekey(const ir::Graph& from, const ir::Graph& to,
                         const runtime::BufferMap& buffers) {
  runtime::BufferMap out;
  for (const auto& [t, buffer] : buffers)
    out.emplace(runtime::find_tensor(to, runtime::tensor_name(from, t)), buffer);
  return out;
}

void check_output_dir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw Error(fmt::format("--outputs {}: cannot create the directory", dir));
  const fs::path probe = fs::path(dir) / ".tapestry-write-test";
  if (FILE* f = std::fopen(probe.c_str(), "w")) {
    std::fclose(f);
    fs::remove(probe, ec);
  } else {
    throw Error(fmt::format("--outputs {}: the directory is not writable", dir));
  }
}

bool verify(const ir::Graph& graph, const ir::Graph& lowered, const runtime::BufferMap& inputs,
            const runtime::BufferMap& results, bool reduction_split) {
  runtime::BufferMap naive = runtime::NaiveExecutor(graph).run(inputs);
  runtime::BufferMap sharded;
  for (ir::TensorId t : runtime::graph_outputs(graph)) {
    sharded.emplace(t, results.at(runtime::find_tensor(lowered, runtime::tensor_name(graph, t))));
  }
  bool pass = true;
  for (const runtime::TensorComparison& c :
       runtime::compare_tensors(graph, naive, sharded).tensors) {
    const runtime::BufferComparison& r = *c.result;
    bool ok = r.bitwise_equal;
    std::string bar = "bitwise";
    if (reduction_split && !ok && r.comparable) {
      const bool f64 = graph.tensor(c.tensor).dtype() == "float64";
      const double eps = f64 ? 0x1p-52 : 0x1p-23;
      const double abs_tol = 4.0 * eps * 1e4;  // K up to 1e4 terms of magnitude <= 1
      ok = r.within(abs_tol, f64 ? 1e-12 : 1e-4);
      bar = fmt::format("abs <= {:.1e} or rel <= {:.0e}", abs_tol, f64 ? 1e-12 : 1e-4);
    }
    fmt::print("{:<6} {}: max abs diff {:.3e}, max rel diff {:.3e} ({}; bar: {})\n",
               ok ? "PASS" : "FAIL", c.name, r.max_abs_diff, r.max_rel_diff, r.summary(), bar);
    pass &= ok;
  }
  return pass;
}

int run_run(const RunOptions& options) {
  const metakernel::KernelRegistry kernels = load_kernels(options.kernel_dirs);
  const ir::Graph graph = load_graph(options.graph, kernels);
  const rewrite::Plan plan = load_plan(options.plan, options.splits);
  check_output_dir(options.outputs);
  const runtime::BufferMap inputs =
      read_inputs(graph, options);  // all input errors before any work
  rewrite::LowerResult lowered =
      rewrite::lower(graph, plan, {.driver = {}, .validate = true, .kernels = &kernels});
  bool reduction_split = false;
  for (const rewrite::RewriteEvent& e : lowered.log)
    reduction_split |= e.applied && e.pattern == rewrite::kSplitReduction;

  const runtime::ApplicationExecutor executor(lowered.graph);
  runtime::BufferMap results = executor.run(rekey(graph, lowered.graph, inputs));
  fmt::print("ran {} applications of {} operations\n", lowered.graph.applications().size(),
             lowered.graph.operations().size());
  if (!options.outputs.empty()) {
    for (ir::TensorId t : runtime::graph_outputs(graph)) {
      const std::string name = runtime::tensor_name(graph, t);
      const fs::path path = fs::path(options.outputs) / file_name(name);
      runtime::write_npy(path, results.at(runtime::find_tensor(lowered.graph, name)));
      fmt::print("wrote {}\n", path.string());
    }
  }
  if (!options.verify) return kExitOk;
  return verify(graph, lowered.graph, inputs, results, reduction_split) ? kExitOk : kExitFailed;
}

}  // namespace

void register_run(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "Execute a graph under a plan; --verify against the naive run");
  cmd->add_option("graph", options->graph, "the graph: a .tap program or loom JSON")->required();
  cmd->add_option("--plan", options->plan, "a plan file (JSON; see docs/rewrites.md)");
  cmd->add_option("--split", options->splits, "shorthand for one split: OP.DIM=N (repeatable)");
  cmd->add_option("--inputs", options->inputs, "read DIR/<input>.npy for every graph input");
  cmd->add_option("--outputs", options->outputs, "write DIR/<output>.npy for every graph output");
  cmd->add_option("--seed", options->seed, "seed of the generated inputs (without --inputs)");
  cmd->add_flag("--verify", options->verify,
                "compare with the naive unsharded run; exit 1 on FAIL");
  cmd->add_option("--kernels", options->kernel_dirs, "a directory of extra kernel files (*.yaml)");
  cmd->callback([&dispatch, options] {
    dispatch.name = "run";
    dispatch.run = [options] { return run_run(*options); };
  });
}

}  // namespace tapestry::cli
