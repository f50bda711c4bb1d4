// projects_to: does an IPF map an index box exactly onto given corners? (private to module ir)
//
// The application constraints ask this four million times for a million shards; building the
// projected Range (two Points) each time costs more than the arithmetic. This computes the same
// interval arithmetic as zspace::IndexProjection::apply(Range) (see index_projection.h),
// overflow-checked, and compares as it goes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "tapestry/zspace/index_projection.h"

namespace tapestry::ir {

/// true when ipf.apply([lo, hi)) == [start, end); false when not (including rank mismatches);
/// nullopt when the arithmetic overflows int64. The index box [lo, hi) must be a valid range
/// (equal ranks, lo <= hi).
std::optional<bool> projects_to(const zspace::IndexProjection& ipf,
                                std::span<const std::int64_t> lo, std::span<const std::int64_t> hi,
                                std::span<const std::int64_t> start,
                                std::span<const std::int64_t> end);

}  // namespace tapestry::ir
