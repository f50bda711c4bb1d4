// Islands: one search on many processes (docs/optimizer.md, "Searching on many processes").
//
// Each process (rank) of an MPI job runs its own Optimizer — an *island* — with its own random
// stream (island_seed: the user's seed on rank 0, a mix of seed and rank elsewhere), its own
// share of the evaluation budget (island_share) and its share of the seeds (seed i on rank
// i mod ranks). Every `OptimizeOptions::migrate_every` generations the islands *meet*, a
// collective round over an IslandLink:
//
//   1. each island sends rank 0 a report (JSON): its counters, the fingerprints it priced since
//      its last report, the front members it found since then (genome, cost, found_at) and its
//      fallback pool, and whether it has finished its budget (and why);
//   2. rank 0 offers the reports' plans to one *merged* archive, in rank order, and answers every
//      island with the migrants — the merged front's best plan on each objective, with their
//      costs — and whether the search stops (every island has finished);
//   3. each island offers the migrants it has not priced itself to its own archive (an island
//      that priced a plan has already offered it), with no re-pricing: a cost travels with its
//      plan (cost::cost_from_json).
//
// An island that has finished its budget keeps meeting the others, without searching, until
// every one has. Rank 0 saves the merged state — a checkpoint readable with any rank count, and
// the front so far (OptimizeOptions::on_merged) — at a meeting every `checkpoint_every_s`, and at
// the end; its OptimizeResult is the merged one. Meetings fall on generation counts, never on
// the clock, so with a fixed seed, rank count and --max-evals the merged front is the same run to
// run (`Islands.*` in tests/search/optimize_test.cpp, tests/cli/optimize_mpi_test.sh). One rank
// searches exactly as the Optimizer does without islands.
//
//   ThreadIslands links(2);                                // tests: 2 islands on 2 threads
//   std::thread t([&] { Optimizer(g, t, {.seed = 1, .max_evaluations = 512,
//                                        .islands = &links.link(1)}).run(); });
//   OptimizeResult merged = Optimizer(g, t, {…, .islands = &links.link(0)}).run();
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tapestry::search {

/// The collective rounds islands meet in: MPI in the CLI (`tapestry optimize --mpi`), threads in
/// tests (ThreadIslands). Every rank calls gather, then broadcast, once per meeting.
class IslandLink {
 public:
  virtual ~IslandLink() = default;
  [[nodiscard]] virtual std::uint32_t rank() const = 0;
  [[nodiscard]] virtual std::uint32_t ranks() const = 0;
  /// Collective: `text` of every rank, in rank order, on rank 0 (empty elsewhere).
  virtual std::vector<std::string> gather(const std::string& text) = 0;
  /// Collective: rank 0's `text` on every rank.
  virtual std::string broadcast(const std::string& text) = 0;
};

/// Island `rank`'s random seed: `seed` itself on rank 0 (one rank searches as a search without
/// islands does), a SplitMix64 mix of (seed, rank) on the others.
std::uint64_t island_seed(std::uint64_t seed, std::uint32_t rank);

/// Island `rank`'s share of `total` evaluations: total / ranks, the remainder one each to the
/// lowest ranks (10 over 4 ranks: 3, 3, 2, 2).
std::uint64_t island_share(std::uint64_t total, std::uint32_t rank, std::uint32_t ranks);

/// `ranks` islands in one process, one thread each: link(r) is rank r's end.
class ThreadIslands {
 public:
  explicit ThreadIslands(std::uint32_t ranks);
  ~ThreadIslands();
  ThreadIslands(const ThreadIslands&) = delete;
  ThreadIslands& operator=(const ThreadIslands&) = delete;

  IslandLink& link(std::uint32_t rank);

 private:
  class Link;
  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    std::uint32_t ranks = 1;
    std::uint64_t round = 0;  // completed phases
    std::uint32_t arrived = 0;
    std::vector<std::string> texts;
    std::vector<std::string> result;  // of the last completed phase
  };
  Shared shared_;
  std::vector<std::unique_ptr<Link>> links_;
};

}  // namespace tapestry::search
