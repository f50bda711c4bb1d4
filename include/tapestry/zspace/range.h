// Range: the box [start, end) of ZSpace points (Tapestry's ZRange).
//
// `shape = end - start`; `size` is the number of points (product of the shape; 1 for the
// 0-dimensional range `zr[]`); a range with any zero extent is empty. Iteration is row-major,
// last dimension fastest. Invariants, checked once at construction: ranks equal, start <= end.
//
//   Range r(Point{2, 3}, Point{4, 5});   // zr[2:4, 3:5], shape (2, 2), size 4
//   for (const Point& p : r.points()) ... // (2, 3) (2, 4) (3, 3) (3, 4)
//   r.contains(Point{3, 4})               // true; (4, 4) is outside: the end face is exclusive
//
// Worked examples of the set operations (see also docs/zspace.md):
//
//   zr[0:2, 0:3] ∩ zr[-2:2, 1:5]    == zr[0:2, 1:3]
//   zr[0:2, 0:3] ∩ zr[-5:-1, -5:-1] == nullopt     (disjoint)
//   zr[0:2] ∩ zr[2:4]               == zr[2:2]     (touching: empty, but not disjoint)
//   bounding(zr[1:4, 2:10, 3:6], zr[2:5, 0:6, 4:7]) == zr[1:5, 0:10, 3:7]
//   split_by_chunk(zr[0:10], 0, 4)  == zr[0:4], zr[4:8], zr[8:10]
//   split_even(zr[0:10], 0, 4)      == zr[0:3], zr[3:6], zr[6:8], zr[8:10]
//   zr[2:5].product(zr[10:20, 4:8]) == zr[2:5, 10:20, 4:8]
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/zspace/checked.h"
#include "tapestry/zspace/point.h"

namespace tapestry::zspace {

class PointIterator;
class PointRangeView;

class Range {
 public:
  /// The 0-dimensional range `zr[]` (one point, `()`).
  Range() = default;
  /// [start, end); throws Error on rank mismatch or when start > end in any dimension.
  Range(Point start, Point end);

  /// [0, shape).
  static Range of_shape(const Point& shape);
  /// [start, start + shape).
  static Range of_start_shape(const Point& start, const Point& shape);

  [[nodiscard]] const Point& start() const { return start_; }
  [[nodiscard]] const Point& end() const { return end_; }
  [[nodiscard]] std::size_t rank() const { return start_.rank(); }
  [[nodiscard]] Point shape() const { return end_ - start_; }
  /// Extent of one dimension.
  /// Extent of one dimension (overflow-checked: zr[INT64_MIN:INT64_MAX] has no int64 extent).
  [[nodiscard]] std::int64_t extent(std::size_t dim) const {
    return checked_sub(end_[dim], start_[dim]);
  }
  /// Number of points, overflow-checked.
  [[nodiscard]] std::int64_t size() const;
  [[nodiscard]] bool is_empty() const;
  /// The last point (end - 1); Error for an empty range.
  [[nodiscard]] Point inclusive_end() const;

  /// start <= p < end in every dimension (ranks must match).
  [[nodiscard]] bool contains(const Point& p) const;
  /// `other` lies inside this box: other.start >= start and other.end <= end.
  /// An empty range is contained when its corners are (e.g. zr[2:2, 3:3] in zr[0:2, 0:3]).
  [[nodiscard]] bool contains(const Range& other) const;
  /// The intersection; nullopt when the boxes are disjoint. Boxes that only touch give an
  /// empty range on the shared face.
  [[nodiscard]] std::optional<Range> intersect(const Range& other) const;
  /// True when the intersection is non-empty (shares at least one point).
  [[nodiscard]] bool overlaps(const Range& other) const;

  /// The smallest range containing all of `ranges`; Error on an empty list or rank mismatch.
  static Range bounding(std::span<const Range> ranges);

  /// Cuts dimension `dim` into chunks of `chunk` (the last may be smaller). chunk must be > 0.
  [[nodiscard]] std::vector<Range> split_by_chunk(std::size_t dim, std::int64_t chunk) const;
  /// Cuts dimension `dim` into pieces of the given sizes, which must be >= 0 and sum to the extent.
  [[nodiscard]] std::vector<Range> split_by_sizes(std::size_t dim,
                                                  std::span<const std::int64_t> sizes) const;
  /// Cuts dimension `dim` into `parts` near-equal pieces (sizes differ by at most one; the larger
  /// ones first: zspace::Grid, grid.h). parts in [1, extent] (exactly 1 for an empty extent).
  [[nodiscard]] std::vector<Range> split_even(std::size_t dim, std::int64_t parts) const;
  /// Every dimension cut into near-equal parts: Grid(*this, parts).cells(), row-major (grid.h).
  [[nodiscard]] std::vector<Range> split_grid(std::span<const std::int64_t> parts) const;

  /// Reorders dimensions: result dim i is this dim perm[i].
  [[nodiscard]] Range permute(std::span<const std::size_t> perm) const;
  /// Cartesian product: this range's dims followed by `other`'s.
  [[nodiscard]] Range product(const Range& other) const;
  /// Shifts both corners by `offset`.
  [[nodiscard]] Range translate(const Point& offset) const;
  /// A copy with dimension `dim` replaced by [lo, hi).
  [[nodiscard]] Range with_dim(std::size_t dim, std::int64_t lo, std::int64_t hi) const;
  /// Dimensions [from, to).
  [[nodiscard]] Range slice(std::size_t from, std::size_t to) const;

  friend bool operator==(const Range& a, const Range& b) = default;

  /// Row-major iteration over the points (none for an empty range; one, `()`, for `zr[]`):
  /// `for (const Point& p : range.points())`. The view refers to this range: keep it alive.
  [[nodiscard]] PointRangeView points() const;

  /// `zr[2:4, 3:5]`; the 0-dimensional range prints `zr[]`.
  [[nodiscard]] std::string to_string() const;

 private:
  Point start_;
  Point end_;
};

/// Forward iterator over the points of a Range, row-major (last dimension fastest).
class PointIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = Point;
  using difference_type = std::ptrdiff_t;
  using pointer = const Point*;
  using reference = const Point&;

  PointIterator() = default;
  const Point& operator*() const { return current_; }
  const Point* operator->() const { return &current_; }
  PointIterator& operator++();
  PointIterator operator++(int) {
    PointIterator copy = *this;
    ++*this;
    return copy;
  }
  friend bool operator==(const PointIterator& a, const PointIterator& b) {
    return a.done_ == b.done_ && (a.done_ || a.current_ == b.current_);
  }

 private:
  friend class PointRangeView;
  PointIterator(const Range* range, bool done);
  const Range* range_ = nullptr;
  Point current_;
  bool done_ = true;
};

/// The points of a Range, for range-based for loops (see Range::points()).
class PointRangeView {
 public:
  explicit PointRangeView(const Range* range) : range_(range) {}
  [[nodiscard]] PointIterator begin() const { return PointIterator(range_, range_->is_empty()); }
  [[nodiscard]] PointIterator end() const { return PointIterator(range_, true); }

 private:
  const Range* range_;
};

inline PointRangeView Range::points() const {
  return PointRangeView(this);
}

}  // namespace tapestry::zspace
