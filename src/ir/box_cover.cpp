// Exact cover by signed corner counting (box_cover.h explains the method).
#include "tapestry/ir/box_cover.h"

#include <algorithm>
#include <array>
#include <vector>

#include "tapestry/support/assert.h"

namespace tapestry::ir {

namespace {

template <std::size_t R>
struct Corner {
  std::array<std::int64_t, R> coords;
  std::int32_t sign;
};

// Appends the 2^R signed corners of a non-empty box [start, end).
template <std::size_t R>
void add_corners(std::span<const std::int64_t> start, std::span<const std::int64_t> end,
                 std::int32_t sign, std::vector<Corner<R>>& out) {
  for (std::size_t d = 0; d < R; ++d) {
    if (start[d] == end[d]) return;  // empty
  }
  for (unsigned mask = 0; mask < (1u << R); ++mask) {
    Corner<R> corner;
    std::int32_t s = sign;
    for (std::size_t d = 0; d < R; ++d) {
      if ((mask >> d) & 1u) {
        corner.coords[d] = end[d];
        s = -s;
      } else {
        corner.coords[d] = start[d];
      }
    }
    corner.sign = s;
    out.push_back(corner);
  }
}

template <std::size_t R>
std::optional<CoverDefect> find_defect_fixed(const zspace::Range& whole,
                                             const zspace::RangeList& parts) {
  std::vector<Corner<R>> corners;
  corners.reserve((parts.size() + 1) << R);
  for (std::size_t i = 0; i < parts.size(); ++i)
    add_corners<R>(parts.start(i), parts.end(i), +1, corners);
  add_corners<R>(whole.start().coords(), whole.end().coords(), -1, corners);
  std::sort(corners.begin(), corners.end(),
            [](const Corner<R>& a, const Corner<R>& b) { return a.coords < b.coords; });
  for (std::size_t i = 0; i < corners.size();) {
    std::size_t j = i;
    std::int64_t residue = 0;
    while (j < corners.size() && corners[j].coords == corners[i].coords)
      residue += corners[j++].sign;
    if (residue != 0) {
      zspace::Point point(std::span<const std::int64_t>(corners[i].coords));
      bool inside = whole.contains(point);
      return CoverDefect{std::move(point), residue + (inside ? 1 : 0), inside};
    }
    i = j;
  }
  return std::nullopt;
}

// Rank 0: the whole is the single point (); every part is that point too.
std::optional<CoverDefect> find_defect_rank0(const zspace::RangeList& parts) {
  auto count = static_cast<std::int64_t>(parts.size());
  if (count == 1) return std::nullopt;
  return CoverDefect{zspace::Point(), count, true};
}

// The cut coordinates of each dimension of a grid over `whole`, read off the non-empty axis
// parts: a part starting at whole.start in every dimension but d gives its start and end in d
// (the corner part, starting at whole.start everywhere, gives its end in every dimension).
// Sorted, without duplicates, and whole's own corners included. False when a cut lies outside
// `whole` (then the parts are no grid of it).
bool axis_cuts(const zspace::Range& whole, const zspace::RangeList& parts,
               std::vector<std::vector<std::int64_t>>& cuts) {
  const std::size_t rank = whole.rank();
  const std::span<const std::int64_t> ws = whole.start().coords(), we = whole.end().coords();
  cuts.assign(rank, {});
  auto add = [&](std::size_t d, std::int64_t at) {
    cuts[d].push_back(at);
    return ws[d] <= at && at <= we[d];
  };
  for (std::size_t d = 0; d < rank; ++d) {
    cuts[d] = {ws[d], we[d]};
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts.is_empty(i)) continue;
    const std::span<const std::int64_t> s = parts.start(i), e = parts.end(i);
    std::size_t off_dims = 0, off = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      if (s[d] != ws[d]) {
        ++off_dims;
        off = d;
      }
    }
    if (off_dims == 0) {
      for (std::size_t d = 0; d < rank; ++d) {
        if (!add(d, e[d])) return false;
      }
    } else if (off_dims == 1) {
      if (!add(off, s[off]) || !add(off, e[off])) return false;
    }
  }
  for (auto& c : cuts) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  return true;
}

// The position of `x` in the sorted `cuts`, or cuts.size() when it is not a cut. Tries `hint`
// and the next one first: parts in row-major order step by at most one cell in a dimension.
std::size_t find_cut(const std::vector<std::int64_t>& cuts, std::int64_t x, std::size_t hint) {
  if (hint < cuts.size() && cuts[hint] == x) return hint;
  if (hint + 1 < cuts.size() && cuts[hint + 1] == x) return hint + 1;
  auto it = std::lower_bound(cuts.begin(), cuts.end(), x);
  return it != cuts.end() && *it == x ? static_cast<std::size_t>(it - cuts.begin()) : cuts.size();
}

}  // namespace

// 1. The cuts of each dimension, from the axis parts (axis_cuts): they lie in `whole` and
//    include its corners, so the cells between consecutive cuts partition `whole`.
// 2. As many cells as non-empty parts, and every non-empty part is exactly one cell (its start
//    and end consecutive cuts in every dimension), no cell twice: then every cell is covered
//    once, nothing else is, and empty parts cover nothing — the cover is exact. (Parts that do
//    not line up with the cuts make it return false, whatever the cover is.)
bool is_exact_grid(const zspace::Range& whole, const zspace::RangeList& parts) {
  TAPESTRY_ASSERT(parts.rank() == whole.rank(), "cover parts must have the rank of the whole");
  const std::size_t rank = whole.rank();
  if (rank == 0 || whole.is_empty()) return false;
  std::vector<std::vector<std::int64_t>> cuts;
  if (!axis_cuts(whole, parts, cuts)) return false;
  std::size_t nonempty = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) nonempty += parts.is_empty(i) ? 0 : 1;
  std::size_t cells = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    cells *= cuts[d].size() - 1;
    if (cells > nonempty) return false;  // more cells than parts: a gap (or not a grid)
  }
  if (cells != nonempty) return false;
  std::vector<bool> seen(cells, false);
  std::vector<std::size_t> at(rank, 0);  // the previous part's cell, per dimension
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts.is_empty(i)) continue;
    const std::span<const std::int64_t> s = parts.start(i), e = parts.end(i);
    std::size_t cell = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      const std::vector<std::int64_t>& c = cuts[d];
      at[d] = find_cut(c, s[d], at[d]);
      if (at[d] + 1 >= c.size() || c[at[d] + 1] != e[d]) return false;
      cell = cell * (c.size() - 1) + at[d];
    }
    if (seen[cell]) return false;
    seen[cell] = true;
  }
  return true;
}

std::optional<CoverDefect> find_cover_defect(const zspace::Range& whole,
                                             const zspace::RangeList& parts) {
  TAPESTRY_ASSERT(parts.rank() == whole.rank(), "cover parts must have the rank of the whole");
  if (whole.rank() > 0 && is_exact_grid(whole, parts)) return std::nullopt;
  switch (whole.rank()) {
    case 0:
      return find_defect_rank0(parts);
    case 1:
      return find_defect_fixed<1>(whole, parts);
    case 2:
      return find_defect_fixed<2>(whole, parts);
    case 3:
      return find_defect_fixed<3>(whole, parts);
    case 4:
      return find_defect_fixed<4>(whole, parts);
    case 5:
      return find_defect_fixed<5>(whole, parts);
    case 6:
      return find_defect_fixed<6>(whole, parts);
    case 7:
      return find_defect_fixed<7>(whole, parts);
    case 8:
      return find_defect_fixed<8>(whole, parts);
    default:
      break;
  }
  TAPESTRY_ASSERT(false, "exact cover checking supports ranks up to kMaxCoverRank");
  return std::nullopt;
}

std::optional<CoverDefect> find_cover_defect(const zspace::Range& whole,
                                             std::span<const zspace::Range> parts) {
  zspace::RangeList packed(whole.rank());
  packed.reserve(parts.size());
  for (const zspace::Range& part : parts) {
    TAPESTRY_ASSERT(part.rank() == whole.rank(), "cover parts must have the rank of the whole");
    packed.push_back(part);
  }
  return find_cover_defect(whole, packed);
}

}  // namespace tapestry::ir
