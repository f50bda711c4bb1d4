#include "tapestry/zspace/range_list.h"

#include <fmt/core.h>

#include "tapestry/support/error.h"

namespace tapestry::zspace {

void RangeList::push_back(std::span<const std::int64_t> start, std::span<const std::int64_t> end) {
  check_same_rank("RangeList::push_back (start)", rank_, start.size());
  check_same_rank("RangeList::push_back (end)", rank_, end.size());
  for (std::size_t d = 0; d < rank_; ++d) {
    if (start[d] > end[d]) {
      throw Error(fmt::format("range start {} must be <= end {} (dimension {})",
                              Point(start).to_string(), Point(end).to_string(), d));
    }
  }
  words_.insert(words_.end(), start.begin(), start.end());
  words_.insert(words_.end(), end.begin(), end.end());
  ++size_;
}

Range RangeList::range(std::size_t i) const {
  return Range(Point(start(i)), Point(end(i)));
}

bool RangeList::contains(std::size_t i, const Point& p) const {
  check_same_rank("RangeList::contains(point)", rank_, p.rank());
  const std::span<const std::int64_t> s = start(i), e = end(i);
  for (std::size_t d = 0; d < rank_; ++d) {
    if (p[d] < s[d] || p[d] >= e[d]) return false;
  }
  return true;
}

}  // namespace tapestry::zspace
