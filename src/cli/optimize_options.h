// The options of `tapestry optimize` that `tapestry run --optimize` shares, and the search they
// start: budget, seed, threads, objectives, constraints, and a progress line on a terminal.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

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
  std::uint64_t prefix_patience = search::OptimizeOptions{}.prefix_patience;
  bool quiet = false;
};

/// --objectives, --max-memory-per-device, --max-devices, --seed, --threads, --time-budget,
/// --max-evals, --tie-layers, --prefix-patience, --quiet. `default_budget_s` is the time budget
/// when neither
/// --time-budget nor --max-evals is given.
void add_search_options(CLI::App* cmd, SearchOptions& options);

/// The library's options from the command line's (Error on a bad objective list or size).
search::OptimizeOptions optimize_options(const SearchOptions& options, double default_budget_s,
                                         const metakernel::SignatureRegistry& signatures);

/// `optimize --trace FILE`: how the search's best values improved over time, as CSV — a header,
/// then a line for the first generation with a front, for every later generation whose best
/// value of some objective changed, and for the search's end (always; under --mpi the merged
/// result, every island's plans counted):
///
///   seconds,evaluations,front,time_s,memory_B
///   0.012,12,3,0.000407,41943040
///   0.388,704,5,0.000391,41943040
///
/// seconds since the search started (rank 0's clock under --mpi: rank 0 writes it, its front
/// holding the other islands' best plans from each meeting on), plans priced so far (rank 0's
/// own between meetings under --mpi), the front's size, and each objective's best value in SI
/// units (s, B, devices, J). Lines are flushed as they are written, so a killed search leaves its
/// trace so far; a search that ends in an error (a bad checkpoint to resume, …) removes it.
/// bench/optimize_mpi_scaling.sh reads it for the time to reach a plan within 5% of the best known.
class SearchTrace {
 public:
  /// Opens (truncates) `path`; Error naming it when it cannot be written.
  SearchTrace(const std::string& path, std::vector<search::Objective> objectives);
  ~SearchTrace();
  SearchTrace(const SearchTrace&) = delete;
  SearchTrace& operator=(const SearchTrace&) = delete;

  /// A line when `p`'s best values differ from the last line's (none before a front exists).
  void record(const search::Progress& p);
  /// The search's end: a line whatever it holds (none when the front is empty).
  void record_end(const search::Progress& p);
  /// The search finished: the destructor keeps the file (else it removes it).
  void keep() { keep_ = true; }

 private:
  std::FILE* file_;
  bool keep_ = false;
  std::string path_;
  std::vector<search::Objective> objectives_;
  std::vector<double> last_;
};

/// Runs the search with a progress line on stderr (a terminal only, not with --quiet):
///   [optimize] 12480 plans  6040/s  front 9  best time 407.2 µs, memory 40.0 MiB, …
/// and, with `trace`, its lines (the final result's too).
search::OptimizeResult run_search(const ir::Graph& graph, const cost::Target& target,
                                  search::OptimizeOptions options, bool quiet,
                                  SearchTrace* trace = nullptr);

}  // namespace tapestry::cli
