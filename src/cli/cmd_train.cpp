// `tapestry train`: run a training step N times, carrying its state (docs/training.md, "The
// training loop").
//
//   tapestry train step.tap --steps 100 --data data/ --state init/ --state-out trained/
//   tapestry train step.tap --steps 100 --data data/ --state ckpt/ --checkpoint-every 10
//   tapestry launch -n 2 train step.tap --steps 100 --data data/ --state s/ --executor mpi
//
// The graph's inputs are STATE (updated by the step: `update W <- Wn`, JSON "updates", or
// --update W=Wn), DATA (DIR/<input>.npy of --data, N_total rows, fed a batch of the input's dim 0
// per step, shuffled per epoch by --seed or --in-order) and the optional STEP input (a rank-0
// integer named `step`, fed the 1-based global step). The state comes from --state DIR
// (DIR/<input>.npy and DIR/train.json, the steps done: a resumed run continues there) and is
// written, atomically, to --state-out (default: --state) every --checkpoint-every steps and at
// the end. The step is lowered and its executor built once (workflow/train.h), then run N times.
//
// Under MPI (--executor mpi, in a `tapestry launch` job) every rank reads the data and the
// state whole and cuts the boxes its applications read; rank 0 receives the step's outputs and
// broadcasts the next state and the loss, so every rank carries the same state; rank 0 alone
// prints and writes.
#include <fmt/core.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/application_executor.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/mpi_executor.h"
#include "tapestry/runtime/npy.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/workflow/mpi.h"
#include "tapestry/workflow/run.h"
#include "tapestry/workflow/train.h"

namespace tapestry::cli {

namespace {

namespace fs = std::filesystem;

struct TrainOptions {
  std::string graph;
  std::vector<std::string> dims;  // --dim NAME=N
  std::int64_t steps = 0;
  std::string data;
  std::string plan;
  std::vector<std::string> splits;
  std::string state;
  std::string state_out;
  std::int64_t checkpoint_every = 0;
  std::string metrics;
  std::string loss;
  std::string step_input;
  std::vector<std::string> updates;
  std::uint64_t seed = 0;
  bool in_order = false;
  std::string executor = "block";
  int threads = 0;
  std::string kernels = "fast";
  std::int64_t log_every = 1;
  bool quiet = false;
  KernelSources kernel_sources;
};

// The step function of each executor, built once. Holds what the executors point into.
class StepRunner {
 public:
  StepRunner(const ir::Graph& graph, const rewrite::Plan& plan, const TrainOptions& options,
             const metakernel::SignatureRegistry& signatures, const runtime::MpiSession* mpi)
      : graph_(graph),
        lowered_(workflow::lower_for_run(graph, plan, {.signatures = &signatures})),
        kernels_(load_executable_kernels(options.kernel_sources, signatures,
                                         options.kernels == "reference"
                                             ? runtime::KernelSet::kReference
                                             : runtime::KernelSet::kFast)),
        mpi_(mpi) {
    if (options.executor == "block") {
      block_ = std::make_unique<runtime::BlockExecutor>(
          lowered_.graph,
          runtime::BlockExecutorOptions{.threads = options.threads, .kernels = &kernels_});
    } else if (options.executor == "application") {
      application_ = std::make_unique<runtime::ApplicationExecutor>(lowered_.graph, kernels_);
    } else {
      mpi_plan_ = workflow::prepare_mpi(lowered_, "", mpi->size(),
                                        options.plan.empty() ? "--split" : options.plan);
      mpi_executor_ = std::make_unique<runtime::MpiExecutor>(
          *mpi, lowered_.graph, mpi_plan_.schedule,
          runtime::MpiExecutorOptions{.threads = options.threads > 0 ? options.threads : 1,
                                      .kernels = &kernels_});
    }
  }

  [[nodiscard]] std::size_t applications() const { return lowered_.graph.applications().size(); }

  // Runs one step on the graph's inputs; its outputs keyed by the graph's tensors (under MPI:
  // on every rank, those `wanted` broadcast from rank 0).
  runtime::BufferMap run(runtime::BufferMap inputs, const std::vector<ir::TensorId>& wanted) {
    if (block_) return results(block_->run(workflow::lowered_inputs(lowered_, std::move(inputs))));
    if (application_) {
      return results(application_->run(workflow::lowered_inputs(lowered_, std::move(inputs))));
    }
    runtime::BufferMap boxes;
    for (const runtime::NeededInput& need : mpi_executor_->inputs_needed()) {
      const std::optional<ir::TensorId> original = lowered_.original(need.tensor);
      TAPESTRY_ASSERT(original.has_value(), "the MPI executor needs an input of the graph");
      boxes.emplace(need.tensor, copy_box(inputs.at(*original), need.box));
    }
    runtime::MpiExecutor::Result result = mpi_executor_->run(std::move(boxes));
    if (result.failure) {
      throw Error(fmt::format("rank {}: {}", result.failure->rank, result.failure->message));
    }
    runtime::BufferMap outputs;
    if (mpi_->rank() == 0) outputs = results(std::move(result.outputs));
    // Rank 0 sends the next state and the loss to every rank: one message of .npy files.
    std::string packed;
    if (mpi_->rank() == 0) {
      for (ir::TensorId t : wanted) {
        const std::string npy = runtime::format_npy(outputs.at(t));
        packed += fmt::format("{}\n", npy.size()) + npy;
      }
    }
    packed = mpi_->broadcast(packed);
    if (mpi_->rank() == 0) return outputs;
    std::size_t at = 0;
    for (ir::TensorId t : wanted) {
      const std::size_t eol = packed.find('\n', at);
      const std::size_t size = std::stoull(packed.substr(at, eol - at));
      runtime::Buffer b = runtime::parse_npy(std::string_view(packed).substr(eol + 1, size),
                                             "the state from rank 0");
      outputs.emplace(t, std::move(b).relocated(graph_.tensor(t).range().start()));
      at = eol + 1 + size;
    }
    return outputs;
  }

 private:
  runtime::BufferMap results(runtime::BufferMap buffers) {
    return workflow::graph_results(graph_, lowered_, std::move(buffers));
  }

  // The cells of `box` (tensor coordinates) of a whole tensor's buffer, as their own buffer.
  static runtime::Buffer copy_box(const runtime::Buffer& whole, const zspace::Range& box) {
    runtime::Buffer out(whole.dtype(), box, runtime::Buffer::Uninitialized{});
    const std::size_t rank = box.rank();
    const std::size_t element = ir::dtype_size_bytes(whole.dtype());
    if (box.size() == 0) return out;
    if (rank == 0) {
      std::memcpy(out.bytes(), whole.bytes(), element);
      return out;
    }
    const zspace::Point shape = box.shape();
    const std::size_t run = static_cast<std::size_t>(shape[rank - 1]) * element;
    const std::int64_t rows = box.size() / shape[rank - 1];
    std::vector<std::int64_t> p(box.start().begin(), box.start().begin() + rank);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t offset = 0;  // element offset of p in `whole`
      for (std::size_t d = 0; d < rank; ++d)
        offset += (p[d] - whole.range().start()[d]) * whole.strides()[d];
      std::memcpy(out.bytes() + static_cast<std::size_t>(r) * run,
                  whole.bytes() + static_cast<std::size_t>(offset) * element, run);
      for (std::size_t d = rank - 1; d-- > 0;) {  // the next row: odometer over dims 0 … rank-2
        if (++p[d] < box.end()[d]) break;
        p[d] = box.start()[d];
      }
    }
    return out;
  }

  const ir::Graph& graph_;
  rewrite::LowerResult lowered_;
  runtime::ExecutableKernels kernels_;
  const runtime::MpiSession* mpi_;
  std::unique_ptr<runtime::BlockExecutor> block_;
  std::unique_ptr<runtime::ApplicationExecutor> application_;
  workflow::MpiPlan mpi_plan_;
  std::unique_ptr<runtime::MpiExecutor> mpi_executor_;
};

void check_options(const TrainOptions& options) {
  if (options.steps < 0) throw Error("--steps must be 0 or more");
  if (options.kernels != "fast" && options.kernels != "reference") {
    throw Error(fmt::format("--kernels {}: expected fast or reference", options.kernels));
  }
  if (options.executor != "block" && options.executor != "application" &&
      options.executor != "mpi") {
    throw Error(fmt::format("--executor {}: expected block, application or mpi", options.executor));
  }
  if (options.state.empty() && options.state_out.empty()) {
    throw Error(
        "--state DIR is needed (the state's initial values; written back unless "
        "--state-out says where)");
  }
  if (options.state.empty()) throw Error("--state-out needs --state (the initial values)");
  if (options.checkpoint_every < 0) throw Error("--checkpoint-every must be 0 or more");
  if (options.log_every < 1) throw Error("--log-every must be 1 or more");
}

std::map<std::string, runtime::Buffer> read_data_dir(const ir::Graph& graph,
                                                     const workflow::TrainRoles& roles,
                                                     const std::string& dir) {
  std::map<std::string, runtime::Buffer> arrays;
  for (ir::TensorId t : roles.data) {
    const std::string name = runtime::tensor_name(graph, t);
    const fs::path path = fs::path(dir) / workflow::state_file_name(name);
    if (!fs::is_regular_file(path)) {
      throw Error(
          fmt::format("{}: missing: no data for input {} ({} is a data input: neither "
                      "updated state nor the step input)",
                      path.string(), name, name));
    }
    arrays.emplace(name, runtime::read_npy(path));
  }
  return arrays;
}

// The per-step line: in place on a terminal, a plain line per --log-every steps otherwise.
class LossPrinter {
 public:
  LossPrinter(std::int64_t last_step, const TrainOptions& options)
      : last_(last_step),
        every_(options.log_every),
        quiet_(options.quiet),
        terminal_(::isatty(STDOUT_FILENO) != 0) {}
  ~LossPrinter() { finish(); }
  // Ends the in-place line (before anything else is printed).
  void finish() {
    if (drawn_) std::fputc('\n', stdout);
    drawn_ = false;
  }
  void step(const workflow::StepReport& r) {
    if (quiet_) return;
    if (terminal_) {
      fmt::print("\r[train] step {}/{}  loss {:.6g}  {:.3f} s/step   ", r.step, last_, r.loss,
                 r.seconds);
      std::fflush(stdout);
      drawn_ = true;
    } else if (r.step % every_ == 0 || r.step == last_) {
      fmt::print("step {} loss {:.8g}\n", r.step, r.loss);
    }
  }

 private:
  std::int64_t last_;
  std::int64_t every_;
  bool quiet_;
  bool terminal_;
  bool drawn_ = false;
};

// Everything before the first step: the graph, its roles, the data and state read and checked,
// the step compiled.
struct Setup {
  metakernel::SignatureRegistry signatures;
  ir::Graph graph;
  workflow::TrainRoles roles;
  workflow::TrainData data;
  runtime::BufferMap state;
  std::int64_t start = 0;
  std::unique_ptr<std::ofstream> metrics;
  std::unique_ptr<StepRunner> runner;
};

std::unique_ptr<Setup> prepare(const TrainOptions& options, const runtime::MpiSession* mpi,
                               bool writer) {
  auto setup = std::make_unique<Setup>();
  Setup& s = *setup;
  s.signatures = load_signatures(options.kernel_sources);
  const metakernel::SignatureRegistry& signatures = s.signatures;
  s.graph = load_graph(options.graph, signatures, false, options.dims);
  ir::Graph& graph = s.graph;
  workflow::RoleOptions role_options{.step_input = options.step_input, .loss = options.loss};
  for (const std::string& u : options.updates) {
    const std::size_t eq = u.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == u.size()) {
      throw Error(fmt::format("--update {}: expected STATE=NEXT (--update W1=W1n)", u));
    }
    role_options.extra_updates.emplace_back(u.substr(0, eq), u.substr(eq + 1));
  }
  s.roles = workflow::train_roles(graph, role_options);
  const workflow::TrainRoles& roles = s.roles;
  const rewrite::Plan plan = load_plan(graph, options.plan, options.splits, false);

  // Every input error before any work: data, state, where results go.
  if (!roles.data.empty() && options.data.empty()) {
    throw Error(fmt::format("--data DIR is needed: the graph has data inputs ({})",
                            runtime::tensor_name(graph, roles.data.front())));
  }
  s.data = workflow::check_data(graph, roles, read_data_dir(graph, roles, options.data),
                                "--data " + options.data);
  auto [state, cursor] = workflow::read_state_dir(graph, roles, options.state);
  s.state = std::move(state);
  s.start = cursor ? cursor->step : 0;
  if (cursor &&
      (cursor->shuffle == options.in_order || (cursor->shuffle && cursor->seed != options.seed))) {
    const std::string given =
        cursor->shuffle ? fmt::format("--seed {}", cursor->seed) : std::string("--in-order");
    throw Error(
        fmt::format("{}/train.json: this state was trained with {}; resume with {} (the "
                    "same batches)",
                    options.state, given, given));
  }
  if (writer && !options.metrics.empty()) {
    s.metrics = std::make_unique<std::ofstream>(options.metrics, std::ios::trunc);
    if (!*s.metrics) throw Error(fmt::format("--metrics {}: cannot write", options.metrics));
  }
  s.runner = std::make_unique<StepRunner>(graph, plan, options, signatures, mpi);
  return setup;
}

int run_train(TrainOptions& options) {
  check_options(options);
  std::unique_ptr<runtime::MpiSession> mpi;
  if (options.executor == "mpi") mpi = std::make_unique<runtime::MpiSession>();
  const bool writer = mpi == nullptr || mpi->rank() == 0;
  std::unique_ptr<Setup> setup;
  if (!mpi) {
    setup = prepare(options, nullptr, true);
  } else {
    // Setup errors on any rank are agreed on before any step (as `run --executor mpi` does).
    std::optional<std::string> error;
    try {
      setup = prepare(options, mpi.get(), writer);
    } catch (const Error& e) {
      error = e.what();
    }
    if (const auto failure = mpi->agree(error)) {
      if (writer) {
        fmt::print(stderr, "tapestry train: error: rank {}: {}\n", failure->rank, failure->message);
        std::fflush(stderr);
      }
      mpi->barrier();
      return kExitBadInput;
    }
  }
  const ir::Graph& graph = setup->graph;
  const workflow::TrainRoles& roles = setup->roles;
  const std::int64_t start = setup->start;
  StepRunner& runner = *setup->runner;
  std::unique_ptr<std::ofstream>& metrics = setup->metrics;
  const fs::path out_dir = options.state_out.empty() ? options.state : options.state_out;
  std::vector<ir::TensorId> wanted{roles.loss};
  for (const ir::StateUpdate& u : roles.updates) wanted.push_back(u.next);
  const workflow::StepFunction step = [&](runtime::BufferMap inputs) {
    return runner.run(std::move(inputs), wanted);
  };
  const std::int64_t last = start + options.steps;
  LossPrinter printer(last, options);
  const auto checkpoint = [&](std::int64_t steps_done, const runtime::BufferMap& s) {
    workflow::write_state_dir(
        graph, roles, s, {.step = steps_done, .seed = options.seed, .shuffle = !options.in_order},
        out_dir);
  };
  workflow::TrainLoop loop{.steps = options.steps,
                           .start_step = start,
                           .seed = options.seed,
                           .shuffle = !options.in_order};
  loop.on_step = [&](const workflow::StepReport& r, const runtime::BufferMap& s) {
    if (!writer) return;
    printer.step(r);
    if (metrics) {
      *metrics << nlohmann::json{{"step", r.step}, {"loss", r.loss}, {"seconds", r.seconds}}.dump()
               << "\n";
      metrics->flush();
    }
    if (options.checkpoint_every > 0 && r.step % options.checkpoint_every == 0 && r.step != last) {
      checkpoint(r.step, s);
    }
  };
  const auto began = std::chrono::steady_clock::now();
  const workflow::TrainResult result =
      workflow::run_training(graph, roles, setup->data, std::move(setup->state), step, loop);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (!writer) return kExitOk;
  checkpoint(last, result.state);
  printer.finish();
  if (!options.quiet) {
    fmt::print(
        "trained steps {}…{} in {:.4f} s ({} applications a step, {} executor, {} "
        "kernels); state written to {}\n",
        start + 1, last, seconds, runner.applications(), options.executor, options.kernels,
        out_dir.string());
  }
  return kExitOk;
}

}  // namespace

void register_train(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Run a training step N times, carrying its state (docs/training.md)");
  cmd->add_option("graph", options->graph,
                  "the training step: a .tap program or loom JSON whose updates say which "
                  "result updates which input")
      ->required();
  cmd->add_option("--steps", options->steps, "steps to run (after those the state has done)")
      ->required();
  cmd->add_option("--data", options->data,
                  "DIR/<input>.npy for every data input (every input that is not state or the "
                  "step): N rows each, fed a batch of the input's dim 0 per step");
  cmd->add_option("--plan", options->plan, "a plan file (JSON; see docs/rewrites.md)");
  cmd->add_option("--split", options->splits, "shorthand for one split: OP.DIM=N (repeatable)");
  cmd->add_option("--state", options->state,
                  "DIR/<input>.npy for every state input, and DIR/train.json (steps done) when "
                  "resuming");
  cmd->add_option("--state-out", options->state_out,
                  "where the state is written (default: --state), atomically");
  cmd->add_option("--checkpoint-every", options->checkpoint_every,
                  "write the state every K steps too (default: only at the end)");
  cmd->add_option("--metrics", options->metrics,
                  "write one JSON object per step to FILE: {\"step\", \"loss\", \"seconds\"}");
  cmd->add_option("--loss", options->loss,
                  "the output to report as the loss (default: the only rank-0 float output)");
  cmd->add_option("--step-input", options->step_input,
                  "the rank-0 integer input fed the 1-based step number (default: `step` if the "
                  "graph has one)");
  cmd->add_option("--update", options->updates,
                  "STATE=NEXT: NEXT's value becomes input STATE's after each step, beside the "
                  "graph's own updates (repeatable)");
  cmd->add_option("--seed", options->seed, "seed of the per-epoch shuffle of the data rows");
  cmd->add_flag("--in-order", options->in_order, "no shuffle: batches in row order");
  cmd->add_option("--executor", options->executor,
                  "block (default), application (sequential) or mpi (under `tapestry launch`)");
  cmd->add_option("--threads", options->threads,
                  "block executor threads (default: all cores); with mpi, per rank (default 1)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--kernels", options->kernels, "fast (default) or reference");
  add_kernel_source_options(*cmd, options->kernel_sources, /*trap_kernels=*/false);
  add_dim_option(*cmd, options->dims);
  cmd->add_option("--log-every", options->log_every,
                  "when stdout is not a terminal: a loss line every N steps (default 1)");
  cmd->add_flag("--quiet", options->quiet, "no loss lines, no summary");
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "train";
    dispatch.run = [options] { return run_train(*options); };
  });
}

}  // namespace tapestry::cli
