// AffineMap: x ↦ A·x + b over int64 points.
//
// `A` has one row per output dimension and one column per input dimension; `b` (the offset)
// has one entry per output dimension. Storage is inline for matrices up to 6×6.
//
// Worked example (A1–A5 of the acceptance vectors): A = [[1,0],[0,2],[1,2]], b = (4,5,6)
//
//   apply((1, 1))             == (5, 7, 9)
//   permute_inputs({1, 0})    == A [[0,1],[2,0],[2,1]], b (4,5,6)      (columns reordered)
//   permute_outputs({1, 0, 2})== A [[0,2],[1,0],[1,2]], b (5,4,6)      (rows reordered)
//   translate((1, 2, 3))      == same A, b (5,7,9)
//   apply((1, 1, 1))          -> Error: 3 inputs given, 2 expected
//
// Composition: `f.compose(g)` is f ∘ g, x ↦ f(g(x)) = A_f·(A_g·x + b_g) + b_f. For example with
// f = [[1, 1]] + (0) (sum of two coordinates) and g = [[2],[3]] + (1, 0) (x ↦ (2x+1, 3x)):
// f.compose(g) = [[5]] + (1), so 2 ↦ 11.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "tapestry/zspace/inline_vector.h"
#include "tapestry/zspace/point.h"

namespace tapestry::zspace {

class AffineMap {
 public:
  /// The map from a 0-dimensional space to a 0-dimensional space.
  AffineMap() = default;
  /// From row-major `rows` (out_rank rows of in_rank entries each) and `offset` (out_rank).
  /// `in_rank` is needed because a map with no rows still has an input rank.
  AffineMap(std::size_t in_rank, std::span<const std::int64_t> row_major, Point offset);
  /// From nested rows: AffineMap::from_rows({{1,0},{0,2}}, {4,5}). All rows must have equal
  /// length (Error otherwise); with no rows, in_rank is 0 unless given.
  static AffineMap from_rows(const std::vector<std::vector<std::int64_t>>& rows, Point offset,
                             std::size_t in_rank_if_no_rows = 0);
  static AffineMap identity(std::size_t rank);
  /// The zero matrix out_rank × in_rank with zero offset.
  static AffineMap zero(std::size_t out_rank, std::size_t in_rank);

  [[nodiscard]] std::size_t in_rank() const { return in_rank_; }
  [[nodiscard]] std::size_t out_rank() const { return offset_.rank(); }
  /// Matrix entry A[row][col].
  [[nodiscard]] std::int64_t at(std::size_t row, std::size_t col) const {
    return matrix_[row * in_rank_ + col];
  }
  [[nodiscard]] const Point& offset() const { return offset_; }
  [[nodiscard]] std::span<const std::int64_t> row(std::size_t r) const {
    return matrix_.span().subspan(r * in_rank_, in_rank_);
  }
  /// The rows as nested vectors (for JSON and printing).
  [[nodiscard]] std::vector<std::vector<std::int64_t>> rows() const;
  /// True when column `col` of A is all zeros (the output does not depend on input `col`).
  [[nodiscard]] bool is_zero_column(std::size_t col) const;

  /// A·x + b, overflow-checked. Error when x.rank() != in_rank().
  [[nodiscard]] Point apply(const Point& x) const;

  /// Reorders columns: new input (column) i is old input perm[i].
  [[nodiscard]] AffineMap permute_inputs(std::span<const std::size_t> perm) const;
  /// Reorders rows (and offset entries): new row i is old row perm[i].
  [[nodiscard]] AffineMap permute_outputs(std::span<const std::size_t> perm) const;
  /// Adds `delta` to the offset.
  [[nodiscard]] AffineMap translate(const Point& delta) const;
  /// The map whose outputs are this map's followed by `below`'s (same input rank):
  /// ([[1, 0]] + (3)).stack([[0, 2]] + (4)) == [[1, 0], [0, 2]] + (3, 4).
  [[nodiscard]] AffineMap stack(const AffineMap& below) const;
  /// this ∘ inner: x ↦ this(inner(x)). inner.out_rank() must equal in_rank().
  [[nodiscard]] AffineMap compose(const AffineMap& inner) const;

  friend bool operator==(const AffineMap& a, const AffineMap& b) {
    return a.in_rank_ == b.in_rank_ && a.offset_ == b.offset_ && a.matrix_ == b.matrix_;
  }

  /// `[[1, 0], [0, 2]] + (4, 5)`.
  [[nodiscard]] std::string to_string() const;

 private:
  std::size_t in_rank_ = 0;
  InlineVector<std::int64_t, kInlineRank * kInlineRank> matrix_;  // row-major, out × in
  Point offset_;
};

}  // namespace tapestry::zspace
