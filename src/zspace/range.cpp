#include "tapestry/zspace/range.h"

#include <fmt/core.h>

#include <algorithm>

#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"
#include "tapestry/zspace/grid.h"

namespace tapestry::zspace {

Range::Range(Point start, Point end) : start_(std::move(start)), end_(std::move(end)) {
  if (start_.rank() != end_.rank()) {
    throw Error(fmt::format("range start {} and end {}: rank mismatch ({} vs {})",
                            start_.to_string(), end_.to_string(), start_.rank(), end_.rank()));
  }
  for (std::size_t i = 0; i < rank(); ++i) {
    if (start_[i] > end_[i]) {
      throw Error(fmt::format("range start {} must be <= end {} (dimension {})", start_.to_string(),
                              end_.to_string(), i));
    }
  }
}

Range Range::of_shape(const Point& shape) {
  return Range(Point::zeros(shape.rank()), shape);
}

Range Range::of_start_shape(const Point& start, const Point& shape) {
  return Range(start, start + shape);
}

std::int64_t Range::size() const {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < rank(); ++i) n = checked_mul(n, checked_sub(end_[i], start_[i]));
  return n;
}

bool Range::is_empty() const {
  for (std::size_t i = 0; i < rank(); ++i) {
    if (start_[i] == end_[i]) return true;
  }
  return false;
}

Point Range::inclusive_end() const {
  if (is_empty()) throw Error(fmt::format("inclusive end of the empty range {}", to_string()));
  return end_ - Point::ones(rank());
}

bool Range::contains(const Point& p) const {
  check_same_rank("Range::contains(point)", rank(), p.rank());
  for (std::size_t i = 0; i < rank(); ++i) {
    if (p[i] < start_[i] || p[i] >= end_[i]) return false;
  }
  return true;
}

bool Range::contains(const Range& other) const {
  check_same_rank("Range::contains(range)", rank(), other.rank());
  for (std::size_t i = 0; i < rank(); ++i) {
    if (other.start_[i] < start_[i] || other.end_[i] > end_[i]) return false;
  }
  return true;
}

std::optional<Range> Range::intersect(const Range& other) const {
  check_same_rank("Range::intersect", rank(), other.rank());
  Point lo = start_.max(other.start_);
  Point hi = end_.min(other.end_);
  for (std::size_t i = 0; i < rank(); ++i) {
    if (lo[i] > hi[i]) return std::nullopt;
  }
  return Range(std::move(lo), std::move(hi));
}

bool Range::overlaps(const Range& other) const {
  check_same_rank("Range::overlaps", rank(), other.rank());
  for (std::size_t i = 0; i < rank(); ++i) {
    if (std::max(start_[i], other.start_[i]) >= std::min(end_[i], other.end_[i])) return false;
  }
  return true;
}

Range Range::bounding(std::span<const Range> ranges) {
  if (ranges.empty()) throw Error("bounding range of an empty list of ranges");
  Point lo = ranges[0].start_;
  Point hi = ranges[0].end_;
  for (const Range& r : ranges.subspan(1)) {
    check_same_rank("Range::bounding", lo.rank(), r.rank());
    lo = lo.min(r.start_);
    hi = hi.max(r.end_);
  }
  return Range(std::move(lo), std::move(hi));
}

namespace {
void check_dim(const char* what, std::size_t dim, std::size_t rank) {
  if (dim >= rank)
    throw Error(fmt::format("{}: dimension {} is out of range for rank {}", what, dim, rank));
}
}  // namespace

std::vector<Range> Range::split_by_chunk(std::size_t dim, std::int64_t chunk) const {
  check_dim("split_by_chunk", dim, rank());
  if (chunk <= 0) throw Error(fmt::format("split_by_chunk: chunk size {} must be > 0", chunk));
  std::vector<Range> pieces;
  if (extent(dim) == 0) {
    pieces.push_back(*this);
    return pieces;
  }
  for (std::int64_t lo = start_[dim]; lo < end_[dim];) {
    const std::int64_t hi = end_[dim] - lo <= chunk ? end_[dim] : lo + chunk;
    pieces.push_back(with_dim(dim, lo, hi));
    lo = hi;
  }
  return pieces;
}

std::vector<Range> Range::split_by_sizes(std::size_t dim,
                                         std::span<const std::int64_t> sizes) const {
  check_dim("split_by_sizes", dim, rank());
  std::int64_t total = 0;
  for (std::int64_t s : sizes) {
    if (s < 0) throw Error(fmt::format("split_by_sizes: size {} must be >= 0", s));
    total = checked_add(total, s);
  }
  if (total != extent(dim)) {
    throw Error(fmt::format("split_by_sizes: sizes sum to {}, not {} (the extent of dimension {})",
                            total, extent(dim), dim));
  }
  std::vector<Range> pieces;
  pieces.reserve(sizes.size());
  std::int64_t lo = start_[dim];
  for (std::int64_t s : sizes) {
    pieces.push_back(with_dim(dim, lo, lo + s));
    lo += s;
  }
  return pieces;
}

std::vector<Range> Range::split_even(std::size_t dim, std::int64_t parts) const {
  check_dim("split_even", dim, rank());
  std::vector<std::int64_t> counts(rank(), 1);
  counts[dim] = parts;
  return Grid(*this, counts).cells();
}

std::vector<Range> Range::split_grid(std::span<const std::int64_t> parts) const {
  return Grid(*this, parts).cells();
}

Range Range::permute(std::span<const std::size_t> perm) const {
  return Range(start_.permute(perm), end_.permute(perm));
}

Range Range::product(const Range& other) const {
  return Range(start_.concat(other.start_), end_.concat(other.end_));
}

Range Range::translate(const Point& offset) const {
  return Range(start_ + offset, end_ + offset);
}

Range Range::with_dim(std::size_t dim, std::int64_t lo, std::int64_t hi) const {
  check_dim("with_dim", dim, rank());
  return Range(start_.with(dim, lo), end_.with(dim, hi));
}

Range Range::slice(std::size_t from, std::size_t to) const {
  return Range(start_.slice(from, to), end_.slice(from, to));
}

std::string Range::to_string() const {
  std::string out = "zr[";
  for (std::size_t i = 0; i < rank(); ++i) {
    if (i > 0) out += ", ";
    out += fmt::format("{}:{}", start_[i], end_[i]);
  }
  out += "]";
  return out;
}

PointIterator::PointIterator(const Range* range, bool done) : range_(range), done_(done) {
  if (!done_) current_ = range->start();
}

PointIterator& PointIterator::operator++() {
  TAPESTRY_ASSERT(!done_, "PointIterator incremented past the end");
  auto& coords = current_.coords_;
  for (std::size_t i = coords.size(); i-- > 0;) {
    if (++coords[i] < range_->end()[i]) return *this;
    coords[i] = range_->start()[i];
  }
  done_ = true;  // carried out of the first dimension (or rank 0: a single point)
  return *this;
}

}  // namespace tapestry::zspace
