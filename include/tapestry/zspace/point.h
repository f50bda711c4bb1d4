// Point: a vector of int64 coordinates in ZSpace.
//
// Points are immutable values with inline storage for rank <= kInlineRank (no heap allocation).
// Arithmetic is element-wise and overflow-checked; ranks must match (an Error otherwise).
//
// Ordering is *dominance*, a partial order: a < b when a <= b in every coordinate and a != b.
//
//   Point{0, 0} <  Point{0, 1}                         // true
//   Point{0, 1} <=> Point{1, 0}                        // partial_ordering::unordered
//   Point{1, 2} + Point{10, 20} == Point{11, 22}
//   Point{5, 6, 7}.permute({1, 2, 0}) == Point{6, 7, 5}   // result[i] = p[perm[i]]
//
// For ordered containers use `lex_less` (lexicographic order), not `<`.
#pragma once

#include <compare>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "tapestry/zspace/inline_vector.h"

namespace tapestry::zspace {

/// Ranks up to this size are stored inline (no heap allocation).
inline constexpr std::size_t kInlineRank = 6;

class Point {
 public:
  /// The 0-dimensional point `()`.
  Point() = default;
  Point(std::initializer_list<std::int64_t> coords) : coords_(coords) {}
  explicit Point(std::span<const std::int64_t> coords) : coords_(coords) {}

  /// A point of `rank` coordinates all equal to `value`.
  static Point filled(std::size_t rank, std::int64_t value);
  static Point zeros(std::size_t rank) { return filled(rank, 0); }
  static Point ones(std::size_t rank) { return filled(rank, 1); }

  [[nodiscard]] std::size_t rank() const { return coords_.size(); }
  std::int64_t operator[](std::size_t i) const { return coords_[i]; }
  [[nodiscard]] std::span<const std::int64_t> coords() const { return coords_.span(); }
  const std::int64_t* begin() const { return coords_.begin(); }
  const std::int64_t* end() const { return coords_.end(); }

  /// A copy with coordinate `dim` replaced by `value`.
  [[nodiscard]] Point with(std::size_t dim, std::int64_t value) const;

  Point operator+(const Point& other) const;
  Point operator-(const Point& other) const;
  Point operator-() const;
  /// Element-wise product.
  [[nodiscard]] Point scale(const Point& other) const;
  /// Element-wise min / max (ranks must match).
  [[nodiscard]] Point min(const Point& other) const;
  [[nodiscard]] Point max(const Point& other) const;
  /// Product of all coordinates (1 for rank 0), overflow-checked.
  [[nodiscard]] std::int64_t product() const;
  /// Sum of all coordinates, overflow-checked.
  [[nodiscard]] std::int64_t sum() const;

  /// result[i] = (*this)[perm[i]]; `perm` must be a permutation of 0..rank-1 (Error otherwise).
  [[nodiscard]] Point permute(std::span<const std::size_t> perm) const;
  /// Concatenation: (1, 2).concat((3)) == (1, 2, 3).
  [[nodiscard]] Point concat(const Point& other) const;
  /// Coordinates [from, to).
  [[nodiscard]] Point slice(std::size_t from, std::size_t to) const;

  friend bool operator==(const Point& a, const Point& b) { return a.coords_ == b.coords_; }
  /// Dominance partial order. Points of different ranks are unordered.
  friend std::partial_ordering operator<=>(const Point& a, const Point& b);
  /// Lexicographic strict weak order (shorter rank first), for sorting and maps.
  friend bool lex_less(const Point& a, const Point& b);

  /// `(2, 3)`; the 0-dimensional point prints `()`.
  [[nodiscard]] std::string to_string() const;

 private:
  friend class PointIterator;  // steps its current point in place
  InlineVector<std::int64_t, kInlineRank> coords_;
};

/// Throws Error unless `perm` is a permutation of 0..rank-1 (every index exactly once).
void check_permutation(std::span<const std::size_t> perm, std::size_t rank);

/// Throws Error naming `what` unless the ranks are equal.
void check_same_rank(const char* what, std::size_t a, std::size_t b);

}  // namespace tapestry::zspace
