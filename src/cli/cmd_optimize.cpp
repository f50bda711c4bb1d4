// `tapestry optimize`: search the plan space of a graph on a target for the Pareto front.
//
//   tapestry optimize examples/mlp.tap --target h100x8 --objectives time,memory -o front.json
//   tapestry optimize model.tap --target h100x8 --max-memory-per-device 40G --seed 3
//       --time-budget 30 -o front.json --best time --plan-out best.json --plot front.svg
//
// Prices plans with the cost model (cost/evaluator.h), keeps the feasible ones no other beats on
// every objective (search/archive.h), improves them by mutations (search/mutate.h), in parallel
// and deterministically for a seed and an evaluation budget (search/optimize.h). Prints the
// front; -o writes it as JSON (each plan with its CostVector), --plan-out the best plan for
// --best as a plan file `run`, `cost` and `explain` accept, --plot the front as SVG (2-D
// projections, every point named). Exit 0; 1 when no plan meets the constraints; 2 on bad input.
//
// With --mpi (or under `tapestry launch -n N -- optimize …`, which adds it) every rank of the
// MPI job searches as one island (search/islands.h): its own stream and share of the budget,
// meeting the others every --migrate-every generations; rank 0 prints and writes the merged
// front — and, every --checkpoint-every seconds, the front so far and the merged checkpoint, so
// a job killed by a rank's death leaves both whole. TAPESTRY_TEST_OPTIMIZE_DIE=R:N (tests only)
// makes rank R abort at its N-th meeting.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "optimize_options.h"
#include "tapestry/runtime/mpi_executor.h"
#include "tapestry/search/front_plot.h"
#include "tapestry/search/islands.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"

namespace tapestry::cli {

namespace {

struct OptimizeCliOptions {
  std::string graph;
  std::vector<std::string> dims;  // --dim NAME=N
  std::string target;
  SearchOptions search;
  std::string output;
  std::string best = "time";
  std::string plan_out;
  std::string plot;
  std::string trace;
  std::string checkpoint;
  double checkpoint_every_s = 5;
  std::string resume;
  KernelSources kernel_sources;
  bool trust_ipfs = false;
  bool mpi = false;
  std::uint64_t migrate_every = 4;
};

// The islands of `optimize --mpi` meet by MpiSession's posts.
class MpiIslands final : public search::IslandLink {
 public:
  explicit MpiIslands(runtime::MpiSession& mpi) : mpi_(mpi) {
    // TAPESTRY_TEST_OPTIMIZE_DIE=R:N: rank R aborts at its N-th meeting (tests only).
    if (const char* value = std::getenv("TAPESTRY_TEST_OPTIMIZE_DIE")) {
      const std::string text(value);
      const std::size_t colon = text.find(':');
      if (colon != std::string::npos && text.substr(0, colon) == std::to_string(mpi.rank())) {
        die_at_ = std::stoull(text.substr(colon + 1));
      }
    }
  }
  [[nodiscard]] std::uint32_t rank() const override { return mpi_.rank(); }
  [[nodiscard]] std::uint32_t ranks() const override { return mpi_.size(); }
  void post(const std::string& text) override {
    if (die_at_ > 0 && ++meetings_ == die_at_) {
      fmt::print(stderr, "tapestry optimize: rank {} aborts (TAPESTRY_TEST_OPTIMIZE_DIE)\n",
                 mpi_.rank());
      std::fflush(stderr);
      std::abort();
    }
    mpi_.post(text);
  }
  std::vector<std::string> collect() override { return mpi_.collect(); }

 private:
  runtime::MpiSession& mpi_;
  std::uint64_t die_at_ = 0;
  std::uint64_t meetings_ = 0;
};

constexpr double kDefaultBudgetS = 10;

void print_front(const search::OptimizeResult& r, search::Objective best) {
  const auto& objectives = r.archive.objectives();
  std::string header = fmt::format("  {:<6}", "plan");
  for (search::Objective o : objectives) header += fmt::format("{:>14}", search::objective_name(o));
  fmt::print("{}\n", header);
  const search::ArchiveEntry* chosen = r.archive.best(best);
  for (std::size_t i = 0; i < r.archive.front().size(); ++i) {
    const search::ArchiveEntry& e = r.archive.front()[i];
    std::string line = fmt::format("  {:<6}", fmt::format("p{}", i));
    for (std::size_t k = 0; k < objectives.size(); ++k) {
      line += fmt::format("{:>14}", search::format_objective(objectives[k], e.score[k]));
    }
    if (&e == chosen) line += fmt::format("   ← best {}", search::objective_name(best));
    fmt::print("{}\n", line);
  }
}

// The yardstick: each standard plan's value on `best`, then the front's best against the best
// standard plan as a ratio.
void print_standard(const search::OptimizeResult& r, search::Objective best) {
  std::string line = "standard plans:";
  for (const search::StandardResult& s : r.standard) {
    if (!s.plan) {
      line += fmt::format("\n  {:<14} does not apply: {}", s.name, s.reason);
    } else if (!s.cost) {
      line += fmt::format("\n  {:<14} {}", s.name, s.reason);
    } else {
      line += fmt::format("\n  {:<14} {:>12}   {}{}", s.name,
                          search::format_objective(best, search::objective_value(*s.cost, best)),
                          s.summary, s.feasible() ? "" : fmt::format(" ({})", s.reason));
    }
  }
  fmt::print("{}\n", line);
  const search::StandardResult* yardstick = search::best_standard(r.standard, best);
  if (yardstick == nullptr) {
    fmt::print("no standard plan meets the constraints\n");
    return;
  }
  const double front = search::objective_value(r.archive.best(best)->cost, best);
  const double standard = search::objective_value(*yardstick->cost, best);
  fmt::print("best standard plan: {} {}; the front's best {} {}: ratio {} (standard / front)\n",
             yardstick->name, search::format_objective(best, standard),
             search::objective_name(best), search::format_objective(best, front),
             front > 0 ? fmt::format("{:.2f}", standard / front) : std::string("—"));
}

// The front as -o and --plan-out write it (at the end, and on rank 0 of an MPI search whenever
// the merged state is saved).
void write_front(const OptimizeCliOptions& options, const search::OptimizeResult& r,
                 search::Objective best, const std::string& target_name, bool say) {
  if (r.archive.front().empty()) return;
  if (!options.output.empty()) {
    write_file_atomically(options.output,
                          search::front_json(r, options.graph, target_name).dump(1) + "\n");
    if (say) fmt::print("wrote {}\n", options.output);
  }
  if (!options.plan_out.empty()) {
    write_file_atomically(options.plan_out, r.archive.best(best)->plan.to_json().dump(2) + "\n");
    if (say) {
      fmt::print("wrote {} (the best plan for {})\n", options.plan_out,
                 search::objective_name(best));
    }
  }
}

int run_optimize(const OptimizeCliOptions& options) {
  const search::Objective best = search::parse_objectives(options.best).at(0);
  // --mpi: every rank loads the same graph; a setup error (the same on every rank, or one rank's
  // own) is agreed on before the islands meet, and printed once, by rank 0.
  std::optional<runtime::MpiSession> mpi;
  std::optional<MpiIslands> islands;
  if (options.mpi) {
    mpi.emplace();
    islands.emplace(*mpi);
  }
  const bool rank0 = !mpi || mpi->rank() == 0;
  std::optional<std::string> error;
  metakernel::SignatureRegistry signatures;
  ir::Graph graph;
  cost::Target target;
  search::OptimizeOptions o;
  std::optional<SearchTrace> trace;
  try {
    signatures = load_signatures(options.kernel_sources);
    graph = load_graph(options.graph, signatures, options.trust_ipfs, options.dims);
    target = cost::resolve_target(options.target);
    SearchOptions search_options = options.search;
    // One pricing thread per rank unless told: the ranks share the host's cores.
    if (mpi && search_options.threads == 0) search_options.threads = 1;
    o = optimize_options(search_options, kDefaultBudgetS, signatures);
    o.checkpoint = options.checkpoint;
    o.checkpoint_every_s = options.checkpoint_every_s;
    o.resume = options.resume;
    if (mpi) search::check_resume(graph, target, o);
    if (!options.trace.empty() && rank0) trace.emplace(options.trace, o.objectives);
  } catch (const Error& e) {
    if (!mpi) throw;
    error = e.what();
  }
  if (mpi) {
    if (const std::optional<runtime::RankFailure> failure = mpi->agree(error)) {
      if (rank0) {
        fmt::print(stderr, "tapestry optimize: error: {}{}\n",
                   mpi->size() > 1 ? fmt::format("rank {}: ", failure->rank) : "",
                   failure->message);
        std::fflush(stderr);
      }
      mpi->barrier();  // rank 0 has printed before any rank exits (run_mpi.cpp says why)
      return kExitBadInput;
    }
    o.islands = &*islands;
    o.migrate_every = options.migrate_every;
    if (rank0) {
      o.on_merged = [&](const search::OptimizeResult& so_far) {
        write_front(options, so_far, best, target.name, false);
      };
    }
  }
  const search::OptimizeResult r = run_search(
      graph, target, std::move(o), options.search.quiet || !rank0, trace ? &*trace : nullptr);
  if (!rank0) return kExitOk;

  const search::Progress& p = r.progress;
  fmt::print(
      "priced {} plans in {:.1f} s ({:.0f}/s on this run{}; {} refused by the rewrites, {} over a "
      "constraint); stopped by {}\n",
      p.evaluations, p.seconds, p.evaluations_per_s,
      mpi ? fmt::format(", {} rank{}, {:.1f} s waiting at meetings", p.ranks,
                        p.ranks == 1 ? "" : "s", p.waiting_s)
          : "",
      p.refused, p.infeasible, r.stopped_by);
  if (!p.refusals.empty()) {
    // The three most frequent reasons (ties: in the order of their text).
    std::vector<std::pair<std::uint64_t, std::string>> reasons;
    for (const auto& [why, n] : p.refusals) reasons.emplace_back(n, why);
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; i < reasons.size() && i < 3; ++i) {
      fmt::print("  refused {}× {}\n", reasons[i].first, reasons[i].second);
    }
  }
  if (p.prefix_evaluations > 0) {
    fmt::print(
        "(and first {} plans of the graph's first layers, whose front seeded the search; that "
        "search stopped by {})\n",
        p.prefix_evaluations, p.prefix_stopped_by);
  }
  if (!p.unpriced_seeds.empty()) {
    fmt::print("the time budget ran out before {} of the seeds: {}\n", p.unpriced_seeds.size(),
               fmt::join(p.unpriced_seeds, ", "));
  }
  if (r.archive.front().empty()) {
    fmt::print("no plan meets the constraints\n");
    return kExitFailed;
  }
  fmt::print("front: {} plan{} on {}\n", r.archive.front().size(),
             r.archive.front().size() == 1 ? "" : "s", target.name);
  print_front(r, best);
  print_standard(r, best);
  write_front(options, r, best, target.name, true);
  if (!options.plot.empty()) {
    write_file_atomically(
        options.plot,
        search::front_svg(r.archive, fmt::format("{} on {}", options.graph, target.name)));
    fmt::print("wrote {}\n", options.plot);
  }
  return kExitOk;
}

}  // namespace

void register_optimize(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<OptimizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "optimize",
      "Search for the Pareto front of plans on a target (exit 0; 1 = no feasible plan; 2 = bad "
      "input)");
  cmd->add_option("graph", options->graph, "the graph: a .tap program or loom JSON")->required();
  cmd->add_option("--target", options->target,
                  "a target: a preset name (cpu-local, h100x8, …) or a target JSON file")
      ->required();
  add_search_options(cmd, options->search);
  cmd->add_option("-o,--output", options->output, "write the front as JSON");
  cmd->add_option("--best", options->best,
                  "the objective --plan-out chooses by: time (default), memory, devices, energy")
      ->check(CLI::IsMember({"time", "memory", "devices", "energy"}));
  cmd->add_option("--plan-out", options->plan_out,
                  "write the front's best plan for --best as a plan file");
  cmd->add_option("--plot", options->plot, "draw the front (2-D projections) as SVG");
  cmd->add_option("--trace", options->trace,
                  "write the best value of each objective over time as CSV (a line whenever one "
                  "improves): seconds,evaluations,front,time_s,…");
  cmd->add_option("--checkpoint", options->checkpoint,
                  "save the search's state to FILE periodically and at the end");
  cmd->add_option("--checkpoint-every", options->checkpoint_every_s,
                  "seconds between checkpoints (default 5)")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--resume", options->resume,
                  "continue the search saved in FILE (same graph, target and settings)");
  add_kernel_source_options(*cmd, options->kernel_sources);
  add_dim_option(*cmd, options->dims);
  cmd->add_flag("--trust-ipfs", options->trust_ipfs, kTrustIpfsHelp);
  cmd->add_flag("--mpi", options->mpi,
                "search on every rank of an MPI job, one island each, merged on rank 0 "
                "(tapestry launch -n N -- optimize … adds it)");
  cmd->add_option("--migrate-every", options->migrate_every,
                  "with --mpi: generations between the islands' exchanges of plans (default 4)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
  cmd->callback([&dispatch, options] {
    dispatch.name = "optimize";
    dispatch.run = [options] { return run_optimize(*options); };
  });
}

}  // namespace tapestry::cli
