#include "tapestry/zspace/grid.h"

#include <algorithm>

#include <fmt/core.h>

#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::zspace {

Grid::Grid(const Range& box, std::span<const std::int64_t> counts) {
  assign(box, counts);
}

void Grid::assign(const Range& box, std::span<const std::int64_t> counts) {
  if (counts.size() != box.rank()) {
    throw Error(fmt::format("grid: {} counts for a box of rank {}", counts.size(), box.rank()));
  }
  // The counts and their product first, so a grid of too many cells is an Error, not a vector
  // of cut points too long to allocate.
  std::int64_t cells = 1;
  for (std::size_t d = 0; d < box.rank(); ++d) {
    const std::int64_t n = box.extent(d), p = counts[d];
    if (p < 1 || p > std::max<std::int64_t>(n, 1)) {
      throw Error(
          fmt::format("grid: cannot cut extent {} of dimension {} into {} pieces", n, d, p));
    }
    cells = checked_mul(cells, p);  // the number of cells must fit in int64
  }
  cuts_.clear();
  offsets_.assign(1, 0);
  for (std::size_t d = 0; d < box.rank(); ++d) {
    // cut(k) = lo + k·(n / p) + min(k, n % p) <= lo + n: no overflow past the box's end.
    const std::int64_t lo = box.start()[d], p = counts[d], q = box.extent(d) / p,
                       r = box.extent(d) % p;
    for (std::int64_t k = 0; k <= p; ++k) cuts_.push_back(lo + k * q + std::min(k, r));
    offsets_.push_back(cuts_.size());
  }
  size_ = static_cast<std::size_t>(cells);
}

Range Grid::cell_at(std::span<const std::int64_t> at) const {
  TAPESTRY_ASSERT(at.size() == rank(), "Grid::cell_at: coordinate of the wrong rank");
  InlineVector<std::int64_t, kInlineRank> start(rank()), end(rank());
  for (std::size_t d = 0; d < rank(); ++d) {
    TAPESTRY_ASSERT(at[d] >= 0 && at[d] < count(d), "Grid::cell_at: coordinate outside the grid");
    const std::size_t k = offsets_[d] + static_cast<std::size_t>(at[d]);
    start[d] = cuts_[k];
    end[d] = cuts_[k + 1];
  }
  return Range(Point(start.span()), Point(end.span()));
}

Point Grid::coordinate(std::size_t i) const {
  TAPESTRY_ASSERT(i < size_, "Grid::coordinate: cell outside the grid");
  InlineVector<std::int64_t, kInlineRank> at(rank());
  for (std::size_t d = rank(); d-- > 0;) {
    const auto pieces = static_cast<std::size_t>(count(d));
    at[d] = static_cast<std::int64_t>(i % pieces);
    i /= pieces;
  }
  return Point(at.span());
}

Range Grid::cell(std::size_t i) const {
  return cell_at(coordinate(i).coords());
}

std::vector<Range> Grid::cells() const {
  std::vector<Range> out;
  out.reserve(size_);
  for (std::size_t i = 0; i < size_; ++i) out.push_back(cell(i));
  return out;
}

}  // namespace tapestry::zspace
