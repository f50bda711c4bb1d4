// The Pareto archive: the plans no other plan seen beats on every objective at once.
//
// Every objective is minimised (objectives.h). Plan a *dominates* plan b when a is no worse than
// b on every objective and strictly better on at least one. The archive keeps the feasible plans
// that nothing offered so far dominates — the *front*. Offering a plan:
//
//   * infeasible (violation() says why: a memory cap, a device limit, the target's memory):
//     refused, never in the front, whatever its objectives;
//   * dominated by a member, or scoring exactly what a member scores: refused (the member that
//     came first stays, so the front depends only on the order of offers);
//   * else added, and every member it dominates leaves.
//
// Worked example, objectives (time, memory), offered in this order:
//   A (2, 8)  added                 front {A}
//   B (1, 9)  added: trades time for memory     front {A, B}
//   C (2, 9)  refused: A dominates it
//   D (1, 8)  added; dominates A and B          front {D}
//
// Hypervolume measures a front: the volume of objective space it dominates, bounded by a
// reference point r (every coordinate worse than the front's). For (time, memory) and r = (3, 10)
// the front {(1, 8), (2, 5)} dominates [1,3]×[8,10] ∪ [2,3]×[5,10] = 4 + 3 = 7 (the overlap
// [2,3]×[8,10] once). More is better; the exact front has the most.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tapestry/cost/simulate.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/search/objectives.h"

namespace tapestry::search {

struct ArchiveEntry {
  rewrite::Plan genome;  // the plan as the search mutates it (tie-layers: one entry per layer kind)
  rewrite::Plan plan;    // the plan evaluated (the genome with tied layers expanded)
  cost::CostVector cost;
  std::vector<double> score;   // objective values, in the archive's objective order
  std::uint64_t found_at = 0;  // the evaluation count when it was offered (1-based)
};

/// a dominates b: a <= b everywhere and a < b somewhere (minimisation). Same sizes.
bool dominates(std::span<const double> a, std::span<const double> b);

class ParetoArchive {
 public:
  enum class Offer : std::uint8_t { kAdded, kDominated, kDuplicate, kInfeasible };

  ParetoArchive(std::vector<Objective> objectives, Constraints constraints);

  /// Offers a priced plan (see the file comment for what happens).
  Offer offer(ArchiveEntry entry);
  /// Offers a priced plan: the score is computed from `entry.cost`.
  Offer offer(rewrite::Plan genome, rewrite::Plan plan, cost::CostVector cost,
              std::uint64_t found_at);

  /// The front, sorted by score (lexicographic in the objective order).
  [[nodiscard]] const std::vector<ArchiveEntry>& front() const { return front_; }
  /// The member best on `objective` (ties: the best on the others in objective order); nullptr
  /// when the front is empty. `objective` need not be one of the archive's objectives.
  [[nodiscard]] const ArchiveEntry* best(Objective objective) const;
  [[nodiscard]] const std::vector<Objective>& objectives() const { return objectives_; }
  [[nodiscard]] const Constraints& constraints() const { return constraints_; }

 private:
  std::vector<Objective> objectives_;
  Constraints constraints_;
  std::vector<ArchiveEntry> front_;
};

/// The hypervolume `points` dominate up to `reference` (minimisation; points not better than the
/// reference in every coordinate add nothing). Exact, by slicing along the last objective
/// (O(n^(d-1) log n) for n points of d objectives: meant for fronts of hundreds of points and
/// d <= 4). All points and the reference have the same size d >= 1.
double hypervolume(std::span<const std::vector<double>> points, std::span<const double> reference);

}  // namespace tapestry::search
