// projects_to (projection.h).
#include "projection.h"

#include <algorithm>
#include <cstdint>

#include "tapestry/support/error.h"

namespace tapestry::ir {

std::optional<bool> projects_to(const zspace::IndexProjection& ipf,
                                std::span<const std::int64_t> lo, std::span<const std::int64_t> hi,
                                std::span<const std::int64_t> start,
                                std::span<const std::int64_t> end) {
  const zspace::AffineMap& map = ipf.map();
  if (map.in_rank() != lo.size() || map.out_rank() != start.size() || start.size() != end.size()) {
    return false;
  }
  bool empty = false;
  for (std::size_t j = 0; j < lo.size(); ++j) empty |= lo[j] == hi[j];
  if (empty) {  // rare: defer to zspace's definition
    try {
      zspace::Range r = ipf.apply(zspace::Range(zspace::Point(lo), zspace::Point(hi)));
      return std::equal(start.begin(), start.end(), r.start().begin()) &&
             std::equal(end.begin(), end.end(), r.end().begin());
    } catch (const Error&) {
      return std::nullopt;
    }
  }
  // 128-bit accumulation, narrowed at the end: the same rule as zspace (only a final result
  // outside int64 is an overflow).
  __extension__ typedef __int128 Wide;  // GCC/Clang extension, as in zspace
  auto fits = [](Wide v) { return v >= INT64_MIN && v <= INT64_MAX; };
  for (std::size_t k = 0; k < map.out_rank(); ++k) {
    Wide s = map.offset()[k];
    Wide e = s + ipf.shape()[k];
    for (std::size_t j = 0; j < map.in_rank(); ++j) {
      Wide a = map.at(k, j);
      if (a == 0) continue;
      Wide x = a * lo[j];
      Wide y = a * (hi[j] - 1);
      s += x < y ? x : y;
      e += x < y ? y : x;
    }
    if (!fits(s) || !fits(e)) return std::nullopt;
    if (s != start[k] || e != end[k]) return false;
  }
  return true;
}

}  // namespace tapestry::ir
