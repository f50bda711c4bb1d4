#include "tapestry/search/archive.h"

#include <algorithm>

#include "tapestry/support/assert.h"

namespace tapestry::search {

bool dominates(std::span<const double> a, std::span<const double> b) {
  TAPESTRY_ASSERT(a.size() == b.size(), "scores of different sizes");
  bool strictly = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i]) return false;
    strictly |= a[i] < b[i];
  }
  return strictly;
}

ParetoArchive::ParetoArchive(std::vector<Objective> objectives, Constraints constraints)
    : objectives_(std::move(objectives)), constraints_(constraints) {
  TAPESTRY_ASSERT(!objectives_.empty(), "an archive needs at least one objective");
}

ParetoArchive::Offer ParetoArchive::offer(rewrite::Plan genome, rewrite::Plan plan,
                                          cost::CostVector cost, std::uint64_t found_at) {
  ArchiveEntry entry{.genome = std::move(genome),
                     .plan = std::move(plan),
                     .cost = std::move(cost),
                     .score = {},
                     .found_at = found_at};
  entry.score = score_of(entry.cost, objectives_);
  return offer(std::move(entry));
}

ParetoArchive::Offer ParetoArchive::offer(ArchiveEntry entry) {
  if (violation(entry.cost, constraints_)) return Offer::kInfeasible;
  if (entry.score.size() != objectives_.size()) entry.score = score_of(entry.cost, objectives_);
  for (const ArchiveEntry& member : front_) {
    if (member.score == entry.score) return Offer::kDuplicate;
    if (dominates(member.score, entry.score)) return Offer::kDominated;
  }
  std::erase_if(front_,
                [&](const ArchiveEntry& member) { return dominates(entry.score, member.score); });
  // Keep the front sorted by score: the order of the output and of parent choice.
  auto at = std::lower_bound(
      front_.begin(), front_.end(), entry.score,
      [](const ArchiveEntry& member, const std::vector<double>& s) { return member.score < s; });
  front_.insert(at, std::move(entry));
  return Offer::kAdded;
}

const ArchiveEntry* ParetoArchive::best(Objective objective) const {
  const ArchiveEntry* best = nullptr;
  for (const ArchiveEntry& member : front_) {
    if (best == nullptr) {
      best = &member;
      continue;
    }
    const double a = objective_value(member.cost, objective);
    const double b = objective_value(best->cost, objective);
    if (a < b || (a == b && member.score < best->score)) best = &member;
  }
  return best;
}

namespace {

// Slices along the last coordinate: between consecutive values of it, the dominated region is
// the (d-1)-dimensional hypervolume of the points at or below the slice.
double slice_volume(std::vector<std::vector<double>> points, std::span<const double> reference) {
  const std::size_t d = reference.size();
  if (points.empty()) return 0;
  if (d == 1) {
    double best = reference[0];
    for (const auto& p : points) best = std::min(best, p[0]);
    return reference[0] - best;
  }
  std::sort(points.begin(), points.end(),
            [d](const auto& a, const auto& b) { return a[d - 1] < b[d - 1]; });
  double volume = 0;
  std::vector<std::vector<double>> below;
  below.reserve(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    below.emplace_back(points[i].begin(), points[i].end() - 1);
    const double next = i + 1 < points.size() ? points[i + 1][d - 1] : reference[d - 1];
    const double height = next - points[i][d - 1];
    if (height <= 0) continue;
    volume += height * slice_volume(below, reference.first(d - 1));
  }
  return volume;
}

}  // namespace

double hypervolume(std::span<const std::vector<double>> points, std::span<const double> reference) {
  TAPESTRY_ASSERT(!reference.empty(), "a hypervolume needs at least one objective");
  std::vector<std::vector<double>> inside;
  for (const auto& p : points) {
    TAPESTRY_ASSERT(p.size() == reference.size(), "a point and the reference differ in size");
    bool in = true;
    for (std::size_t i = 0; i < p.size(); ++i) in &= p[i] < reference[i];
    if (in) inside.push_back(p);
  }
  return slice_volume(std::move(inside), reference);
}

}  // namespace tapestry::search
