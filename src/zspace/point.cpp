#include "tapestry/zspace/point.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>

#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::zspace {

void check_same_rank(const char* what, std::size_t a, std::size_t b) {
  if (a != b) throw Error(fmt::format("{}: rank mismatch ({} vs {})", what, a, b));
}

void check_permutation(std::span<const std::size_t> perm, std::size_t rank) {
  if (perm.size() != rank) {
    throw Error(fmt::format("permutation ({}) has {} entries, expected {}", fmt::join(perm, ", "),
                            perm.size(), rank));
  }
  InlineVector<bool, kInlineRank> seen(rank, false);
  for (std::size_t p : perm) {
    if (p >= rank || seen[p]) {
      throw Error(fmt::format("({}) is not a permutation of 0..{}", fmt::join(perm, ", "),
                              rank == 0 ? 0 : rank - 1));
    }
    seen[p] = true;
  }
}

Point Point::filled(std::size_t rank, std::int64_t value) {
  Point p;
  p.coords_ = InlineVector<std::int64_t, kInlineRank>(rank, value);
  return p;
}

Point Point::with(std::size_t dim, std::int64_t value) const {
  TAPESTRY_ASSERT(dim < rank(), "Point::with: dim out of range");
  Point p = *this;
  p.coords_[dim] = value;
  return p;
}

namespace {
template <typename Op>
Point zip(const char* what, const Point& a, const Point& b, Op op) {
  check_same_rank(what, a.rank(), b.rank());
  InlineVector<std::int64_t, kInlineRank> out(a.rank());
  for (std::size_t i = 0; i < a.rank(); ++i) out[i] = op(a[i], b[i]);
  return Point(out.span());
}
}  // namespace

Point Point::operator+(const Point& other) const {
  return zip("point +", *this, other, checked_add);
}
Point Point::operator-(const Point& other) const {
  return zip("point -", *this, other, checked_sub);
}
Point Point::scale(const Point& other) const {
  return zip("point scale", *this, other, checked_mul);
}
Point Point::min(const Point& other) const {
  return zip("point min", *this, other,
             [](std::int64_t a, std::int64_t b) { return std::min(a, b); });
}
Point Point::max(const Point& other) const {
  return zip("point max", *this, other,
             [](std::int64_t a, std::int64_t b) { return std::max(a, b); });
}
Point Point::operator-() const {
  return zeros(rank()) - *this;
}

std::int64_t Point::product() const {
  std::int64_t r = 1;
  for (std::int64_t c : coords_) r = checked_mul(r, c);
  return r;
}

std::int64_t Point::sum() const {
  std::int64_t r = 0;
  for (std::int64_t c : coords_) r = checked_add(r, c);
  return r;
}

Point Point::permute(std::span<const std::size_t> perm) const {
  check_permutation(perm, rank());
  InlineVector<std::int64_t, kInlineRank> out(rank());
  for (std::size_t i = 0; i < rank(); ++i) out[i] = coords_[perm[i]];
  return Point(out.span());
}

Point Point::concat(const Point& other) const {
  InlineVector<std::int64_t, kInlineRank> out(rank() + other.rank());
  std::copy(begin(), end(), out.begin());
  std::copy(other.begin(), other.end(), out.begin() + static_cast<std::ptrdiff_t>(rank()));
  return Point(out.span());
}

Point Point::slice(std::size_t from, std::size_t to) const {
  if (from > to || to > rank()) {
    throw Error(fmt::format("slice [{}, {}) is out of range for rank {}", from, to, rank()));
  }
  return Point(coords().subspan(from, to - from));
}

std::partial_ordering operator<=>(const Point& a, const Point& b) {
  if (a.rank() != b.rank()) return std::partial_ordering::unordered;
  bool less = false;
  bool greater = false;
  for (std::size_t i = 0; i < a.rank(); ++i) {
    less |= a[i] < b[i];
    greater |= a[i] > b[i];
  }
  if (less && greater) return std::partial_ordering::unordered;
  if (less) return std::partial_ordering::less;
  if (greater) return std::partial_ordering::greater;
  return std::partial_ordering::equivalent;
}

bool lex_less(const Point& a, const Point& b) {
  if (a.rank() != b.rank()) return a.rank() < b.rank();
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

std::string Point::to_string() const {
  return fmt::format("({})", fmt::join(coords(), ", "));
}

}  // namespace tapestry::zspace
