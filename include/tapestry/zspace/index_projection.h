// IndexProjection (IPF): how an operation's index space maps onto one of its tensors.
//
// An IPF is an AffineMap (A, b) plus a `shape` s. An index point i selects the tensor box
//
//     [A·i + b,  A·i + b + s)
//
// and a non-empty index range [lo, hi) selects the *exact* bounding box of the union of its
// points' boxes, computed by interval arithmetic per output dimension k:
//
//     start_k = b_k       + Σ_j min(A_kj·lo_j, A_kj·(hi_j − 1))
//     end_k   = b_k + s_k + Σ_j max(A_kj·lo_j, A_kj·(hi_j − 1))
//
// This is right for mixed-sign rows, which the Java original gets wrong (it maps the two corner
// points, giving zr[0:1] below). An empty index range maps to the empty box [A·lo + b, A·lo + b).
// All arithmetic is overflow-checked.
//
// Worked examples (vectors I1–I6):
//
//   A = [[1,0],[0,1],[1,1]], b = (10,20,30), s = (4,4,1)
//     point (5, 6)          -> zr[15:19, 26:30, 41:42]
//     range zr[5:7, 6:8]    -> zr[15:20, 26:31, 41:44]
//     range zr[5:5, 6:6]    -> zr[15:15, 26:26, 41:41]   (empty in, empty out)
//   A = [[1,-1]], b = (0), s = (1):  range zr[0:3, 0:3] -> zr[-2:3]   (i - j ranges over -2..2)
//   A = [[2]], s = (3) (stride 2, window 3): range zr[0:4] -> zr[0:9]  (windows overlap)
//
// A Linear layer Y = X·Wᵀ + b with index [batch, out] and W laid out [out, in] (K = in):
//   X: A = [[1,0],[0,0]], s = (1, K)   — a row of X per batch index, all of `in`
//   W: A = [[0,1],[0,0]], s = (1, K)   — a row of W per out index
//   b: A = [[0,1]],       s = (1)
//   Y: identity,          s = (1, 1)
#pragma once

#include <optional>
#include <span>
#include <string>

#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/range.h"

namespace tapestry::zspace {

class IndexProjection {
 public:
  /// The 0-d → 0-d projection.
  IndexProjection() = default;
  /// `shape` defaults to all ones (one tensor cell per index point).
  explicit IndexProjection(AffineMap map);
  /// Error when shape.rank() != map.out_rank() or any shape entry is negative.
  IndexProjection(AffineMap map, Point shape);
  /// The identity projection of rank n with unit shape.
  static IndexProjection identity(std::size_t rank);

  [[nodiscard]] const AffineMap& map() const { return map_; }
  [[nodiscard]] const Point& shape() const { return shape_; }
  [[nodiscard]] std::size_t index_rank() const { return map_.in_rank(); }
  [[nodiscard]] std::size_t tensor_rank() const { return map_.out_rank(); }

  /// The box selected by one index point: [A·i + b, A·i + b + s).
  [[nodiscard]] Range apply(const Point& index) const;
  /// The exact bounding box selected by an index range (see the file comment).
  [[nodiscard]] Range apply(const Range& index) const;

  /// Shifts the selected boxes by `delta` in tensor space (b += delta).
  [[nodiscard]] IndexProjection translate(const Point& delta) const;
  /// Re-expresses the IPF over a new index space j related to the old one by i = inner(j):
  /// the result maps j to this->apply(inner(j)). Used when sharding adds or re-offsets index
  /// dimensions; e.g. splitting a reduction dim k of extent K into p blocks uses
  /// inner(block, k') = (…, block·(K/p) + k', …).
  [[nodiscard]] IndexProjection compose(const AffineMap& inner) const;
  /// The projection onto the product space: this IPF's tensor dims followed by `below`'s (same
  /// index rank), shapes concatenated. Splitting a reduction uses it to put a `block` row on top
  /// of an output IPF: IPF([[1, 0, 0]] + (0), shape (1)).stack(result) writes partial[block, …].
  [[nodiscard]] IndexProjection stack(const IndexProjection& below) const;
  /// Reorders the index dimensions (columns of A): new index dim i is old dim perm[i].
  [[nodiscard]] IndexProjection permute_inputs(std::span<const std::size_t> perm) const;
  /// True when the selected box does not move along index dim `dim` (zero column of A).
  [[nodiscard]] bool ignores_index_dim(std::size_t dim) const { return map_.is_zero_column(dim); }

  friend bool operator==(const IndexProjection& a, const IndexProjection& b) = default;

  /// `ipf([[1, 0], [0, 2]] + (4, 5), shape (1, 1))`.
  [[nodiscard]] std::string to_string() const;

 private:
  AffineMap map_;
  Point shape_;
};

}  // namespace tapestry::zspace
