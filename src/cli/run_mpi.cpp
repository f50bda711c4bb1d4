// `tapestry run --executor mpi`: the lowered plan placed on a target whose device i is rank i,
// run by the MPI executor (runtime/mpi_executor.h) across the processes of an mpirun job.
//
//   mpirun -np 2 tapestry run examples/mlp.tap --plan examples/plans/mlp-megatron.json --executor
//   mpi tapestry launch -np 4 -- run examples/mlp.tap --plan … --executor mpi --target h100x8 …
//
// 1. Every rank loads, lowers and places the same graph under the same plan (all deterministic,
//    so every rank computes the same schedule; nothing about the plan is sent). Without
//    --target the devices are rank:0 … rank:N-1 (the cpu-local preset's device type, renamed);
//    with one, its device count must equal the number of ranks.
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
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>

#include "command.h"
#include "graph_input.h"
#include "run_common.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/target.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/split_reduction.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/memory_budget.h"
#include "tapestry/runtime/mpi_executor.h"
#include "tapestry/runtime/rank_metrics.h"
#include "tapestry/support/error.h"
#include "tensor_files.h"

namespace tapestry::cli {

namespace {

// N devices rank:0 … rank:N-1 of the cpu-local preset's device type.
cost::Target rank_target(std::uint32_t ranks) {
  cost::Target target = *cost::preset_target("cpu-local");
  target.name = fmt::format("{} MPI ranks", ranks);
  target.about = "the ranks of an MPI job, each priced as one cpu-local hardware thread";
  target.device_types.resize(1);
  target.device_types[0].name = "rank";
  target.device_types[0].kind = "rank";
  target.devices.clear();
  for (std::uint32_t i = 0; i < ranks; ++i) {
    target.devices.push_back({.name = fmt::format("rank:{}", i), .type = 0, .node = 0, .index = i});
  }
  target.mesh.clear();
  return target;
}

// The placement's transfers between devices as messages between ranks; loads from and gathers
// to the host are not messages (inputs: step 2 above; outputs: the executor gathers them).
runtime::RankSchedule schedule_of(const cost::Placement& placement, const cost::Target& target) {
  runtime::RankSchedule schedule;
  for (const cost::Device& d : target.devices) schedule.rank_names.push_back(d.name);
  for (const cost::PlacedApplication& a : placement.applications) schedule.rank_of[a.id] = a.device;
  for (const cost::Transfer& t : placement.transfers) {
    if (t.from == cost::kHost || t.to == cost::kHost) continue;
    // A replicated output's share that nothing reads (Transfer::replicates_output): not sent —
    // the executor gathers every output on rank 0, as without "outputs" (docs/distributed.md).
    if (t.consumers.empty()) continue;
    runtime::RankMessage m{.tensor = t.tensor,
                           .box = t.box,
                           .from = t.from,
                           .to = t.to,
                           .producer = placement.applications[t.producer].id};
    for (std::uint32_t c : t.consumers) m.consumers.push_back(placement.applications[c].id);
    schedule.messages.push_back(std::move(m));
  }
  return schedule;
}

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
  bool reduction_split = false;
  cost::Target target;
  runtime::RankSchedule schedule;
  // The kernel sets, as the in-process run builds them (kernel_sources.h: built-ins, plugins,
  // kernel-file bodies); the executor points at one of them.
  runtime::ExecutableKernels reference;
  runtime::ExecutableKernels fast;
  std::unique_ptr<runtime::MpiExecutor> executor;
  runtime::BufferMap inputs;      // the graph's, keyed by its tensors (rank 0 with --verify: all)
  runtime::BufferMap run_inputs;  // what this rank's applications read, keyed by the lowered graph
  std::optional<runtime::Oracle> oracle;
};

std::unique_ptr<Setup> prepare(const RunOptions& options, const runtime::MpiSession& mpi) {
  auto s = std::make_unique<Setup>();
  const bool exact = options.verify == "exact";
  const bool rank0 = mpi.rank() == 0;
  s->signatures = load_signatures(options.kernel_sources);
  s->graph = load_graph(options.graph, s->signatures, options.trust_ipfs);
  const rewrite::Plan plan =
      load_plan(s->graph, options.plan, options.splits, options.ignore_placement);
  if (rank0) {
    if (!options.outputs.empty())
      check_output_files(s->graph, options.outputs, runtime::graph_outputs(s->graph));
    check_writable_file("--metrics", options.metrics);
    check_writable_file("--trace", options.trace);
  }
  s->lowered = rewrite::lower(s->graph, plan,
                              {.driver = {},
                               .validate = true,
                               .check_kernels = !options.trust_ipfs,
                               .signatures = &s->signatures});
  for (const rewrite::RewriteEvent& e : s->lowered.log)
    s->reduction_split |= e.applied && e.pattern == rewrite::kSplitReduction;
  s->target =
      options.target.empty() ? rank_target(mpi.size()) : cost::resolve_target(options.target);
  if (s->target.devices.size() != mpi.size()) {
    throw Error(
        fmt::format("--target {} has {} devices, so the job needs {} ranks; it has {} "
                    "(mpirun -np {})",
                    options.target, s->target.devices.size(), s->target.devices.size(), mpi.size(),
                    s->target.devices.size()));
  }
  cost::Placement placement;
  try {
    placement = cost::place(s->lowered.graph, s->lowered.plan, s->target);
  } catch (const Error& e) {
    throw e.with_context(options.plan.empty() ? "--split" : options.plan);
  }
  s->schedule = schedule_of(placement, s->target);
  s->reference = load_executable_kernels(options.kernel_sources, s->signatures,
                                         runtime::KernelSet::kReference);
  s->fast =
      load_executable_kernels(options.kernel_sources, s->signatures, runtime::KernelSet::kFast);
  const runtime::ExecutableKernels& kernels = options.reference_kernels ? s->reference : s->fast;
  s->executor = std::make_unique<runtime::MpiExecutor>(
      mpi, s->lowered.graph, s->schedule,
      runtime::MpiExecutorOptions{.threads = options.threads > 0 ? options.threads : 1,
                                  .kernels = &kernels,
                                  .memory_limit_bytes = options.memory_limit.empty()
                                                            ? 0
                                                            : parse_byte_size(options.memory_limit),
                                  .collectives = collective_use(options.collectives)});

  // Step 2: the boxes of the inputs this rank reads, each straight from its file or generated
  // alone (rank 0 also every input whole for --verify).
  if (rank0 && !options.verify.empty()) {
    const std::vector<ir::TensorId> all = runtime::graph_inputs(s->graph);
    s->inputs = options.inputs.empty()
                    ? runtime::generate_inputs(s->graph, {.seed = options.seed, .exact = exact})
                    : read_tensor_files(s->graph, options.inputs, all, "input");
  }
  if (exact && rank0) {
    s->oracle = runtime::evaluate_oracle(s->graph, s->inputs, {.kernels = &s->fast});
    if (!s->oracle->exact_reason.empty())
      throw Error(fmt::format("--verify=exact does not apply: {}", s->oracle->exact_reason));
  }
  for (const runtime::NeededInput& need : s->executor->inputs_needed()) {
    const std::string name = runtime::tensor_name(s->lowered.graph, need.tensor);
    const ir::TensorId mine = runtime::find_tensor(s->graph, name);
    s->run_inputs.emplace(need.tensor,
                          options.inputs.empty()
                              ? runtime::generate_box(runtime::tensor_dtype(s->graph, mine),
                                                      s->graph.tensor(mine).range(), need.box,
                                                      options.seed, name, exact)
                              : read_tensor_box(s->graph, options.inputs, mine, need.box, "input"));
  }
  if (!rank0 || options.verify.empty()) s->inputs.clear();
  return s;
}

// Step 3 (collective): rank 0 prints the failure, as main prints an Error, and the others exit
// 2 quietly — but only after rank 0 has printed. mpirun ends the whole job as soon as one rank
// exits non-zero; were rank 0 to leave the printing to main (after MPI_Finalize, while unwinding),
// another rank's exit could kill it first and the job would fail with exit 2 and no message (seen
// under load: 4 runs in 30 with the cores busy).
int fail(const runtime::MpiSession& mpi, const runtime::RankFailure& failure, const Setup* setup) {
  if (mpi.rank() == 0) {
    const std::string name = setup != nullptr && failure.rank < setup->schedule.rank_names.size()
                                 ? fmt::format(" ({})", setup->schedule.rank_names[failure.rank])
                                 : "";
    fmt::print(stderr, "tapestry run: error: rank {}{}: {}\n", failure.rank, name, failure.message);
    std::fflush(stderr);
  }
  mpi.barrier();
  return kExitBadInput;
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
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  runtime::MpiExecutor::Result& run = runs[runs.size() / 2].second;

  const std::vector<std::string> reports =
      mpi.gather(runtime::rank_metrics_json(run.metrics).dump());
  if (mpi.rank() != 0) return kExitOk;
  std::vector<nlohmann::json> ranks;
  for (const std::string& text : reports) ranks.push_back(nlohmann::json::parse(text));
  const nlohmann::json merged = runtime::merge_rank_metrics(ranks);
  fmt::print(
      "ran {} applications of {} operations (mpi executor: {} ranks × {} thread{}, {} "
      "kernels)\n",
      setup->lowered.graph.applications().size(), setup->lowered.graph.operations().size(),
      mpi.size(), std::max(1, options.threads), options.threads > 1 ? "s" : "",
      options.reference_kernels ? "reference" : "fast");
  fmt::print("{}", runtime::rank_summary_table(merged));
  const runtime::BufferMap results = outputs_of(setup->graph, setup->lowered.graph, run.outputs);
  return verify_and_write(setup->graph, setup->inputs, results, std::move(setup->oracle),
                          setup->reduction_split, options, merged.dump(1) + "\n",
                          runtime::merge_rank_traces(ranks).dump() + "\n", &setup->reference,
                          &setup->fast);
}

}  // namespace tapestry::cli
