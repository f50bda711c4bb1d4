// BoxIndex: which of many boxes of one tensor intersect a query box, in time proportional to the
// answer, not to the number of boxes.
//
// The schedulers ask, for every box an application reads, which applications wrote
// intersecting boxes. Comparing against every write is O(n²): 10 s for 100,000 shards of one
// tensor. BoxIndex buckets the boxes on a uniform grid over their bounding box instead: the
// bucket edge along each dim is the smallest box extent along it (so a grid-sharded tensor puts
// about one box in each bucket), coarsened until there are at most ~2 buckets per box. A query
// visits the buckets its box covers and tests only the boxes listed there.
//
//   std::vector<Range> writes = {Range({0, 0}, {2, 4}), Range({2, 0}, {4, 4})};
//   BoxIndex index(writes);
//   index.overlapping(Range({1, 0}, {3, 1}))  == {0, 1}   // positions in `writes`, ascending
//   index.overlapping(Range({4, 0}, {5, 4}))  == {}
//   index.first_overlap()                      == nullopt // no two boxes intersect
//
// Empty boxes are never reported. All boxes must have the same rank (asserted).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "tapestry/zspace/range.h"

namespace tapestry::zspace {

class BoxIndex {
 public:
  /// Indexes `boxes`, which must outlive the index and stay unchanged.
  explicit BoxIndex(std::span<const zspace::Range> boxes);

  /// Positions of the boxes that intersect `query`, ascending, without duplicates.
  [[nodiscard]] std::vector<std::uint32_t> overlapping(const zspace::Range& query) const;
  /// Appends those positions to `out` (unsorted; may contain duplicates) — the allocation-free
  /// form for callers that sort once over several queries.
  void append_overlapping(const zspace::Range& query, std::vector<std::uint32_t>& out) const;

  /// Some pair (i < j) of intersecting boxes, or nullopt when they are pairwise disjoint.
  [[nodiscard]] std::optional<std::pair<std::uint32_t, std::uint32_t>> first_overlap() const;

 private:
  // Bucket coordinates covered by `box` along dim d: [lo[d], hi[d]); false when outside the grid.
  bool bucket_span(const zspace::Range& box, std::vector<std::int64_t>& lo,
                   std::vector<std::int64_t>& hi) const;
  template <typename Fn>
  void for_each_bucket(const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& hi,
                       Fn&& fn) const;

  std::span<const zspace::Range> boxes_;
  bool indexed_ = false;  // some box is non-empty
  std::size_t rank_ = 0;
  std::vector<std::int64_t> origin_;  // grid origin per dim (bounding box start)
  std::vector<std::int64_t> edge_;    // bucket edge per dim
  std::vector<std::int64_t> count_;   // buckets per dim
  std::vector<std::uint32_t> first_;  // CSR: bucket b lists members_[first_[b], first_[b+1])
  std::vector<std::uint32_t> members_;
};

}  // namespace tapestry::zspace
