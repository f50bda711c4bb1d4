// `tapestry run --executor mpi`: the lowered plan placed on a target whose device i is rank i,
// run by the MPI executor (runtime/mpi_executor.h) across the processes of an mpirun job.
//
//   mpirun -np 2 tapestry run examples/mlp.tap --plan examples/plans/mlp-megatron.json --executor
//   mpi tapestry launch -np 4 -- run examples/mlp.tap --plan … --executor mpi --target h100x8 …
//
// 1. Every rank loads, lowers and places the same graph under the same plan (workflow/mpi.h;
//    all deterministic, so every rank computes the same schedule; nothing about the plan is
//    sent). Without --target the devices are rank:0 … rank:N-1 (the cpu-local preset's device
//    type, renamed); with one, its device count must equal the number of ranks.
// 2. Inputs: each rank generates (--seed) or reads (--inputs DIR) only the boxes of the inputs
//    its own applications read — from the .npy files directly (one read per contiguous run, from
//    a file system every rank sees), or generated box by box from (seed, name) with the stream
//    skipped to each row, bitwise what the single process generates. No rank sends another its
//    data. Rank 0 also holds every input whole when --verify needs them for the naive run.
// 3. Setup errors on any rank (a bad file, a schedule that does not fit) are agreed on before
//    anything runs; a run's errors stop every rank (mpi_executor.h). Either way rank 0 prints the
//    first failing rank's error once — `tapestry run: error: rank 1 (rank:1): …`, before any
//    rank exits — every rank exits 2, and nothing is written.
// 4. Rank 0 receives every output, prints the summary (one line per rank), runs --verify and
//    writes --outputs, --metrics (every rank's, merged) and --trace (a process per rank), all or
//    nothing, as the in-process run does.
//
// With --device cuda (run_nccl): each rank runs its part on its GPU with the NCCL executor
// (gpu/nccl_executor.h) — NCCL bootstrapped through MPI once every rank has prepared, the rank's
// GPU `local rank % GPUs of its node` — and the boxes move by NCCL; inputs, the summary, --verify
// and the files as above.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>

#include "command.h"
#include "graph_input.h"
#include "run_common.h"
#include "tapestry/gpu/nccl_executor.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/memory_budget.h"
#include "tapestry/runtime/mpi_executor.h"
#include "tapestry/runtime/rank_metrics.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/workflow/mpi.h"
#include "tapestry/workflow/run.h"
#include "tensor_files.h"

namespace tapestry::cli {

namespace {

runtime::CollectiveUse collective_use(const std::string& text) {
  if (text == "exact") return runtime::CollectiveUse::kExact;
  if (text == "all") return runtime::CollectiveUse::kAll;
  if (text == "none") return runtime::CollectiveUse::kNone;
  throw Error(fmt::format("--collectives {}: expected exact, all or none", text));
}

// Everything a rank prepares before the run (step 1–2); the executor points into the graphs.
struct Setup {
  metakernel::SignatureRegistry signatures;
  ir::Graph graph;
  rewrite::LowerResult lowered;
  workflow::MpiPlan mpi;  // the target (device i is rank i) and the schedule
  // The kernel sets, as the in-process run builds them (kernel_sources.h: built-ins, plugins,
  // kernel-file bodies); the executor points at one of them.
  runtime::ExecutableKernels reference;
  runtime::ExecutableKernels fast;
  std::unique_ptr<runtime::MpiExecutor> executor;
  std::shared_ptr<const gpu::NcclComm> comm;  // --device cuda: this rank's NCCL communicator
  std::unique_ptr<gpu::NcclExecutor> gpu;     // --device cuda: made after every rank prepared
  runtime::BufferMap inputs;      // the graph's, keyed by its tensors (rank 0 with --verify: all)
  runtime::BufferMap run_inputs;  // what this rank's applications read, keyed by the lowered graph
  std::optional<runtime::Oracle> oracle;
};

void read_inputs(Setup& setup, const RunOptions& options, std::uint32_t rank,
                 const std::vector<runtime::NeededInput>& needed);

std::unique_ptr<Setup> prepare(const RunOptions& options, const runtime::MpiSession& mpi) {
  auto s = std::make_unique<Setup>();
  const bool rank0 = mpi.rank() == 0;
  s->signatures = load_signatures(options.kernel_sources);
  s->graph = load_graph(options.graph, s->signatures, options.trust_ipfs, options.dims);
  const rewrite::Plan plan =
      load_plan(s->graph, options.plan, options.splits, options.ignore_placement);
  if (rank0) {
    if (!options.outputs.empty())
      check_output_files(s->graph, options.outputs, runtime::graph_outputs(s->graph));
    check_writable_file("--metrics", options.metrics);
    check_writable_file("--trace", options.trace);
  }
  s->lowered = workflow::lower_for_run(
      s->graph, plan, {.signatures = &s->signatures, .check_kernels = !options.trust_ipfs});
  s->mpi = workflow::prepare_mpi(s->lowered, options.target, mpi.size(),
                                 options.plan.empty() ? "--split" : options.plan);
  s->reference = load_executable_kernels(options.kernel_sources, s->signatures,
                                         runtime::KernelSet::kReference);
  s->fast =
      load_executable_kernels(options.kernel_sources, s->signatures, runtime::KernelSet::kFast);
  if (options.device == "cuda") return s;  // run_nccl makes the executor and reads the inputs
  const runtime::ExecutableKernels& kernels = options.reference_kernels ? s->reference : s->fast;
  s->executor = std::make_unique<runtime::MpiExecutor>(
      mpi, s->lowered.graph, s->mpi.schedule,
      runtime::MpiExecutorOptions{.threads = options.threads > 0 ? options.threads : 1,
                                  .kernels = &kernels,
                                  .memory_limit_bytes = options.memory_limit.empty()
                                                            ? 0
                                                            : parse_byte_size(options.memory_limit),
                                  .collectives = collective_use(options.collectives)});

  read_inputs(*s, options, mpi.rank(), s->executor->inputs_needed());
  return s;
}

// Step 2: the boxes of the inputs this rank reads (`needed`), each straight from its file or
// generated alone (rank 0 also every input whole for --verify).
void read_inputs(Setup& setup, const RunOptions& options, std::uint32_t rank,
                 const std::vector<runtime::NeededInput>& needed) {
  Setup* s = &setup;
  const bool exact = options.verify == "exact";
  const bool rank0 = rank == 0;
  if (rank0 && !options.verify.empty()) {
    const std::vector<ir::TensorId> all = runtime::graph_inputs(s->graph);
    s->inputs = options.inputs.empty()
                    ? runtime::generate_inputs(s->graph, {.seed = options.seed, .exact = exact})
                    : read_tensor_files(s->graph, options.inputs, all, "input");
  }
  if (exact && rank0) {
    s->oracle = workflow::exact_oracle(s->graph, s->inputs, &s->fast, "--verify=exact");
  }
  for (const runtime::NeededInput& need : needed) {
    const std::optional<ir::TensorId> original = s->lowered.original(need.tensor);
    TAPESTRY_ASSERT(original.has_value(), "the MPI executor needs an input of the graph");
    const ir::TensorId mine = *original;
    const std::string name = runtime::tensor_name(s->graph, mine);
    s->run_inputs.emplace(need.tensor,
                          options.inputs.empty()
                              ? runtime::generate_box(runtime::tensor_dtype(s->graph, mine),
                                                      s->graph.tensor(mine).range(), need.box,
                                                      options.seed, name, exact)
                              : read_tensor_box(s->graph, options.inputs, mine, need.box, "input"));
  }
  if (!rank0 || options.verify.empty()) s->inputs.clear();
}

// Step 3 (collective): rank 0 prints the failure, as main prints an Error, and the others exit
// 2 quietly — but only after rank 0 has printed. mpirun ends the whole job as soon as one rank
// exits non-zero; were rank 0 to leave the printing to main (after MPI_Finalize, while unwinding),
// another rank's exit could kill it first and the job would fail with exit 2 and no message (seen
// under load: 4 runs in 30 with the cores busy).
int fail(const runtime::MpiSession& mpi, const runtime::RankFailure& failure, const Setup* setup) {
  if (mpi.rank() == 0) {
    const std::string name =
        setup != nullptr && failure.rank < setup->mpi.schedule.rank_names.size()
            ? fmt::format(" ({})", setup->mpi.schedule.rank_names[failure.rank])
            : "";
    fmt::print(stderr, "tapestry run: error: rank {}{}: {}\n", failure.rank, name, failure.message);
    std::fflush(stderr);
  }
  mpi.barrier();
  return kExitBadInput;
}

// The run with rank 0's median time (every rank sorts the same broadcast times, so every rank
// keeps the same run).
template <typename Result>
Result& median_run(std::vector<std::pair<double, Result>>& runs) {
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return runs[runs.size() / 2].second;
}

// Every rank's report (rank_metrics_json), on rank 0; empty on the others.
std::vector<nlohmann::json> gather_reports(const runtime::MpiSession& mpi,
                                           const runtime::RankMetrics& metrics) {
  const std::vector<std::string> reports = mpi.gather(runtime::rank_metrics_json(metrics).dump());
  std::vector<nlohmann::json> ranks;
  for (const std::string& text : reports) ranks.push_back(nlohmann::json::parse(text));
  return ranks;
}

// Rank 0, after its summary: --verify on the gathered outputs, and the files.
int verify_outputs(Setup& s, const RunOptions& options, const std::vector<nlohmann::json>& ranks,
                   const nlohmann::json& merged, runtime::BufferMap outputs) {
  const runtime::BufferMap results =
      workflow::graph_results(s.graph, s.lowered, std::move(outputs));
  return verify_and_write(s.graph, s.lowered, s.inputs, results, std::move(s.oracle), options,
                          merged.dump(1) + "\n", runtime::merge_rank_traces(ranks).dump() + "\n",
                          &s.reference, &s.fast);
}

runtime::BufferMap copies_of(const runtime::BufferMap& buffers) {
  runtime::BufferMap out;
  for (const auto& [t, b] : buffers) out.emplace(t, runtime::Buffer(b));
  return out;
}

// --device cuda: every rank prepared (agreed); now NCCL (collective: the unique id's broadcast,
// one ncclCommSplit per collective), the rank's inputs, the runs, rank 0's report.
int run_nccl(const RunOptions& options, const runtime::MpiSession& mpi, Setup& s) {
  std::optional<std::string> error;
  try {
    s.comm = gpu::nccl_comm_from_mpi();
    s.gpu = std::make_unique<gpu::NcclExecutor>(
        s.comm, s.lowered.graph, s.mpi.schedule,
        gpu::NcclExecutorOptions{.streams = options.streams == 0 ? 4 : options.streams,
                                 .graph = !options.no_cuda_graph,
                                 .allow_tf32 = options.tf32,
                                 .host_kernels = options.reference_kernels ? &s.reference : &s.fast,
                                 .memory_limit_bytes = options.memory_limit.empty()
                                                           ? 0
                                                           : parse_byte_size(options.memory_limit),
                                 .collectives = collective_use(options.collectives)});
    read_inputs(s, options, mpi.rank(), s.gpu->inputs_needed());
  } catch (const Error& e) {
    error = e.what();
  } catch (const std::bad_alloc&) {
    error = "out of memory (an allocation failed)";
  }
  if (const auto failure = mpi.agree(error)) return fail(mpi, *failure, &s);
  // --warmup untimed runs, then --repeat timed ones; the run with rank 0's median GPU time counts.
  std::vector<std::pair<double, gpu::NcclExecutor::Result>> runs;
  for (int r = 0; r < options.warmup + options.repeat; ++r) {
    std::optional<gpu::NcclExecutor::Result> result;
    try {
      result = s.gpu->run(copies_of(s.run_inputs));
    } catch (const Error& e) {
      error = e.what();
    }
    if (const auto failure = mpi.agree(error)) return fail(mpi, *failure, &s);
    if (r < options.warmup) continue;
    const double wall = std::stod(mpi.broadcast(fmt::format("{}", result->stats.compute_s)));
    runs.emplace_back(wall, std::move(*result));
  }
  gpu::NcclExecutor::Result& run = median_run(runs);
  const std::vector<nlohmann::json> ranks = gather_reports(mpi, run.metrics);
  if (mpi.rank() != 0) return kExitOk;
  const nlohmann::json merged = runtime::merge_rank_metrics(ranks);
  const int streams = options.streams == 0 ? 4 : options.streams;
  fmt::print(
      "ran {} applications of {} operations (nccl executor: {} ranks × 1 GPU, {} stream{} + "
      "1 for NCCL, {} kernels)\n",
      s.lowered.graph.applications().size(), s.lowered.graph.operations().size(), mpi.size(),
      streams, streams == 1 ? "" : "s", options.reference_kernels ? "reference" : "fast");
  fmt::print("rank 0: {}; GPU {:.4f} ms{}, {} host step{}\n",
             gpu::device_description(s.gpu->device()), run.stats.compute_s * 1e3,
             run.stats.replayed ? " (CUDA graph replay)" : "", run.stats.host_steps,
             run.stats.host_steps == 1 ? "" : "s");
  // A sum over three or more ranks (--collectives all) is in NCCL's order here, not MPI's.
  std::string table = runtime::rank_summary_table(merged);
  for (std::size_t at = table.find(", MPI's order"); at != std::string::npos;
       at = table.find(", MPI's order", at)) {
    table.replace(at, 13, ", NCCL's order");
  }
  fmt::print("{}", table);
  return verify_outputs(s, options, ranks, merged, std::move(run.outputs));
}

}  // namespace

int run_mpi(const RunOptions& options) {
  const runtime::MpiSession mpi;
  std::unique_ptr<Setup> setup;
  std::optional<std::string> error;
  try {
    setup = prepare(options, mpi);
  } catch (const Error& e) {
    error = e.what();
  } catch (const std::bad_alloc&) {
    error = "out of memory (an allocation failed)";
  }
  if (const auto failure = mpi.agree(error)) return fail(mpi, *failure, setup.get());
  if (options.device == "cuda") return run_nccl(options, mpi, *setup);

  // --warmup untimed runs, then --repeat timed ones; the run with the median wall time on rank 0
  // counts (broadcast, so every rank keeps the same run).
  std::vector<std::pair<double, runtime::MpiExecutor::Result>> runs;
  for (int r = 0; r < options.warmup + options.repeat; ++r) {
    runtime::MpiExecutor::Result result = setup->executor->run(setup->run_inputs);
    if (result.failure) return fail(mpi, *result.failure, setup.get());
    if (r < options.warmup) continue;
    const double wall = std::stod(mpi.broadcast(fmt::format("{}", result.metrics.run.wall_s)));
    runs.emplace_back(wall, std::move(result));
  }
  runtime::MpiExecutor::Result& run = median_run(runs);
  const std::vector<nlohmann::json> ranks = gather_reports(mpi, run.metrics);
  if (mpi.rank() != 0) return kExitOk;
  const nlohmann::json merged = runtime::merge_rank_metrics(ranks);
  fmt::print(
      "ran {} applications of {} operations (mpi executor: {} ranks × {} thread{}, {} "
      "kernels)\n",
      setup->lowered.graph.applications().size(), setup->lowered.graph.operations().size(),
      mpi.size(), std::max(1, options.threads), options.threads > 1 ? "s" : "",
      options.reference_kernels ? "reference" : "fast");
  fmt::print("{}", runtime::rank_summary_table(merged));
  return verify_outputs(*setup, options, ranks, merged, std::move(run.outputs));
}

}  // namespace tapestry::cli
