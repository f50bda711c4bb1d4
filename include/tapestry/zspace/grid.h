// Grid: a box cut into a row-major grid of cells, every dimension into near-even pieces.
//
// The one cutting rule of Tapestry. Dimension d of the box, [lo, lo + n), is cut into
// p = counts[d] pieces; the first n % p pieces are one point longer than the others (n / p), so
// piece k is [cut(k), cut(k + 1)) with
//
//   cut(k) = lo + k·(n / p) + min(k, n % p)          (cut(0) = lo, cut(p) = lo + n)
//
// Cells are numbered row-major, the last dimension fastest. Range::split_even and
// Range::split_grid list these cells; shard-grid (rewrite/shard_grid.h) gives cell i to the i-th
// Application of an operation; the cost model (cost::Evaluator) prices cell i as that
// Application without making it — one rule, so a priced cell is the box lower makes.
//
//   Grid g(zr[0:10, 0:3], {4, 2});        // 4 pieces of 10, 2 of 3
//   g.cuts(0)          == {0, 3, 6, 8, 10} // 10 = 3 + 3 + 2 + 2: the first 10 % 4 = 2 longer
//   g.cuts(1)          == {0, 2, 3}
//   g.size()           == 8
//   g.coordinate(5)    == (2, 1)           // row-major: 5 = 2·2 + 1
//   g.cell(5)          == zr[6:8, 2:3]
//   g.cell_at({3, 0})  == zr[8:10, 0:2]
//
// A count must be 1 <= p <= max(n, 1): no empty piece, except that a dimension of extent 0 is
// cut into one (empty) piece [lo, lo). A rank-0 box has one cell, zr[]. Errors (tapestry::Error):
// counts of another rank, a count out of range, an extent or a number of cells beyond int64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"

namespace tapestry::zspace {

class Grid {
 public:
  /// The rank-0 grid: one cell, zr[].
  Grid() = default;
  /// `box` cut into counts[d] pieces along each dimension d (see above).
  Grid(const Range& box, std::span<const std::int64_t> counts);
  /// *this = Grid(box, counts), reusing the storage (a caller that cuts many boxes in a loop).
  void assign(const Range& box, std::span<const std::int64_t> counts);

  [[nodiscard]] std::size_t rank() const { return offsets_.size() - 1; }
  /// Pieces along dimension d.
  [[nodiscard]] std::int64_t count(std::size_t d) const {
    return static_cast<std::int64_t>(offsets_[d + 1] - offsets_[d]) - 1;
  }
  /// Number of cells: the product of the counts.
  [[nodiscard]] std::size_t size() const { return size_; }
  /// The count(d) + 1 cut points of dimension d, from the box's start to its end.
  [[nodiscard]] std::span<const std::int64_t> cuts(std::size_t d) const {
    return std::span<const std::int64_t>(cuts_).subspan(offsets_[d], offsets_[d + 1] - offsets_[d]);
  }

  /// Cell i (0 <= i < size()), row-major.
  [[nodiscard]] Range cell(std::size_t i) const;
  /// The cell at grid coordinate `at` (0 <= at[d] < count(d)).
  [[nodiscard]] Range cell_at(std::span<const std::int64_t> at) const;
  /// The grid coordinate of cell i: at[d] = which piece of dimension d.
  [[nodiscard]] Point coordinate(std::size_t i) const;
  /// Every cell, row-major (Range::split_grid).
  [[nodiscard]] std::vector<Range> cells() const;

 private:
  std::vector<std::int64_t> cuts_;  // every dim's cut points, one dim after another
  // Dim d's cut points are cuts_[offsets_[d] .. offsets_[d + 1]): rank + 1 entries.
  std::vector<std::size_t> offsets_{0};
  std::size_t size_ = 1;
};

}  // namespace tapestry::zspace
