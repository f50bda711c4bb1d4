// The island model (islands.h): several searches meeting over a link, merged on rank 0 — here
// on threads (ThreadIslands); tests/cli/optimize_mpi_test.sh runs the same over MPI.
#include "tapestry/search/islands.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "search_testing.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/search/optimize.h"
#include "tapestry/support/error.h"

namespace tapestry::search {
namespace {

std::vector<std::string> front_text(const ParetoArchive& a) {
  std::vector<std::string> out;
  for (const ArchiveEntry& e : a.front()) {
    out.push_back(e.plan.to_json().dump() + " " + cost::to_json(e.cost).dump());
  }
  return out;
}

OptimizeOptions small(std::uint64_t seed, std::uint64_t evals) {
  return {.objectives = {Objective::kTime, Objective::kMemory, Objective::kDevices},
          .seed = seed,
          .threads = 1,
          .max_evaluations = evals};
}

// Runs `ranks` islands of `o` on threads; every rank's result, rank 0's (the merged) first.
std::vector<OptimizeResult> islands(const ir::Graph& g, std::uint32_t ranks, OptimizeOptions o) {
  ThreadIslands links(ranks);
  std::vector<std::optional<OptimizeResult>> results(ranks);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(ranks);
  for (std::uint32_t r = 0; r < ranks; ++r) {
    OptimizeOptions mine = o;
    mine.islands = &links.link(r);
    if (r != 0) mine.on_merged = nullptr;
    threads.emplace_back([&, r, mine] {
      try {
        results[r].emplace(Optimizer(g, testing::h100x8(), mine).run());
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  std::vector<OptimizeResult> out;
  for (std::optional<OptimizeResult>& r : results) out.push_back(std::move(*r));
  return out;
}

// Every member of `some` is matched or beaten by a member of `by` (scores).
bool covered(const ParetoArchive& some, const ParetoArchive& by) {
  for (const ArchiveEntry& e : some.front()) {
    bool found = false;
    for (const ArchiveEntry& m : by.front()) {
      found = found || m.score == e.score || dominates(m.score, e.score);
    }
    if (!found) return false;
  }
  return true;
}

class Islands : public testing::ScratchDirTest {};

TEST(IslandShares, BudgetAndSeeds) {
  EXPECT_EQ(island_share(10, 0, 4), 3u);
  EXPECT_EQ(island_share(10, 1, 4), 3u);
  EXPECT_EQ(island_share(10, 2, 4), 2u);
  EXPECT_EQ(island_share(10, 3, 4), 2u);
  EXPECT_EQ(island_share(1, 1, 2), 0u);
  EXPECT_EQ(island_seed(7, 0), 7u);  // rank 0 searches as a search of its own
  EXPECT_NE(island_seed(7, 1), 7u);
  EXPECT_NE(island_seed(7, 1), island_seed(7, 2));
  EXPECT_NE(island_seed(7, 1), island_seed(8, 1));
}

TEST_F(Islands, OneIslandSearchesAsASearchOfItsOwn) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  const OptimizeResult alone = Optimizer(g, testing::h100x8(), small(3, 300)).run();
  const std::vector<OptimizeResult> one = islands(g, 1, small(3, 300));
  EXPECT_EQ(one[0].progress.evaluations, 300u);
  EXPECT_EQ(one[0].progress.ranks, 1u);
  EXPECT_TRUE(front_text(one[0].archive) == front_text(alone.archive));
  EXPECT_EQ(one[0].stopped_by, "max-evals");
}

TEST_F(Islands, TwoIslandsAreDeterministicAndMergedOnRankZero) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  const std::vector<OptimizeResult> a = islands(g, 2, small(3, 601));
  const std::vector<OptimizeResult> b = islands(g, 2, small(3, 601));
  ASSERT_FALSE(a[0].archive.front().empty());
  EXPECT_TRUE(front_text(a[0].archive) == front_text(b[0].archive));  // run to run
  EXPECT_TRUE(front_text(a[1].archive) == front_text(b[1].archive));
  // The budget is the job's: 301 + 300 plans.
  EXPECT_EQ(a[0].progress.evaluations, 601u);
  EXPECT_EQ(a[1].progress.evaluations, 300u);  // island 1's own count
  EXPECT_EQ(a[0].progress.ranks, 2u);
  EXPECT_EQ(a[0].stopped_by, "max-evals");
  EXPECT_FALSE(a[0].standard.empty());  // rank 0 prices the yardstick
  // The merged front holds what each island found: nothing of either beats it anywhere.
  EXPECT_TRUE(covered(a[1].archive, a[0].archive));
  for (std::size_t i = 0; i < a[0].archive.front().size(); ++i) {
    for (std::size_t j = 0; j < a[0].archive.front().size(); ++j) {
      EXPECT_FALSE(dominates(a[0].archive.front()[i].score, a[0].archive.front()[j].score));
    }
  }
  // Another seed, another front; and migration changes what island 1 searches from.
  const std::vector<OptimizeResult> c = islands(g, 2, small(4, 601));
  EXPECT_TRUE(front_text(a[0].archive) != front_text(c[0].archive));
  OptimizeOptions apart = small(3, 601);
  apart.migrate_every = 1u << 20;  // they meet only at the end
  const std::vector<OptimizeResult> d = islands(g, 2, apart);
  EXPECT_TRUE(front_text(a[1].archive) != front_text(d[1].archive));
  EXPECT_EQ(d[0].progress.evaluations, 601u);
}

TEST_F(Islands, TheMergedCheckpointResumesWithAnyRankCount) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  // Two islands, the merged state saved at every meeting.
  OptimizeOptions first = small(5, 400);
  first.checkpoint = dir_ / "two.json";
  first.checkpoint_every_s = 0;
  int saves = 0;
  first.on_merged = [&](const OptimizeResult& so_far) {
    ++saves;
    EXPECT_EQ(so_far.stopped_by, "running");
    EXPECT_LE(so_far.progress.evaluations, 400u);
  };
  const std::vector<OptimizeResult> two = islands(g, 2, first);
  EXPECT_GT(saves, 0);
  ASSERT_TRUE(std::filesystem::exists(first.checkpoint));
  nlohmann::json saved;
  std::ifstream(first.checkpoint) >> saved;
  EXPECT_EQ(saved.at("ranks").get<int>(), 2);
  EXPECT_EQ(saved.at("evaluations").get<int>(), 400);
  EXPECT_EQ(saved.at("front").size(), two[0].archive.front().size());

  // 2 -> 1: one process continues the merged search.
  OptimizeOptions one = small(5, 700);
  one.resume = first.checkpoint;
  const OptimizeResult resumed = Optimizer(g, testing::h100x8(), one).run();
  EXPECT_EQ(resumed.progress.evaluations, 700u);
  EXPECT_TRUE(covered(two[0].archive, resumed.archive));

  // 1 -> 2: two islands continue a search of one process (its checkpoint), deterministically.
  OptimizeOptions alone = small(5, 300);
  alone.checkpoint = dir_ / "one.json";
  const OptimizeResult part = Optimizer(g, testing::h100x8(), alone).run();
  OptimizeOptions more = small(5, 700);
  more.resume = alone.checkpoint;
  const std::vector<OptimizeResult> r1 = islands(g, 2, more);
  const std::vector<OptimizeResult> r2 = islands(g, 2, more);
  EXPECT_EQ(r1[0].progress.evaluations, 700u);
  EXPECT_EQ(r1[1].progress.evaluations, 300u + 200u);  // the checkpoint's, then its share
  EXPECT_TRUE(covered(part.archive, r1[0].archive));
  EXPECT_TRUE(front_text(r1[0].archive) == front_text(r2[0].archive));

  // A checkpoint of another search is refused before the islands meet.
  OptimizeOptions other = small(6, 700);
  other.resume = alone.checkpoint;
  EXPECT_THROW(check_resume(g, testing::h100x8(), other), Error);
  EXPECT_NO_THROW(check_resume(g, testing::h100x8(), more));
}

// Two islands search the layer prefix as one search in lockstep (prefix_front): the very search
// one process runs — the same front, the same plans counted, converged at the same plan — each
// island pricing its part of every generation; every island seeded with that front; the decision
// that it has converged taken alike on both (ranks leaving at different generations would leave
// the link out of step: a hang or a mixed-up search); deterministic for a seed and budget.
TEST_F(Islands, TwoIslandsSearchTheLayerPrefixAsOneSearch) {
  const ir::Graph g = testing::relu_layers(4);
  OptimizeOptions o = small(3, 300);
  o.tie_layers = true;
  o.prefix_share = 2;  // at most 600 plans of the prefix, all islands together
  o.prefix_patience = 96;
  const OptimizeResult alone = Optimizer(g, testing::h100x8(), o).run();
  const std::vector<OptimizeResult> a = islands(g, 2, o);
  const std::vector<OptimizeResult> b = islands(g, 2, o);
  ASSERT_FALSE(a[0].prefix_front.empty());
  EXPECT_GT(a[0].prefix_front.size(), 1u);  // time, memory and devices: a front of several
  EXPECT_TRUE(a[0].prefix_front == alone.prefix_front);
  EXPECT_TRUE(a[1].prefix_front == alone.prefix_front);
  EXPECT_EQ(alone.progress.prefix_stopped_by, "converged");
  EXPECT_EQ(a[0].progress.prefix_stopped_by, "converged");
  EXPECT_EQ(a[1].progress.prefix_stopped_by, "converged");
  // Each island priced its part; rank 0 counts both: the plans the search of one process priced.
  EXPECT_EQ(a[0].progress.prefix_evaluations, alone.progress.prefix_evaluations);
  EXPECT_GT(a[1].progress.prefix_evaluations, 0u);
  EXPECT_LT(a[1].progress.prefix_evaluations, a[0].progress.prefix_evaluations);
  EXPECT_LT(a[0].progress.prefix_evaluations, 600u);
  // Run to run the same.
  EXPECT_TRUE(a[0].prefix_front == b[0].prefix_front);
  EXPECT_EQ(a[0].progress.prefix_evaluations, b[0].progress.prefix_evaluations);
  EXPECT_TRUE(front_text(a[0].archive) == front_text(b[0].archive));
  EXPECT_EQ(a[0].progress.evaluations, 300u);
  // Without patience, the share: 600 plans between the two.
  o.prefix_patience = 0;
  const std::vector<OptimizeResult> c = islands(g, 2, o);
  EXPECT_EQ(c[0].progress.prefix_evaluations, 600u);
  EXPECT_GT(c[1].progress.prefix_evaluations, 200u);
  EXPECT_LT(c[1].progress.prefix_evaluations, 400u);
  EXPECT_EQ(c[0].progress.prefix_stopped_by, "max-evals");
  EXPECT_TRUE(c[0].prefix_front == c[1].prefix_front);
  // One island searches the prefix as a search of its own does.
  o.prefix_patience = 96;
  const std::vector<OptimizeResult> one = islands(g, 1, o);
  EXPECT_TRUE(one[0].prefix_front == alone.prefix_front);
  EXPECT_EQ(one[0].progress.prefix_evaluations, alone.progress.prefix_evaluations);
  EXPECT_TRUE(front_text(one[0].archive) == front_text(alone.archive));
}

// Under a time budget the islands' clocks differ, yet they leave the lockstep prefix search at
// the same generation (the first whose exchange says a rank's time is up): no hang, one front.
TEST_F(Islands, TimedIslandsLeaveTheLayerPrefixTogether) {
  const ir::Graph g = testing::relu_layers(4);
  OptimizeOptions o = small(3, 0);
  o.time_budget_s = 2;
  o.tie_layers = true;
  o.prefix_share = 0.5;
  o.prefix_patience = 0;  // to the time budget's share
  const std::vector<OptimizeResult> a = islands(g, 2, o);
  EXPECT_EQ(a[0].progress.prefix_stopped_by, "time-budget");
  EXPECT_EQ(a[1].progress.prefix_stopped_by, "time-budget");
  ASSERT_FALSE(a[0].prefix_front.empty());
  EXPECT_TRUE(a[0].prefix_front == a[1].prefix_front);
  EXPECT_EQ(a[0].stopped_by, "time-budget");
}

// Patience on islands (OptimizeOptions::patience): decided at a meeting from the merged front and
// every island's count, alike on every island — both stop "converged", at the same meeting.
TEST_F(Islands, IslandsConvergeTogether) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  OptimizeOptions o = small(3, 1000000);
  o.objectives = {Objective::kTime};
  o.patience = 256;
  const std::vector<OptimizeResult> a = islands(g, 2, o);
  const std::vector<OptimizeResult> b = islands(g, 2, o);
  EXPECT_EQ(a[0].stopped_by, "converged");
  EXPECT_EQ(a[1].stopped_by, "converged");
  EXPECT_LT(a[0].progress.evaluations, 1000000u);
  EXPECT_GE(a[0].progress.evaluations, 256u);
  EXPECT_EQ(a[0].progress.evaluations, b[0].progress.evaluations);
  EXPECT_TRUE(front_text(a[0].archive) == front_text(b[0].archive));
}

}  // namespace
}  // namespace tapestry::search
