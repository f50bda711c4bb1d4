// Islands: one search on many processes (docs/optimizer.md, "Searching on many processes").
//
// Each process (rank) of an MPI job runs its own Optimizer — an *island* — with its own random
// stream (island_seed: the user's seed on rank 0, a mix of seed and rank elsewhere), its own
// share of the evaluation budget (island_share) and its share of the seeds (seed i on rank
// i mod ranks). Every `OptimizeOptions::migrate_every` generations an island *meets* the others
// over an IslandLink, without waiting for them:
//
//   1. it posts every island a report (JSON): its counters, the fingerprints it priced since its
//      last report, the front members it found since then (genome, cost, found_at), its fallback
//      pool, and whether it has finished its budget (and why);
//   2. it collects every island's report of the meeting before (waiting only for an island a
//      whole meeting behind it) and offers their plans, in rank order, to its *merged* archive —
//      the same on every rank, since every rank merges the same reports in the same order;
//   3. it offers its own archive the *migrants* — the merged front's best plan on each
//      objective — that it has not priced itself (an island that priced a plan has offered it
//      already), with no re-pricing: a cost travels with its plan (cost::cost_from_json).
//
// An island that has finished keeps meeting, without searching, until a meeting's reports say
// every island has finished; then each collects the last reports and stops. Rank 0 saves the
// merged state — a checkpoint readable with any rank count, and the front so far
// (OptimizeOptions::on_merged) — at a meeting every `checkpoint_every_s`, and at the end; its
// OptimizeResult is the merged one. Meetings fall on generation counts, never on the clock, and
// what an island learns at meeting k is what every island reported at meeting k − 1, so with a
// fixed seed, rank count and --max-evals the merged front is the same run to run (`Islands.*`
// in tests/search/islands_test.cpp, tests/cli/optimize_mpi_test.sh). One rank searches exactly
// as the Optimizer does without islands.
//
//   ThreadIslands links(2);                       // tests: 2 islands on 2 threads
//   std::thread other([&] { Optimizer(g, target, {.seed = 1, .max_evaluations = 512,
//                                                 .islands = &links.link(1)}).run(); });
//   OptimizeResult merged = Optimizer(g, target, {.seed = 1, .max_evaluations = 512,
//                                                 .islands = &links.link(0)}).run();
//   other.join();                                  // merged: both islands' 512 plans
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tapestry::search {

/// How islands meet: MPI in the CLI (`tapestry optimize --mpi`: runtime::MpiSession's posts),
/// threads in tests (ThreadIslands).
class IslandLink {
 public:
  virtual ~IslandLink() = default;
  [[nodiscard]] virtual std::uint32_t rank() const = 0;
  [[nodiscard]] virtual std::uint32_t ranks() const = 0;
  /// Sends `text` to every rank; does not wait.
  virtual void post(const std::string& text) = 0;
  /// Waits for the oldest text not yet collected from every rank (this one's included) and
  /// returns them in rank order: the k-th collect returns each rank's k-th post.
  virtual std::vector<std::string> collect() = 0;
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
    std::condition_variable posted;
    std::uint32_t ranks = 1;
    std::vector<std::vector<std::deque<std::string>>> inbox;  // [to][from]: posts not collected
  };
  Shared shared_;
  std::vector<std::unique_ptr<Link>> links_;
};

}  // namespace tapestry::search
