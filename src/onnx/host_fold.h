// Private to the ONNX importer: N-D operations on host tensors (host_tensor.h), for the integer
// shape code PyTorch exports around `expand`, `masked_fill` and causal masks, and for float
// constants that a layout op reads (a class token expanded, a mask built from Trilu).
//
// Each follows its ONNX operator's definition on values known at import time, e.g. PyTorch's
// `class_token.expand(n, -1, -1)` at n = 1:
//
//   ConstantOfShape([3]) = [1, 1, 1];  Mul(…, -1) = [-1, -1, -1]
//   Equal([1, -1, -1], [-1, -1, -1]) = [0, 1, 1] (bool)
//   Where([0, 1, 1], [1, 1, 1], [1, -1, -1]) = [1, 1, 1];  Expand(token[1, 1, D], [1, 1, 1]) =
//   token
//
// Booleans are int tensors of dtype kBool holding 0 or 1; comparisons of floats compare the
// doubles. Errors (tapestry::Error) name what does not fit; the converter locates them.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "host_tensor.h"

namespace tapestry::onnx {

/// The most cells a fold (or a mask the converters build) may hold: a model cannot make the
/// import allocate without bound (ConstantOfShape of [10¹²]).
inline constexpr std::int64_t kMaxFoldedCells = std::int64_t{1} << 24;

/// `shape`'s cell count; Error when it exceeds kMaxFoldedCells (or overflows).
std::int64_t checked_fold_size(const std::vector<std::int64_t>& shape);

/// ConstantOfShape: `shape` filled with `value`'s single element (dtype kept).
HostTensor fold_fill(const std::vector<std::int64_t>& shape, const HostTensor& value);

/// Range(start, limit, delta): ⌈(limit − start)/delta⌉ elements (at least 0); ints or floats.
HostTensor fold_range(const HostTensor& start, const HostTensor& limit, const HostTensor& delta);

/// `x` broadcast (numpy rules, as Expand) against `shape`; the result has the broadcast shape.
HostTensor fold_expand(const HostTensor& x, const std::vector<std::int64_t>& shape);

/// A comparison or boolean op with numpy broadcasting: op is one of Equal, Less, LessOrEqual,
/// Greater, GreaterOrEqual, And, Or, Xor. The result is kBool.
HostTensor fold_compare(const HostTensor& a, const HostTensor& b, std::string_view op);

/// Not of a boolean tensor.
HostTensor fold_not(const HostTensor& x);

/// Where(c, a, b) with numpy broadcasting of all three; a and b's dtype (floats win).
HostTensor fold_where(const HostTensor& c, const HostTensor& a, const HostTensor& b);

/// Concat along `axis` (normalised); every other dim must agree.
HostTensor fold_concat(const std::vector<HostTensor>& parts, std::size_t axis);

/// Gather along `axis` (normalised) at `indices` (negative counts from the end): the result's
/// shape is data[:axis] + indices.shape + data[axis+1:].
HostTensor fold_gather(const HostTensor& data, const HostTensor& indices, std::size_t axis);

/// Trilu: keeps the cells on and above (upper) or below (lower) diagonal k of the last two dims,
/// zero elsewhere.
HostTensor fold_trilu(const HostTensor& x, std::int64_t k, bool upper);

/// Whether Trilu(k, upper) keeps cell (row, col).
inline bool trilu_keeps(std::int64_t row, std::int64_t col, std::int64_t k, bool upper) {
  return upper ? col - row >= k : col - row <= k;
}

}  // namespace tapestry::onnx
