// FlatIpf (projection.h).
#include "projection.h"

#include <algorithm>
#include <cstdint>

#include "tapestry/support/error.h"

namespace tapestry::ir {

FlatIpf::FlatIpf(const zspace::IndexProjection& ipf)
    : ipf_(&ipf), in_rank_(ipf.map().in_rank()), out_rank_(ipf.map().out_rank()) {
  const zspace::AffineMap& map = ipf.map();
  for (std::size_t k = 0; k < out_rank_; ++k) {
    words_.push_back(map.offset()[k]);
    words_.push_back(ipf.shape()[k]);
    const std::size_t count_at = words_.size();
    words_.push_back(0);
    for (std::size_t j = 0; j < in_rank_; ++j) {
      if (map.at(k, j) == 0) continue;
      words_.push_back(static_cast<std::int64_t>(j));
      words_.push_back(map.at(k, j));
      ++words_[count_at];
    }
  }
}

std::optional<bool> FlatIpf::projects_to(std::span<const std::int64_t> lo,
                                         std::span<const std::int64_t> hi,
                                         std::span<const std::int64_t> start,
                                         std::span<const std::int64_t> end) const {
  if (in_rank_ != lo.size() || out_rank_ != start.size() || start.size() != end.size()) {
    return false;
  }
  bool empty = false;
  for (std::size_t j = 0; j < lo.size(); ++j) empty |= lo[j] == hi[j];
  if (empty) {  // rare: defer to zspace's definition
    try {
      zspace::Range r = ipf_->apply(zspace::Range(zspace::Point(lo), zspace::Point(hi)));
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
  const std::int64_t* w = words_.data();
  for (std::size_t k = 0; k < out_rank_; ++k) {
    Wide s = w[0];
    Wide e = s + w[1];
    const std::int64_t count = w[2];
    w += 3;
    for (std::int64_t n = 0; n < count; ++n, w += 2) {
      const auto j = static_cast<std::size_t>(w[0]);
      const Wide a = w[1];
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
