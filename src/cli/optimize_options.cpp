#include "optimize_options.h"

#include <fmt/core.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "tapestry/support/error.h"

namespace tapestry::cli {

void add_search_options(CLI::App* cmd, SearchOptions& options) {
  cmd->add_option("--objectives", options.objectives,
                  "what to minimise, comma-separated: time, memory, devices, energy (default: all "
                  "four)");
  cmd->add_option("--max-memory-per-device", options.max_memory_per_device,
                  "a constraint: no device's peak memory above SIZE (512M, 40G); plans over it "
                  "are never in the front");
  cmd->add_option("--max-devices", options.max_devices,
                  "a constraint: plans using more devices are never in the front")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  cmd->add_option("--seed", options.seed, "the search's random seed (default 0)");
  cmd->add_option("--threads", options.threads,
                  "pricing threads (default: all cores); the result does not depend on it")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--time-budget", options.time_budget_s,
                  "stop after S seconds of wall time, abandoning the pricings under way "
                  "(default: 10 when --max-evals is not given either)")
      ->check(CLI::Range(0.001, 1e7));
  cmd->add_option("--max-evals", options.max_evals,
                  "stop after pricing N plans (deterministic: the same front on any machine)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  CLI::Option* tie = cmd->add_flag(
      "--tie-layers", options.tie_layers,
      "repeated layers (names equal but for their digits, same kernel and shape) share "
      "one decision");
  cmd->add_option("--prefix-patience", options.prefix_patience,
                  fmt::format("with --tie-layers: the search of the first layers ends when N "
                              "plans in a row (every rank's) improved none of its best values, "
                              "or at a quarter of the budget (default {}; 0: at the quarter)",
                              options.prefix_patience))
      ->needs(tie);  // a no-op without it: an error, not silently accepted
  cmd->add_flag("--quiet", options.quiet, "no progress line on stderr");
}

search::OptimizeOptions optimize_options(const SearchOptions& options, double default_budget_s,
                                         const metakernel::SignatureRegistry& signatures) {
  search::OptimizeOptions o;
  o.objectives = search::parse_objectives(options.objectives);
  if (!options.max_memory_per_device.empty()) {
    o.constraints.max_memory_per_device =
        search::parse_byte_size(options.max_memory_per_device, "--max-memory-per-device");
  }
  o.constraints.max_devices = options.max_devices;
  o.seed = options.seed;
  o.threads = options.threads;
  o.time_budget_s = options.time_budget_s;
  o.max_evaluations = options.max_evals;
  if (o.time_budget_s <= 0 && o.max_evaluations == 0) o.time_budget_s = default_budget_s;
  o.tie_layers = options.tie_layers;
  o.prefix_patience = options.prefix_patience;
  o.lower.signatures = &signatures;
  return o;
}

SearchTrace::SearchTrace(const std::string& path, std::vector<search::Objective> objectives)
    : file_(std::fopen(path.c_str(), "w")), path_(path), objectives_(std::move(objectives)) {
  if (file_ == nullptr) {
    throw Error(fmt::format("cannot write the trace {}: {}", path, std::strerror(errno)));
  }
  std::string header = "seconds,evaluations,front";
  for (search::Objective o : objectives_) {
    const std::string_view name = search::objective_name(o);
    const std::string_view unit = search::objective_unit(o);
    header += name == unit ? fmt::format(",{}", name) : fmt::format(",{}_{}", name, unit);
  }
  fmt::print(file_, "{}\n", header);
  std::fflush(file_);
}

SearchTrace::~SearchTrace() {
  std::fclose(file_);
  if (!keep_) std::remove(path_.c_str());
}

void SearchTrace::record(const search::Progress& p) {
  if (p.best == last_) return;
  record_end(p);
}

void SearchTrace::record_end(const search::Progress& p) {
  if (p.best.empty()) return;
  last_ = p.best;
  std::string line = fmt::format("{:.3f},{},{}", p.seconds, p.evaluations, p.front_size);
  for (double v : p.best) line += fmt::format(",{:.9g}", v);
  fmt::print(file_, "{}\n", line);
  std::fflush(file_);
}

search::OptimizeResult run_search(const ir::Graph& graph, const cost::Target& target,
                                  search::OptimizeOptions options, bool quiet, SearchTrace* trace) {
  const bool draw = !quiet && isatty(fileno(stderr)) != 0;
  bool drawn = false;
  auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const std::vector<search::Objective> objectives = options.objectives;
  if (draw || trace != nullptr) {
    options.on_progress = [&](const search::Progress& p) {
      if (trace != nullptr) trace->record(p);
      if (!draw) return true;
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(250)) return true;
      last = now;
      std::string best;
      for (std::size_t i = 0; i < p.best.size(); ++i) {
        best +=
            fmt::format("{}{} {}", i == 0 ? "  best " : ", ", search::objective_name(objectives[i]),
                        search::format_objective(objectives[i], p.best[i]));
      }
      fmt::print(stderr, "\r\033[K[optimize] {} plans  {:.0f}/s  front {}{}", p.evaluations,
                 p.evaluations_per_s, p.front_size, best);
      std::fflush(stderr);
      drawn = true;
      return true;
    };
  }
  search::Optimizer optimizer(graph, target, std::move(options));
  search::OptimizeResult result = optimizer.run();
  if (drawn) fmt::print(stderr, "\r\033[K");
  if (trace != nullptr) {
    trace->record_end(result.progress);
    trace->keep();
  }
  return result;
}

}  // namespace tapestry::cli
