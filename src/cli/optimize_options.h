// The options of `tapestry optimize` that `tapestry run --optimize` shares, and the search they
// start: budget, seed, threads, objectives, constraints, and a progress line on a terminal.
#pragma once

#include <cstdint>
#include <string>

#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/search/optimize.h"

namespace CLI {
class App;
}

namespace tapestry::cli {

struct SearchOptions {
  std::string objectives = "time,memory,devices,energy";
  std::string max_memory_per_device;
  std::int64_t max_devices = 0;
  std::uint64_t seed = 0;
  int threads = 0;
  double time_budget_s = 0;
  std::uint64_t max_evals = 0;
  bool tie_layers = false;
  bool quiet = false;
};

/// --objectives, --max-memory-per-device, --max-devices, --seed, --threads, --time-budget,
/// --max-evals, --tie-layers, --quiet. `default_budget_s` is the time budget when neither
/// --time-budget nor --max-evals is given.
void add_search_options(CLI::App* cmd, SearchOptions& options);

/// The library's options from the command line's (Error on a bad objective list or size).
search::OptimizeOptions optimize_options(const SearchOptions& options, double default_budget_s,
                                         const metakernel::SignatureRegistry& signatures);

/// Runs the search with a progress line on stderr (a terminal only, not with --quiet):
///   [optimize] 12480 plans  6040/s  front 9  best time 407.2 µs, memory 40.0 MiB, …
search::OptimizeResult run_search(const ir::Graph& graph, const cost::Target& target,
                                  search::OptimizeOptions options, bool quiet);

}  // namespace tapestry::cli
