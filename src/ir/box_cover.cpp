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

// Appends the 2^R signed corners of a non-empty box.
template <std::size_t R>
void add_corners(const zspace::Range& box, std::int32_t sign, std::vector<Corner<R>>& out) {
  if (box.is_empty()) return;
  for (unsigned mask = 0; mask < (1u << R); ++mask) {
    Corner<R> corner;
    std::int32_t s = sign;
    for (std::size_t d = 0; d < R; ++d) {
      if ((mask >> d) & 1u) {
        corner.coords[d] = box.end()[d];
        s = -s;
      } else {
        corner.coords[d] = box.start()[d];
      }
    }
    corner.sign = s;
    out.push_back(corner);
  }
}

template <std::size_t R>
std::optional<CoverDefect> find_defect_fixed(const zspace::Range& whole,
                                             std::span<const zspace::Range> parts) {
  std::vector<Corner<R>> corners;
  corners.reserve((parts.size() + 1) << R);
  for (const zspace::Range& part : parts) add_corners<R>(part, +1, corners);
  add_corners<R>(whole, -1, corners);
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

// Fast path for the shape sharding produces: the parts are the cells of a grid. The cut
// coordinates of each dimension are those of `whole` and of every part; when every non-empty part
// spans exactly one cell, the parts are distinct cells, and there are as many parts as cells,
// the cover is exact. Returns true for an exact grid cover, false when the parts are not such a
// grid (the corner method then decides, and finds a witness). O(n·r·log n).
bool is_exact_grid(const zspace::Range& whole, std::span<const zspace::Range> parts) {
  std::size_t rank = whole.rank();
  std::vector<std::vector<std::int64_t>> cuts(rank);
  std::size_t nonempty = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    cuts[d] = {whole.start()[d], whole.end()[d]};
    for (const zspace::Range& p : parts) {
      if (p.is_empty()) continue;
      if (p.start()[d] < whole.start()[d] || p.end()[d] > whole.end()[d]) return false;
      cuts[d].push_back(p.start()[d]);
      cuts[d].push_back(p.end()[d]);
    }
    std::sort(cuts[d].begin(), cuts[d].end());
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
  }
  for (const zspace::Range& p : parts) nonempty += p.is_empty() ? 0 : 1;
  std::size_t cells = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    cells *= cuts[d].size() - 1;
    if (cells > nonempty) return false;  // more cells than parts: a gap (or not a grid)
  }
  if (cells != nonempty || whole.is_empty()) return false;
  std::vector<bool> seen(cells, false);
  for (const zspace::Range& p : parts) {
    if (p.is_empty()) continue;
    std::size_t cell = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      auto it = std::lower_bound(cuts[d].begin(), cuts[d].end(), p.start()[d]);
      if (it + 1 >= cuts[d].end() || *(it + 1) != p.end()[d]) return false;  // spans > 1 cell
      cell = cell * (cuts[d].size() - 1) + static_cast<std::size_t>(it - cuts[d].begin());
    }
    if (seen[cell]) return false;
    seen[cell] = true;
  }
  return true;
}

// Rank 0: the whole is the single point (); every part is that point too.
std::optional<CoverDefect> find_defect_rank0(std::span<const zspace::Range> parts) {
  auto count = static_cast<std::int64_t>(parts.size());
  if (count == 1) return std::nullopt;
  return CoverDefect{zspace::Point(), count, true};
}

}  // namespace

std::optional<CoverDefect> find_cover_defect(const zspace::Range& whole,
                                             std::span<const zspace::Range> parts) {
  for (const zspace::Range& part : parts) {
    TAPESTRY_ASSERT(part.rank() == whole.rank(), "cover parts must have the rank of the whole");
  }
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

}  // namespace tapestry::ir
