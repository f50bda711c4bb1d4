// Brute-force oracles and rapidcheck generators for the zspace property tests.
//
// The oracles restate the definitions of docs/design.md §2 with plain loops over std::vector, never
// calling the code under test: a point's box is [A·i + b, A·i + b + s) computed by hand, a range's
// points come from an odometer, membership is `lo <= p < hi` per coordinate. Each property then
// compares the library's answer with the oracle's on small random values.
//
// The generators must be called inside a property (they use rapidcheck's `*gen`). They produce
// small values on purpose — coordinates in [-6, 6], extents up to 4, coefficients in [-3, 3],
// window shapes up to 6 (so windows are often larger than strides) — so that enumerating every
// point stays cheap while still covering negative, mixed-sign, zero-row and empty cases.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/index_projection.h"
#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"

namespace tapestry::zspace::oracle {

using Coords = std::vector<std::int64_t>;

// ---- generators -----------------------------------------------------------------------------

inline std::size_t gen_rank(std::size_t max_rank) {
  return *rc::gen::inRange<std::size_t>(0, max_rank + 1);
}

inline std::int64_t gen_coord() {
  return *rc::gen::inRange<std::int64_t>(-6, 7);
}

inline Point gen_point(std::size_t rank) {
  Coords c(rank);
  for (auto& x : c) x = gen_coord();
  return Point(c);
}

/// A range of `rank` dims with extents in [0, max_extent] (so sometimes empty).
inline Range gen_range(std::size_t rank, std::int64_t max_extent = 4) {
  Coords lo(rank), hi(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    lo[d] = gen_coord();
    hi[d] = lo[d] + *rc::gen::inRange<std::int64_t>(0, max_extent + 1);
  }
  return Range(Point(lo), Point(hi));
}

/// A non-empty range (every extent in [1, max_extent]).
inline Range gen_nonempty_range(std::size_t rank, std::int64_t max_extent = 4) {
  Coords lo(rank), hi(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    lo[d] = gen_coord();
    hi[d] = lo[d] + *rc::gen::inRange<std::int64_t>(1, max_extent + 1);
  }
  return Range(Point(lo), Point(hi));
}

/// An out × in matrix with entries in [-3, 3], mixed signs, and about one zero row in four.
inline AffineMap gen_map(std::size_t out_rank, std::size_t in_rank) {
  Coords entries(out_rank * in_rank, 0);
  for (std::size_t r = 0; r < out_rank; ++r) {
    if (*rc::gen::inRange(0, 4) == 0) continue;  // zero row: a broadcast dimension
    for (std::size_t c = 0; c < in_rank; ++c) {
      entries[r * in_rank + c] = *rc::gen::inRange<std::int64_t>(-3, 4);
    }
  }
  return AffineMap(in_rank, entries, gen_point(out_rank));
}

/// An IPF with window shapes in [0, 6] (often larger than the strides).
inline IndexProjection gen_ipf(std::size_t tensor_rank, std::size_t index_rank) {
  Coords shape(tensor_rank);
  for (auto& s : shape) s = *rc::gen::inRange<std::int64_t>(0, 7);
  return IndexProjection(gen_map(tensor_rank, index_rank), Point(shape));
}

/// A uniformly random permutation of 0..rank-1 (Fisher–Yates).
inline std::vector<std::size_t> gen_permutation(std::size_t rank) {
  std::vector<std::size_t> perm(rank);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  for (std::size_t i = rank; i > 1; --i) {
    std::swap(perm[i - 1], perm[*rc::gen::inRange<std::size_t>(0, i)]);
  }
  return perm;
}

// ---- oracles --------------------------------------------------------------------------------

inline Coords coords(const Point& p) {
  return Coords(p.begin(), p.end());
}

/// Calls `visit` on every point of [lo, hi) in row-major order (an odometer). A 0-d box has one
/// point; a box with a zero extent has none.
inline void for_each_point(const Coords& lo, const Coords& hi,
                           const std::function<void(const Coords&)>& visit) {
  for (std::size_t d = 0; d < lo.size(); ++d) {
    if (lo[d] >= hi[d]) return;
  }
  Coords p = lo;
  while (true) {
    visit(p);
    std::size_t d = p.size();
    while (d > 0) {
      --d;
      if (++p[d] < hi[d]) break;
      p[d] = lo[d];
      if (d == 0) return;
    }
    if (p.empty()) return;
  }
}

inline void for_each_point(const Range& r, const std::function<void(const Coords&)>& visit) {
  for_each_point(coords(r.start()), coords(r.end()), visit);
}

inline bool inside(const Range& r, const Coords& p) {
  for (std::size_t d = 0; d < p.size(); ++d) {
    if (p[d] < r.start()[d] || p[d] >= r.end()[d]) return false;
  }
  return true;
}

inline std::int64_t point_count(const Range& r) {
  std::int64_t n = 0;
  for_each_point(r, [&](const Coords&) { ++n; });
  return n;
}

/// A·x + b by hand.
inline Coords affine_apply(const AffineMap& m, const Coords& x) {
  Coords y(m.out_rank());
  for (std::size_t k = 0; k < m.out_rank(); ++k) {
    y[k] = m.offset()[k];
    for (std::size_t j = 0; j < m.in_rank(); ++j) y[k] += m.at(k, j) * x[j];
  }
  return y;
}

/// The box [A·i + b, A·i + b + s) by hand.
inline Range point_box(const IndexProjection& f, const Coords& i) {
  Coords lo = affine_apply(f.map(), i);
  Coords hi = lo;
  for (std::size_t k = 0; k < hi.size(); ++k) hi[k] += f.shape()[k];
  return Range(Point(lo), Point(hi));
}

/// The bounding box of the point boxes of every index point in `index`, or, for an empty
/// index range, the empty box at A·lo + b.
inline Range range_box(const IndexProjection& f, const Range& index) {
  if (point_count(index) == 0) {
    Coords at = affine_apply(f.map(), coords(index.start()));
    return Range(Point(at), Point(at));
  }
  Coords lo, hi;
  for_each_point(index, [&](const Coords& i) {
    Range box = point_box(f, i);
    if (lo.empty() && hi.empty()) {
      lo = coords(box.start());
      hi = coords(box.end());
    }
    for (std::size_t k = 0; k < lo.size(); ++k) {
      lo[k] = std::min(lo[k], box.start()[k]);
      hi[k] = std::max(hi[k], box.end()[k]);
    }
  });
  return Range(Point(lo), Point(hi));
}

/// A window around both ranges, one cell wider on every side, for enumerating candidates.
inline Range window(const Range& a, const Range& b) {
  Coords lo(a.rank()), hi(a.rank());
  for (std::size_t d = 0; d < a.rank(); ++d) {
    lo[d] = std::min(a.start()[d], b.start()[d]) - 1;
    hi[d] = std::max(a.end()[d], b.end()[d]) + 1;
  }
  return Range(Point(lo), Point(hi));
}

/// True when `perm` holds every index of 0..rank-1 exactly once.
inline bool is_permutation(const std::vector<std::size_t>& perm, std::size_t rank) {
  if (perm.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (std::size_t p : perm) {
    if (p >= rank || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

}  // namespace tapestry::zspace::oracle
