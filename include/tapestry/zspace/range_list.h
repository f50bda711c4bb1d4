// RangeList: many boxes of one rank, packed — 2·rank words a box instead of a 128-byte Range.
//
// For loops over a million boxes (the exact-cover checks of a million-shard lowering, see
// ir/box_cover.h): a box is appended as its corners to one vector of int64 words, and read back
// as spans of its corners, or as a Range built on demand. Box i occupies words
// [2·rank·i, 2·rank·(i+1)): its start, then its end. The invariants of Range hold for every box
// (checked when it is appended): start <= end, and the list's rank.
//
//   RangeList boxes(2);
//   boxes.push_back(zr[0:2, 0:3]);
//   boxes.push_back(Point{2, 0}.coords(), Point{4, 3}.coords());
//   boxes.size() == 2;   boxes.start(1)[0] == 2;   boxes.end(1)[1] == 3
//   boxes.range(1) == zr[2:4, 0:3];   boxes.contains(1, Point{3, 1}) == true
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"

namespace tapestry::zspace {

class RangeList {
 public:
  /// An empty list of boxes of rank `rank`.
  explicit RangeList(std::size_t rank = 0) : rank_(rank) {}

  [[nodiscard]] std::size_t rank() const { return rank_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  /// Removes every box; the rank becomes `rank`.
  void clear(std::size_t rank) {
    rank_ = rank;
    words_.clear();
    size_ = 0;
  }
  /// Room for `count` boxes in all.
  void reserve(std::size_t count) { words_.reserve(count * 2 * rank_); }

  /// Appends a box of the list's rank (Error otherwise).
  void push_back(const Range& box) { push_back(box.start().coords(), box.end().coords()); }
  /// Appends [start, end); Error unless both have the list's rank and start <= end.
  void push_back(std::span<const std::int64_t> start, std::span<const std::int64_t> end);

  /// The corners of box i (0 <= i < size()).
  [[nodiscard]] std::span<const std::int64_t> start(std::size_t i) const {
    return {words_.data() + 2 * rank_ * i, rank_};
  }
  [[nodiscard]] std::span<const std::int64_t> end(std::size_t i) const {
    return {words_.data() + 2 * rank_ * i + rank_, rank_};
  }
  /// Box i as a Range.
  [[nodiscard]] Range range(std::size_t i) const;
  /// Box i has no points (a zero extent).
  [[nodiscard]] bool is_empty(std::size_t i) const {
    const std::int64_t* at = words_.data() + 2 * rank_ * i;
    for (std::size_t d = 0; d < rank_; ++d) {
      if (at[d] == at[rank_ + d]) return true;
    }
    return false;
  }
  /// Box i contains `p` (of the list's rank).
  [[nodiscard]] bool contains(std::size_t i, const Point& p) const;

 private:
  std::size_t rank_;
  std::size_t size_ = 0;
  std::vector<std::int64_t> words_;
};

}  // namespace tapestry::zspace
