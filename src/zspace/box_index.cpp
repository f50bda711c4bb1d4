// BoxIndex: a uniform bucket grid over a set of boxes (see box_index.h).
#include "tapestry/zspace/box_index.h"

#include <algorithm>

#include "tapestry/support/assert.h"

namespace tapestry::zspace {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

BoxIndex::BoxIndex(std::span<const zspace::Range> boxes) : boxes_(boxes) {
  std::size_t live = 0;
  for (const zspace::Range& box : boxes) {
    if (box.is_empty()) continue;
    if (live++ == 0) {
      rank_ = box.rank();
      origin_.assign(box.start().begin(), box.start().end());
      count_.assign(box.end().begin(), box.end().end());  // the bounding box end, for now
      edge_.assign(rank_, INT64_MAX);
    }
    TAPESTRY_ASSERT(box.rank() == rank_, "BoxIndex: boxes of different ranks");
    for (std::size_t d = 0; d < rank_; ++d) {
      origin_[d] = std::min(origin_[d], box.start()[d]);
      count_[d] = std::max(count_[d], box.end()[d]);
      edge_[d] = std::min(edge_[d], box.end()[d] - box.start()[d]);
    }
  }
  if (live == 0) return;
  indexed_ = true;
  // count_ holds the bounding box end: turn it into bucket counts, then coarsen the grid until
  // it has at most ~2 buckets per box (doubling the edge of the dim with the most buckets).
  std::vector<std::int64_t> extent(rank_);
  for (std::size_t d = 0; d < rank_; ++d) {
    extent[d] = count_[d] - origin_[d];
    count_[d] = ceil_div(extent[d], edge_[d]);
  }
  const double budget = 2.0 * static_cast<double>(live) + 16.0;
  for (;;) {
    double buckets = 1;
    for (std::int64_t c : count_) buckets *= static_cast<double>(c);
    if (buckets <= budget) break;
    const auto widest =
        static_cast<std::size_t>(std::max_element(count_.begin(), count_.end()) - count_.begin());
    edge_[widest] = edge_[widest] > extent[widest] / 2 ? extent[widest] : edge_[widest] * 2;
    count_[widest] = ceil_div(extent[widest], edge_[widest]);
  }
  std::int64_t total = 1;
  for (std::int64_t c : count_) total *= c;
  first_.assign(static_cast<std::size_t>(total) + 1, 0);

  // Two passes: count the members of each bucket, then fill them in (CSR).
  std::vector<std::int64_t> lo(rank_), hi(rank_);
  for (const zspace::Range& box : boxes) {
    if (box.is_empty() || !bucket_span(box, lo, hi)) continue;
    for_each_bucket(lo, hi, [&](std::size_t b) { ++first_[b + 1]; });
  }
  for (std::size_t b = 1; b < first_.size(); ++b) first_[b] += first_[b - 1];
  members_.resize(first_.back());
  std::vector<std::uint32_t> fill(first_.begin(), first_.end() - 1);
  for (std::uint32_t i = 0; i < boxes.size(); ++i) {
    if (boxes[i].is_empty() || !bucket_span(boxes[i], lo, hi)) continue;
    for_each_bucket(lo, hi, [&](std::size_t b) { members_[fill[b]++] = i; });
  }
}

bool BoxIndex::bucket_span(const zspace::Range& box, std::vector<std::int64_t>& lo,
                           std::vector<std::int64_t>& hi) const {
  if (!indexed_ || box.is_empty()) return false;
  TAPESTRY_ASSERT(box.rank() == rank_, "BoxIndex: query of a different rank");
  for (std::size_t d = 0; d < rank_; ++d) {
    const std::int64_t grid_end = origin_[d] + count_[d] * edge_[d];
    const std::int64_t start = std::max(box.start()[d], origin_[d]);
    const std::int64_t end = std::min(box.end()[d], grid_end);
    if (start >= end) return false;
    lo[d] = (start - origin_[d]) / edge_[d];
    hi[d] = (end - 1 - origin_[d]) / edge_[d] + 1;
  }
  return true;
}

template <typename Fn>
void BoxIndex::for_each_bucket(const std::vector<std::int64_t>& lo,
                               const std::vector<std::int64_t>& hi, Fn&& fn) const {
  std::vector<std::int64_t> at(lo);
  for (;;) {
    std::size_t bucket = 0;
    for (std::size_t d = 0; d < rank_; ++d) {
      bucket = bucket * static_cast<std::size_t>(count_[d]) + static_cast<std::size_t>(at[d]);
    }
    fn(bucket);
    std::size_t d = rank_;
    while (d > 0) {
      --d;
      if (++at[d] < hi[d]) break;
      at[d] = lo[d];
      if (d == 0) return;
    }
    if (rank_ == 0) return;
  }
}

void BoxIndex::append_overlapping(const zspace::Range& query,
                                  std::vector<std::uint32_t>& out) const {
  std::vector<std::int64_t> lo(rank_), hi(rank_);
  if (!bucket_span(query, lo, hi)) return;
  for_each_bucket(lo, hi, [&](std::size_t b) {
    for (std::uint32_t k = first_[b]; k < first_[b + 1]; ++k) {
      if (boxes_[members_[k]].overlaps(query)) out.push_back(members_[k]);
    }
  });
}

std::vector<std::uint32_t> BoxIndex::overlapping(const zspace::Range& query) const {
  std::vector<std::uint32_t> out;
  append_overlapping(query, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::pair<std::uint32_t, std::uint32_t>> BoxIndex::first_overlap() const {
  std::optional<std::pair<std::uint32_t, std::uint32_t>> best;
  for (std::size_t b = 0; b + 1 < first_.size(); ++b) {
    for (std::uint32_t x = first_[b]; x < first_[b + 1]; ++x) {
      for (std::uint32_t y = x + 1; y < first_[b + 1]; ++y) {
        const std::uint32_t i = members_[x], j = members_[y];
        if (!boxes_[i].overlaps(boxes_[j])) continue;
        const std::pair<std::uint32_t, std::uint32_t> pair{std::min(i, j), std::max(i, j)};
        if (!best || pair < *best) best = pair;
      }
    }
  }
  return best;
}

}  // namespace tapestry::zspace
