// FlatIpf: does an IPF map an index box exactly onto given corners? (private to module ir)
//
// The application constraints ask this four million times for a million shards; building the
// projected Range (two Points) each time costs more than the arithmetic. FlatIpf keeps, per
// tensor dim, the offset, the shape and the nonzero coefficients of the IPF's row in one word
// vector, and computes the same interval arithmetic as zspace::IndexProjection::apply(Range)
// (see index_projection.h), overflow-checked, comparing as it goes.
//
//   FlatIpf ipf(IndexProjection(AffineMap::from_rows({{1, 0, 0}, {0, 0, 1}}, {0, 0}), {1, 1}));
//   ipf.projects_to({0, 0, 0}, {40, 40, 1600}, {0, 0}, {40, 1600}) == true
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tapestry/zspace/index_projection.h"

namespace tapestry::ir {

class FlatIpf {
 public:
  /// Keeps a pointer to `ipf` (for empty boxes, left to zspace's definition).
  explicit FlatIpf(const zspace::IndexProjection& ipf);

  /// true when ipf.apply([lo, hi)) == [start, end); false when not (including rank mismatches);
  /// nullopt when the arithmetic overflows int64. The index box [lo, hi) must be a valid range
  /// (equal ranks, lo <= hi).
  [[nodiscard]] std::optional<bool> projects_to(std::span<const std::int64_t> lo,
                                                std::span<const std::int64_t> hi,
                                                std::span<const std::int64_t> start,
                                                std::span<const std::int64_t> end) const;

 private:
  const zspace::IndexProjection* ipf_;
  std::size_t in_rank_ = 0;
  std::size_t out_rank_ = 0;
  // Per tensor dim k: offset, shape, the count n of nonzero coefficients, then n pairs
  // (index dim, coefficient).
  std::vector<std::int64_t> words_;
};

}  // namespace tapestry::ir
