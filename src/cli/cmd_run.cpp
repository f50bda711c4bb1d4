// `tapestry run`: execute a graph (sharded by a plan) on the block executor, and verify it.
//
//   tapestry run examples/linear_relu.tap --split Y/linear.batch=2 --verify
//   tapestry run examples/mlp.tap --plan examples/plans/mlp-best.json --threads 2 --trace t.json
//   tapestry run examples/mlp.tap --plan plan.json --inputs in/ --outputs out/ --verify
//
// The graph is lowered under the plan (no plan: one application per operation) and run by the
// block executor (oneTBB, --threads, fast kernels; `--kernels reference` for the reference loops)
// or, with `--executor application`, by the sequential application executor. Inputs come from
// DIR/<input name>.npy with --inputs (every one must be there, with the tensor's dtype and
// shape), else they are generated from --seed. Outputs are written to DIR/<output name>.npy with
// --outputs ('/' in a name becomes '_'). Every input error, an unwritable --outputs/--metrics/
// --trace path and an exceeded --memory-limit are reported before any work starts.
//
// --verify also runs the unsharded graph on the naive executor with the same inputs and compares
// every graph output. With reference kernels and no reduction split the results must be bitwise
// equal; otherwise (fast kernels, or a split reduction re-associating sums) each cell must lie
// within runtime::VerifyTolerance (compare.h): |a − b| <= 4·ε·K·M. Exit 1 on FAIL.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "command.h"
#include "graph_input.h"
#include "progress.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/split_reduction.h"
#include "tapestry/runtime/application_executor.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/runtime/npy.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"

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
  std::vector<std::string> kernels;  // kernel-file directories, or `fast` / `reference`
  std::string executor = "block";
  int threads = 0;
  std::string memory_limit;
  std::string metrics;
  std::string trace;
  bool quiet = false;
  int repeat = 1;
  int warmup = 0;

  // Split out of `kernels`: directories of kernel files, and the executable kernel set.
  std::vector<std::string> kernel_dirs;
  bool reference_kernels = false;
};

// `--kernels` takes both: `fast` / `reference` select the executable kernels, anything else is a
// directory of kernel files (write ./reference for a directory of that name).
void split_kernel_option(RunOptions& options) {
  for (const std::string& k : options.kernels) {
    if (k == "reference" || k == "fast") {
      options.reference_kernels = k == "reference";
    } else {
      options.kernel_dirs.push_back(k);
    }
  }
}

// "2G", "512M", "1.5GiB", "100000" → bytes.
std::int64_t parse_byte_size(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "K") scale = 0x1p10;
  if (unit == "M") scale = 0x1p20;
  if (unit == "G") scale = 0x1p30;
  if (unit == "T") scale = 0x1p40;
  if (used == 0 || scale == 0 || !(value > 0) || value * scale > 0x1p62) {
    throw Error(
        fmt::format("--memory-limit {}: expected a size such as 512M, 2G or 1073741824", text));
  }
  return static_cast<std::int64_t>(value * scale);
}

// Fails now, before any work, when `file` could not be written later.
void check_writable_file(const std::string& option, const std::string& file) {
  if (file.empty()) return;
  const fs::path parent = fs::absolute(file).parent_path();
  if (!fs::is_directory(parent)) {
    throw Error(
        fmt::format("{} {}: the directory {} does not exist", option, file, parent.string()));
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    throw Error(fmt::format("{} {}: the directory is not writable", option, file));
  }
}

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
            const runtime::BufferMap& results, bool exact) {
  const runtime::BufferMap naive = runtime::NaiveExecutor(graph).run(inputs);
  const runtime::VerifyTolerance tolerance = runtime::verify_tolerance(graph, naive);
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
    if (!exact && !ok && r.comparable) {
      const double abs_tol = tolerance.abs_tol(runtime::tensor_dtype(graph, c.tensor));
      ok = r.max_abs_diff <= abs_tol;
      bar = fmt::format("abs <= 4·eps·K·M = {:.2e}, K {}, M {:.3g}", abs_tol,
                        tolerance.reduction_length, tolerance.magnitude);
    }
    fmt::print("{:<6} {}: max abs diff {:.3e}, max rel diff {:.3e} ({}; bar: {})\n",
               ok ? "PASS" : "FAIL", c.name, r.max_abs_diff, r.max_rel_diff, r.summary(), bar);
    pass &= ok;
  }
  return pass;
}

struct Executed {
  runtime::BufferMap buffers;
  std::optional<runtime::RunMetrics> metrics;
};

Executed execute(const ir::Graph& lowered, runtime::BufferMap inputs, const RunOptions& options) {
  const runtime::KernelRegistry& kernels =
      options.reference_kernels ? runtime::KernelRegistry::reference() : runtime::fast_kernels();
  if (options.executor == "application") {
    return {runtime::ApplicationExecutor(lowered, kernels).run(std::move(inputs)), std::nullopt};
  }
  const runtime::BlockExecutor executor(
      lowered, {.threads = options.threads,
                .kernels = &kernels,
                .memory_limit_bytes =
                    options.memory_limit.empty() ? 0 : parse_byte_size(options.memory_limit)});
  // --warmup: untimed runs first (oneDNN compiles its kernels for each new shape, buffers are
  // first touched, pool threads start); --repeat: time several runs, keep the median one.
  for (int w = 0; w < options.warmup; ++w) (void)executor.run(inputs);
  std::vector<runtime::BlockExecutor::Measured> runs;
  const auto timed_run = [&](runtime::BufferMap run_inputs) {
    runtime::RunProgress progress;
    const ProgressLine line(progress, executor.application_count(), !options.quiet);
    runs.push_back(executor.run_measured(std::move(run_inputs), &progress));
    if (options.repeat > 1) {
      fmt::print("run {}: wall {:.4f} s, {:.1f} GFLOP/s\n", runs.size(), runs.back().metrics.wall_s,
                 runs.back().metrics.gflops);
    }
  };
  for (int r = 1; r < options.repeat; ++r) timed_run(inputs);  // copies
  timed_run(std::move(inputs));                                // the last run takes them
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.metrics.wall_s < b.metrics.wall_s; });
  auto& median = runs[runs.size() / 2];
  return {std::move(median.buffers), std::move(median.metrics)};
}

int run_run(RunOptions& options) {
  split_kernel_option(options);
  if (options.executor != "block" && options.executor != "application") {
    throw Error(fmt::format("--executor {}: expected block or application", options.executor));
  }
  if (options.executor == "application") {
    const std::pair<bool, const char*> block_only[] = {
        {options.threads != 0, "--threads"},     {!options.memory_limit.empty(), "--memory-limit"},
        {!options.metrics.empty(), "--metrics"}, {!options.trace.empty(), "--trace"},
        {options.repeat != 1, "--repeat"},       {options.warmup != 0, "--warmup"}};
    for (const auto& [given, name] : block_only) {
      if (given) {
        throw Error(fmt::format("{} needs the block executor (not --executor application)", name));
      }
    }
  }
  if (!options.memory_limit.empty()) (void)parse_byte_size(options.memory_limit);
  const metakernel::KernelRegistry kernels = load_kernels(options.kernel_dirs);
  const ir::Graph graph = load_graph(options.graph, kernels);
  const rewrite::Plan plan = load_plan(options.plan, options.splits);
  check_output_dir(options.outputs);
  check_writable_file("--metrics", options.metrics);
  check_writable_file("--trace", options.trace);
  const runtime::BufferMap inputs =
      read_inputs(graph, options);  // all input errors before any work
  rewrite::LowerResult lowered =
      rewrite::lower(graph, plan, {.driver = {}, .validate = true, .kernels = &kernels});
  bool reduction_split = false;
  for (const rewrite::RewriteEvent& e : lowered.log)
    reduction_split |= e.applied && e.pattern == rewrite::kSplitReduction;

  Executed run = execute(lowered.graph, rekey(graph, lowered.graph, inputs), options);
  fmt::print("ran {} applications of {} operations ({} executor, {} kernels)\n",
             lowered.graph.applications().size(), lowered.graph.operations().size(),
             options.executor, options.reference_kernels ? "reference" : "fast");
  if (run.metrics) {
    fmt::print("{}", runtime::summary_table(*run.metrics));
    if (!options.metrics.empty()) {
      write_file_atomically(options.metrics, runtime::metrics_json(*run.metrics).dump(1) + "\n");
      fmt::print("wrote {}\n", options.metrics);
    }
    if (!options.trace.empty()) {
      write_file_atomically(options.trace, runtime::chrome_trace(*run.metrics).dump() + "\n");
      fmt::print("wrote {}\n", options.trace);
    }
  }
  if (!options.outputs.empty()) {
    for (ir::TensorId t : runtime::graph_outputs(graph)) {
      const std::string name = runtime::tensor_name(graph, t);
      const fs::path path = fs::path(options.outputs) / file_name(name);
      runtime::write_npy(path, run.buffers.at(runtime::find_tensor(lowered.graph, name)));
      fmt::print("wrote {}\n", path.string());
    }
  }
  if (!options.verify) return kExitOk;
  const bool exact = options.reference_kernels && !reduction_split;
  return verify(graph, lowered.graph, inputs, run.buffers, exact) ? kExitOk : kExitFailed;
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
  cmd->add_option("--kernels", options->kernels,
                  "fast (default) or reference: the kernels to run; or a directory of extra "
                  "kernel files (*.yaml); repeatable");
  cmd->add_option("--executor", options->executor,
                  "block (default: parallel, oneTBB) or application (sequential)");
  cmd->add_option("--threads", options->threads, "block executor threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--memory-limit", options->memory_limit,
                  "fail before running when the plan's estimated peak exceeds SIZE (512M, 2G)");
  cmd->add_option("--metrics", options->metrics, "write run metrics to FILE (JSON)");
  cmd->add_option("--trace", options->trace,
                  "write a Chrome trace-event FILE (open in Perfetto / chrome://tracing)");
  cmd->add_flag("--quiet", options->quiet, "no progress line on stderr");
  cmd->add_option("--repeat", options->repeat,
                  "run N times (block executor; for timing): report the median run")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--warmup", options->warmup,
                  "untimed runs before the timed ones (block executor; for timing)")
      ->check(CLI::Range(0, 1000));
  cmd->callback([&dispatch, options] {
    dispatch.name = "run";
    dispatch.run = [options] { return run_run(*options); };
  });
}

}  // namespace tapestry::cli
