// `tapestry run`: execute a graph (sharded by a plan) on the block executor, and verify it.
//
//   tapestry run examples/linear_relu.tap --split Y/linear.batch=2 --verify
//   tapestry run examples/mlp.tap --plan examples/plans/mlp-best.json --threads 2 --trace t.json
//   tapestry run examples/mlp.tap --plan plan.json --inputs in/ --outputs out/ --verify
//   tapestry run examples/mlp.tap --plan plan.json --verify=exact
//   tapestry run examples/mlp.tap --optimize --target cpu-local --verify
//
// With --optimize the plan is the fastest `tapestry optimize` finds on --target (search/optimize.h:
// objective time, seed 0, --time-budget, default 3 s) instead of --plan/--split.
// The graph is lowered under the plan (no plan: one application per operation) and run by the
// block executor (oneTBB, --threads, fast kernels; `--kernels reference` for the reference loops)
// or, with `--executor application`, by the sequential application executor, or, under mpirun with
// `--executor mpi [--target T]`, across processes (run_mpi.cpp, docs/distributed.md); with
// `--device cuda` on one GPU (the CUDA executor) or, with `--executor mpi`, on a GPU per rank
// with NCCL between them (docs/gpu.md). Inputs come
// from DIR/<input name>.npy with --inputs (every one must be there, with the tensor's dtype and
// shape), else they are generated from --seed. The graph's outputs (its declared `output`s,
// else the tensors nothing consumes) are written to DIR/<output name>.npy with --outputs ('/' in
// a name becomes '_'). Every input error, an unwritable --outputs/--metrics/--trace path and an
// exceeded --memory-limit are reported before any work starts.
//
// Files are all-or-nothing: outputs, metrics and trace are written under temporary names and
// renamed into place together once the run (and --verify) finished; a run that fails leaves
// none of them. A --verify FAIL still writes them (they help find the fault); the exit code is 1.
//
// --verify compares every output with the unsharded graph on the same inputs (runtime/verify.h):
// bitwise with the naive run for reference kernels without a reduction split; else each cell
// within its own bar of the float64 oracle (oracle.h). --verify=exact generates inputs in
// {-1, 0, 1} and demands the exact value, with any kernels and plan. Exit 1 on FAIL, and on
// UNCHECKED (cells whose error the oracle cannot bound) unless --allow-unchecked.
//
// The steps (lower, verify mode, memory check, inputs onto the lowered graph, outputs back,
// verify) are workflow/run.h's, shared with the MPI run and Python's Graph.run; this file parses,
// reads and writes files, and prints.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <utility>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "optimize_options.h"
#include "progress.h"
#include "run_common.h"
#include "tapestry/gpu/cuda.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/application_executor.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/npy.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/runtime/verify.h"
#include "tapestry/search/objectives.h"
#include "tapestry/support/error.h"
#include "tapestry/workflow/run.h"
#include "tensor_files.h"

namespace tapestry::cli {

namespace fs = std::filesystem;

std::int64_t parse_byte_size(const std::string& text) {
  return search::parse_byte_size(text, "--memory-limit");
}

workflow::VerifyCheck verify_check(const RunOptions& options) {
  if (options.verify.empty()) return workflow::VerifyCheck::kNone;
  return options.verify == "exact" ? workflow::VerifyCheck::kExact : workflow::VerifyCheck::kBound;
}

int verify_and_write(const ir::Graph& graph, const rewrite::LowerResult& lowered,
                     const runtime::BufferMap& inputs, const runtime::BufferMap& results,
                     std::optional<runtime::Oracle> oracle, const RunOptions& options,
                     const std::string& metrics_text, const std::string& trace_text,
                     const runtime::ExecutableKernels* reference,
                     const runtime::ExecutableKernels* fast) {
  const workflow::RunChoices choices{.verify = verify_check(options),
                                     .reference_kernels = options.reference_kernels};
  bool pass = true;
  std::string metrics = metrics_text;
  if (choices.verify != workflow::VerifyCheck::kNone) {
    const runtime::VerifyReport report =
        workflow::verify_run(graph, inputs, results,
                             {.mode = workflow::verify_mode(choices, lowered),
                              .unchecked = options.allow_unchecked ? runtime::UncheckedCells::kAllow
                                                                   : runtime::UncheckedCells::kFail,
                              .reference = reference,
                              .fast = fast,
                              .threads = options.threads,
                              .tf32 = options.tf32},
                             std::move(oracle));
    fmt::print("{}", report.text());
    pass = report.pass();
    if (!metrics.empty()) {  // where the verification spent its time, next to the run's figures
      nlohmann::json m = nlohmann::json::parse(metrics);
      m["verify"] = report.timing.to_json();
      metrics = m.dump(1) + "\n";
    }
  }

  StagedFiles files;  // all or nothing, written even on a FAIL (they help find the fault)
  if (!metrics.empty() && !options.metrics.empty()) files.add(options.metrics, metrics);
  if (!trace_text.empty() && !options.trace.empty()) files.add(options.trace, trace_text);
  if (!options.outputs.empty()) {
    for (ir::TensorId t : runtime::graph_outputs(graph)) {
      const fs::path path =
          fs::path(options.outputs) / tensor_file_name(runtime::tensor_name(graph, t));
      files.add(path, runtime::format_npy(results.at(t)));
    }
  }
  for (const fs::path& path : files.commit()) fmt::print("wrote {}\n", path.string());
  return pass ? kExitOk : kExitFailed;
}

namespace {

struct Executed {
  runtime::BufferMap buffers;
  std::optional<runtime::RunMetrics> metrics;
  std::string metrics_text;  // --device cuda: its own --metrics JSON
};

// The inputs of one of several runs: views where `inputs` are views (they borrow the caller's
// inputs, workflow::lowered_input_views; executors never write their inputs), else copies.
runtime::BufferMap views_of(const runtime::BufferMap& inputs) {
  runtime::BufferMap views;
  for (const auto& [t, b] : inputs) {
    views.emplace(t, b.is_borrowed()
                         ? runtime::Buffer::borrow(b.dtype(), b.range(),
                                                   const_cast<std::byte*>(b.bytes()))  // NOLINT
                         : runtime::Buffer(b));
  }
  return views;
}

// --device cuda: the CUDA executor (gpu/cuda.h); --warmup and --repeat as on the CPU, the
// median run's GPU compute time reported.
Executed execute_cuda(const ir::Graph& lowered, runtime::BufferMap inputs,
                      const runtime::ExecutableKernels& kernels, const RunOptions& options) {
  const int streams = options.streams == 0 ? 4 : options.streams;
  const gpu::CudaExecutor executor(
      lowered, {.streams = streams,
                .graph = !options.no_cuda_graph,
                .allow_tf32 = options.tf32,
                .host_kernels = &kernels,
                .memory_limit_bytes =
                    options.memory_limit.empty() ? 0 : parse_byte_size(options.memory_limit),
                .profile = options.gpu_profile});
  for (int w = 0; w < options.warmup; ++w) (void)executor.run(views_of(inputs));
  std::vector<gpu::CudaExecutor::Measured> runs;
  for (int r = 0; r < options.repeat; ++r) {
    runs.push_back(
        executor.run_measured(r + 1 < options.repeat ? views_of(inputs) : std::move(inputs)));
    if (options.repeat > 1 && !options.quiet) {
      fmt::print("run {}: GPU {:.4f} ms, {:.1f} GFLOP/s\n", runs.size(),
                 runs.back().stats.compute_s * 1e3, runs.back().metrics.gflops);
    }
  }
  std::vector<double> times;
  for (const auto& r : runs) times.push_back(r.stats.compute_s);
  std::vector<std::size_t> by_time(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) by_time[i] = i;
  std::sort(by_time.begin(), by_time.end(),
            [&](std::size_t a, std::size_t b) { return times[a] < times[b]; });
  gpu::CudaExecutor::Measured median = std::move(runs[by_time[by_time.size() / 2]]);
  const gpu::CudaRunStats& st = median.stats;
  const std::string name = gpu::device_description(0);
  fmt::print(
      "cuda: {}\n"
      "GPU compute {:.4f} ms ({:.1f} GFLOP/s{}), inputs in {:.3f} ms, outputs out {:.3f} ms, "
      "arena {:.1f} MiB, {} stream{}\n",
      name, st.compute_s * 1e3, median.metrics.gflops, st.replayed ? ", CUDA graph replay" : "",
      st.copy_in_s * 1e3, st.copy_out_s * 1e3,
      static_cast<double>(st.arena_bytes) / double(1 << 20), streams, streams == 1 ? "" : "s");
  std::string host;
  for (const auto& [kernel, n] : st.host_steps_by_kernel) {
    host += fmt::format("{}{} ×{}", host.empty() ? "" : ", ", kernel, n);
  }
  fmt::print("steps: {} on the GPU, {} host step{}{}\n", st.device_steps, st.host_steps,
             st.host_steps == 1 ? "" : "s", host.empty() ? "" : " (" + host + ")");
  // --gpu-profile: GPU time per operation (its applications' step times summed).
  nlohmann::json steps = nlohmann::json::array();
  if (!st.step_s.empty()) {
    const std::vector<gpu::CudaExecutor::StepName> tasks = executor.step_names();
    struct Row {
      std::string kernel;
      std::size_t applications = 0;
      double seconds = 0;
    };
    std::map<std::string, Row> by_operation;
    double total = 0;
    for (std::size_t t = 0; t < st.step_s.size(); ++t) {
      Row& row = by_operation[tasks[t].operation];
      row.kernel = tasks[t].kernel;
      ++row.applications;
      row.seconds += st.step_s[t];
      total += st.step_s[t];
      steps.push_back({{"application", tasks[t].application},
                       {"operation", tasks[t].operation},
                       {"kernel", tasks[t].kernel},
                       {"gpu_s", st.step_s[t]}});
    }
    std::vector<std::pair<std::string, Row>> rows(by_operation.begin(), by_operation.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    fmt::print("{:<24} {:<14} {:>5} {:>12} {:>7}\n", "operation", "kernel", "apps", "GPU time",
               "share");
    for (const auto& [op, row] : rows) {
      fmt::print("{:<24} {:<14} {:>5} {:>9.4f} ms {:>6.1f}%\n", op, row.kernel, row.applications,
                 row.seconds * 1e3, total > 0 ? 100 * row.seconds / total : 0.0);
    }
  }
  nlohmann::json j = {{"device", "cuda"},
                      {"device_name", name},
                      {"wall_s", st.compute_s},
                      {"flops", median.metrics.flops},
                      {"gflops", median.metrics.gflops},
                      {"runs_s", times},
                      {"applications", executor.application_count()},
                      {"cuda",
                       {{"compute_s", st.compute_s},
                        {"copy_in_s", st.copy_in_s},
                        {"copy_out_s", st.copy_out_s},
                        {"replayed", st.replayed},
                        {"arena_bytes", st.arena_bytes},
                        {"streams", streams},
                        {"tf32", options.tf32},
                        {"device_steps", st.device_steps},
                        {"host_steps", st.host_steps},
                        {"host_steps_by_kernel", st.host_steps_by_kernel}}}};
  if (!steps.empty()) j["steps"] = std::move(steps);
  return {std::move(median.buffers), std::nullopt, j.dump(1) + "\n"};
}

Executed execute(const ir::Graph& lowered, runtime::BufferMap inputs,
                 const runtime::ExecutableKernels& kernels, const RunOptions& options) {
  if (options.device == "cuda") return execute_cuda(lowered, std::move(inputs), kernels, options);
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
  for (int w = 0; w < options.warmup; ++w) (void)executor.run(views_of(inputs));
  // Every run computes the same outputs: only the latest run's buffers are kept, so a run reuses
  // the storage the previous one released (buffer.h's cache) as a long-running program would.
  std::vector<runtime::RunMetrics> runs;
  runtime::BufferMap latest;
  const auto timed_run = [&](runtime::BufferMap these_inputs) {
    latest.clear();
    runtime::RunProgress progress;
    const ProgressLine line(progress, executor.application_count(), !options.quiet);
    runtime::BlockExecutor::Measured measured =
        executor.run_measured(std::move(these_inputs), &progress);
    latest = std::move(measured.buffers);
    runs.push_back(std::move(measured.metrics));
    if (options.repeat > 1 && !options.quiet) {
      fmt::print("run {}: wall {:.4f} s, {:.1f} GFLOP/s\n", runs.size(), runs.back().wall_s,
                 runs.back().gflops);
    }
  };
  for (int r = 1; r < options.repeat; ++r) timed_run(views_of(inputs));
  timed_run(std::move(inputs));  // the last run takes them
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.wall_s < b.wall_s; });
  return {std::move(latest), std::move(runs[runs.size() / 2])};
}

void check_options(RunOptions& options) {
  if (options.kernels != "fast" && options.kernels != "reference") {
    throw Error(fmt::format(
        "--kernels {}: expected fast or reference (a directory of kernel files is --kernel-dir {})",
        options.kernels, options.kernels));
  }
  options.reference_kernels = options.kernels == "reference";
  if (options.executor != "block" && options.executor != "application" &&
      options.executor != "mpi") {
    throw Error(fmt::format("--executor {}: expected block, application or mpi", options.executor));
  }
  if (!options.target.empty() && options.executor != "mpi" && !options.optimize) {
    throw Error(
        "--target needs --optimize (the target to optimize for) or --executor mpi (device i of "
        "the target is rank i)");
  }
  if (options.optimize && options.executor == "mpi") {
    throw Error(
        "--optimize with --executor mpi is not supported yet: optimize first (tapestry "
        "optimize), then run the plan it writes");
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
  if (options.device != "cpu" && options.device != "cuda") {
    throw Error(fmt::format("--device {}: expected cpu or cuda", options.device));
  }
  if (options.device == "cuda") {
    if (options.executor == "application") {
      throw Error(
          "--device cuda runs the CUDA executor (one GPU) or, with --executor mpi, the NCCL "
          "executor (a GPU per rank): give no --executor application");
    }
    if (options.executor == "mpi" && options.gpu_profile) {
      throw Error("--gpu-profile is not supported with --executor mpi yet (one GPU only)");
    }
    if (!options.trace.empty()) throw Error("--trace is not supported with --device cuda yet");
    if (options.optimize) {
      throw Error(
          "--device cuda with --optimize is not supported yet: optimize first, then run "
          "the plan it writes");
    }
  } else if (options.tf32 || options.no_cuda_graph || options.gpu_profile || options.streams != 0) {
    throw Error("--tf32, --no-cuda-graph, --gpu-profile and --streams need --device cuda");
  }
  if (!options.verify.empty() && options.verify != "bound" && options.verify != "exact") {
    throw Error(fmt::format("--verify={}: expected --verify or --verify=exact", options.verify));
  }
  if (options.allow_unchecked && options.verify.empty())
    throw Error("--allow-unchecked needs --verify");
  if (!options.memory_limit.empty()) (void)parse_byte_size(options.memory_limit);
  if (options.optimize && (!options.plan.empty() || !options.splits.empty())) {
    throw Error("--optimize chooses the plan: give no --plan or --split with it");
  }
  if (options.optimize && options.ignore_placement) {
    throw Error("--ignore-placement applies to a given plan (--plan, --split), not to --optimize");
  }
  if (!options.optimize && (options.time_budget_s > 0 || options.max_evals > 0 ||
                            !options.max_memory_per_device.empty())) {
    throw Error("--time-budget, --max-evals and --max-memory-per-device need --optimize");
  }
}

// --optimize: the fastest plan the search finds on --target (default budget 3 s).
rewrite::Plan optimized_plan(const ir::Graph& graph, const RunOptions& options,
                             const metakernel::SignatureRegistry& signatures) {
  const cost::Target target =
      cost::resolve_target(options.target.empty() ? "cpu-local" : options.target);
  const SearchOptions search{.objectives = "time",
                             .max_memory_per_device = options.max_memory_per_device,
                             .max_devices = 0,
                             .seed = 0,
                             .threads = options.threads,
                             .time_budget_s = options.time_budget_s,
                             .max_evals = options.max_evals,
                             .tie_layers = false,
                             .quiet = options.quiet};
  const search::OptimizeResult r =
      run_search(graph, target, optimize_options(search, 3, signatures), options.quiet);
  const search::ArchiveEntry* best = r.archive.best(search::Objective::kTime);
  if (best == nullptr) {
    throw Error(fmt::format("--optimize: none of the {} plans priced on {} meets the constraints",
                            r.progress.evaluations, target.name));
  }
  const std::string takes =
      search::format_objective(search::Objective::kTime, best->cost.makespan_s);
  fmt::print("optimized for time on {}: {} plans priced in {:.1f} s; ", target.name,
             r.progress.evaluations, r.progress.seconds);
  if (best->plan == rewrite::Plan{}) {
    fmt::print("the fastest is the graph as written (no split, no fusion): {} under the model\n",
               takes);
  } else {
    fmt::print("the fastest takes {} under the model, with the plan\n  {}\n", takes,
               best->plan.to_json().dump());
  }
  return best->plan;
}

int run_run(RunOptions& options) {
  check_options(options);
  if (options.executor == "mpi") return run_mpi(options);
  const bool exact = options.verify == "exact";
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  const ir::Graph graph = load_graph(options.graph, signatures, options.trust_ipfs, options.dims);
  const rewrite::Plan plan =
      options.optimize ? optimized_plan(graph, options, signatures)
                       : load_plan(graph, options.plan, options.splits, options.ignore_placement);
  const std::vector<ir::TensorId> outputs = runtime::graph_outputs(graph);
  if (!options.outputs.empty()) check_output_files(graph, options.outputs, outputs);
  check_writable_file("--metrics", options.metrics);
  check_writable_file("--trace", options.trace);
  const rewrite::LowerResult lowered = workflow::lower_for_run(
      graph, plan, {.signatures = &signatures, .check_kernels = !options.trust_ipfs});
  if (!options.quiet) print_refused_fusions(lowered.log);
  const workflow::RunChoices choices{.verify = verify_check(options),
                                     .reference_kernels = options.reference_kernels};
  workflow::check_memory(  // before any input is read or generated
      graph, lowered, choices,
      {.limit_bytes = options.memory_limit.empty() ? 0 : parse_byte_size(options.memory_limit),
       .block_executor = options.executor == "block" && options.device == "cpu"});
  const runtime::BufferMap inputs =  // all input errors before any work
      options.inputs.empty()
          ? runtime::generate_inputs(graph, {.seed = options.seed, .exact = exact})
          : read_tensor_files(graph, options.inputs, runtime::graph_inputs(graph), "input");
  // The built-in kernels plus the plugins' and those the kernel files give a body.
  const runtime::ExecutableKernels reference =
      load_executable_kernels(options.kernel_sources, signatures, runtime::KernelSet::kReference);
  const runtime::ExecutableKernels fast =
      load_executable_kernels(options.kernel_sources, signatures, runtime::KernelSet::kFast);
  std::optional<runtime::Oracle> oracle;
  if (exact)  // refused before the run when the graph or the inputs cannot be exact
    oracle = workflow::exact_oracle(graph, inputs, &fast, "--verify=exact");

  Executed run = execute(lowered.graph, workflow::lowered_input_views(lowered, inputs),
                         options.reference_kernels ? reference : fast, options);
  fmt::print("ran {} applications of {} operations ({} executor, {} kernels)\n",
             lowered.graph.applications().size(), lowered.graph.operations().size(),
             options.device == "cuda" ? "cuda" : options.executor,
             options.device == "cuda"
                 ? (options.reference_kernels ? "CUDA + reference host" : "CUDA + fast host")
                 : (options.reference_kernels ? "reference" : "fast"));
  if (run.metrics) fmt::print("{}", runtime::summary_table(*run.metrics));
  // The outputs are taken: the run's other buffers are not held while verifying.
  const runtime::BufferMap results =
      workflow::graph_results(graph, lowered, std::exchange(run.buffers, {}));

  return verify_and_write(
      graph, lowered, inputs, results, std::move(oracle), options,
      run.metrics ? runtime::metrics_json(*run.metrics).dump(1) + "\n" : run.metrics_text,
      run.metrics ? runtime::chrome_trace(*run.metrics).dump() + "\n" : "", &reference, &fast);
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
  cmd->add_option("--outputs", options->outputs,
                  "write DIR/<output>.npy for every graph output (all files or none); DIR and "
                  "its missing parents are created, each named on stdout");
  cmd->add_option("--seed", options->seed, "seed of the generated inputs (without --inputs)");
  cmd->add_flag("--verify{bound}", options->verify,
                "compare every output with the unsharded graph on the same inputs: each cell "
                "within its own error bar of a float64 oracle (bitwise with --kernels reference "
                "and no reduction split); --verify=exact: inputs in {-1,0,1}, results exactly "
                "equal. Exit 1 on FAIL or UNCHECKED (cells whose error the oracle cannot bound)");
  cmd->add_flag("--allow-unchecked", options->allow_unchecked,
                "with --verify: cells whose error the oracle cannot bound PASS with a warning "
                "instead of UNCHECKED (exit 1). Unsafe: a wrong value in those cells passes");
  cmd->add_option("--kernels", options->kernels,
                  "fast (default: oneDNN/OpenBLAS, vectorised) or reference (plain loops): the "
                  "kernels to run")
      ->allow_extra_args(false);
  add_kernel_source_options(*cmd, options->kernel_sources, /*trap_kernels=*/false);
  add_dim_option(*cmd, options->dims);
  cmd->add_option("--executor", options->executor,
                  "block (default: parallel, oneTBB), application (sequential) or mpi (one "
                  "process per device, under mpirun: see `tapestry launch`)");
  cmd->add_option("--collectives", options->collectives,
                  "with --executor mpi: run the message patterns that are exactly an MPI "
                  "collective as one (a split reduction's partials summed: MPI_Reduce / "
                  "MPI_Allreduce; boxes every writer needs: MPI_Allgatherv). exact (default): "
                  "only where the result keeps the block executor's bits (sums over two ranks, "
                  "every all-gather); all: sums over more ranks too, in MPI's order (within the "
                  "verify bar); none: point-to-point only")
      ->check(CLI::IsMember({"exact", "all", "none"}));
  cmd->add_option("--device", options->device,
                  "cpu (default) or cuda: run on an NVIDIA GPU (the CUDA executor; kernels "
                  "without a GPU kernel run on the CPU as host steps; with --executor mpi, a GPU "
                  "per rank, boxes moved by NCCL; docs/gpu.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--streams", options->streams, "with --device cuda: CUDA streams (default 4)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--tf32", options->tf32,
                "with --device cuda: float32 GEMMs and convolutions on TF32 tensor cores");
  cmd->add_flag("--no-cuda-graph", options->no_cuda_graph,
                "with --device cuda: issue every step on every run instead of replaying a "
                "captured CUDA graph");
  cmd->add_flag("--gpu-profile", options->gpu_profile,
                "with --device cuda: time every step with CUDA events (no graph replay) and "
                "print the GPU time per operation; --metrics lists every step");
  cmd->add_option("--threads", options->threads,
                  "block executor threads (default: all cores); with --executor mpi, per rank "
                  "(default 1)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--memory-limit", options->memory_limit,
                  "fail before running when the plan's estimated peak exceeds SIZE (512M, 2G)");
  cmd->add_option("--metrics", options->metrics, "write run metrics to FILE (JSON)");
  cmd->add_option("--trace", options->trace,
                  "write a Chrome trace-event FILE (open in Perfetto / chrome://tracing)");
  cmd->add_flag("--quiet", options->quiet,
                "no progress line, no per-run lines of --repeat, no refused-fusion lines");
  cmd->add_flag("--trust-ipfs", options->trust_ipfs, kTrustIpfsHelp);
  cmd->add_flag("--ignore-placement", options->ignore_placement, kIgnorePlacementHelp);
  cmd->add_option("--repeat", options->repeat,
                  "run N times (block executor; for timing): report the median run")
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--optimize", options->optimize,
                "choose the plan: the fastest the search (tapestry optimize) finds on --target");
  cmd->add_option("--target", options->target,
                  "with --optimize: the target to optimize for (default cpu-local: this machine); "
                  "with --executor mpi: the target whose device i is rank i (default: devices "
                  "rank:0 … rank:N-1)");
  cmd->add_option("--time-budget", options->time_budget_s,
                  "with --optimize: seconds of search (default 3)")
      ->check(CLI::Range(0.001, 1e7));
  cmd->add_option("--max-evals", options->max_evals, "with --optimize: stop after pricing N plans")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  cmd->add_option("--max-memory-per-device", options->max_memory_per_device,
                  "with --optimize: no device's modelled peak memory above SIZE");
  cmd->add_option("--warmup", options->warmup,
                  "untimed runs before the timed ones (block executor; for timing)")
      ->check(CLI::Range(0, 1000));
  cmd->footer(exit_codes_footer(
      "--verify FAILs or is UNCHECKED (outputs, metrics and trace are still written)"));
  cmd->callback([&dispatch, options] {
    dispatch.name = "run";
    dispatch.run = [options] { return run_run(*options); };
  });
}

}  // namespace tapestry::cli
