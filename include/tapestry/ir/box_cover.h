// Exact-cover checking of boxes: do `parts` cover `whole` exactly once, with no gap, no
// overlap and nothing outside?
//
// Used by the `application-index-partition` and `application-output-coverage` constraints. The
// Java original only compared the sum of the sizes, which accepts an overlap plus a gap of the
// same size; this is exact, in O(n·2^r·log n) for n boxes of rank r.
//
// Method (signed corner counting). The indicator of a half-open box [a, b) is the sum over its
// 2^r corners c of sign(c)·[c ≤ x] (dominance order), where a corner taking `end` in an odd number
// of dimensions has sign −1. So Σ_i 1[part_i] = 1[whole] as functions if and only if the signed
// corner multisets agree. We add the parts' corners, subtract the whole's, and sort: if every
// corner cancels, the cover is exact. Otherwise the lexicographically smallest corner c with a
// non-zero residue is itself a witness: no other residual corner is ≤ c, so the coverage count at
// the point c differs from [c ∈ whole] by exactly the residue.
//
//   find_cover_defect(zr[0:10], {zr[0:5], zr[5:10]})  == nullopt
//   find_cover_defect(zr[0:10], {zr[0:6], zr[5:10]})  == {point (5), count 2}     overlap
//   find_cover_defect(zr[0:10], {zr[0:4], zr[5:10]})  == {point (4), count 0}     gap
//   find_cover_defect(zr[0:4, 0:4], {zr[0:2, 0:4], zr[2:4, 0:2], zr[2:4, 2:4]}) == nullopt
//
// Fast path (is_exact_grid), tried first: sharding makes the parts the cells of a grid, and a
// grid is recognised in O(n·r·log k) for k cuts a dimension, without sorting 2^r·n corners. Its
// cuts are read off the "axis" parts only — those starting at whole.start in every dimension but
// one, ~k per dimension — and then every part is checked to be exactly one cell of that grid,
// no cell twice, and as many parts as cells. That proves the cover exact; anything else (an
// overlap, a gap, a part outside, a cover that is not a grid) falls to the corner method, which
// decides and finds the witness.
//
//   is_exact_grid(zr[0:4, 0:6], {zr[0:2, 0:3], zr[0:2, 3:6], zr[2:4, 0:3], zr[2:4, 3:6]}) == true
//   is_exact_grid(zr[0:4, 0:4], {zr[0:2, 0:4], zr[2:4, 0:2], zr[2:4, 2:4]}) == false  (exact,
//       but not a grid: the corner method says so)
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"
#include "tapestry/zspace/range_list.h"

namespace tapestry::ir {

struct CoverDefect {
  zspace::Point point;  // a point covered the wrong number of times
  std::int64_t count;   // how many parts cover it: 0 inside `whole` is a gap; ≥ 2 an overlap;
                        // ≥ 1 outside `whole` a part sticking out
  bool inside = true;   // whether `point` lies in `whole`
};

/// The highest rank find_cover_defect accepts (2^r corners per box).
inline constexpr std::size_t kMaxCoverRank = 8;

/// nullopt when `parts` cover `whole` exactly once; otherwise a witness point. All ranges must
/// have the rank of `whole`, at most kMaxCoverRank (asserted: callers check user input first).
std::optional<CoverDefect> find_cover_defect(const zspace::Range& whole,
                                             const zspace::RangeList& parts);
/// The same for parts held as Ranges.
std::optional<CoverDefect> find_cover_defect(const zspace::Range& whole,
                                             std::span<const zspace::Range> parts);

/// True when the non-empty `parts` are the cells of a grid of a non-empty `whole`, each once —
/// an exact cover. False when they are not such a grid (the cover may still be exact: ask
/// find_cover_defect). `parts` must have the rank of `whole`.
bool is_exact_grid(const zspace::Range& whole, const zspace::RangeList& parts);

}  // namespace tapestry::ir
