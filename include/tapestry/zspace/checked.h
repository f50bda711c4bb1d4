// Overflow-checked int64 arithmetic.
//
// Coordinates and sizes are int64 because real tensors exceed 2^31 elements; an overflow is a
// `tapestry::Error` naming the operation and operands, never a silent wrap:
//
//   checked_add(INT64_MAX, 1)  // throws Error("int64 overflow: 9223372036854775807 + 1")
//   checked_mul(1 << 20, 1 << 20) == 1 << 40
#pragma once

#include <cstdint>

namespace tapestry::zspace {

namespace detail {
[[noreturn]] void throw_overflow(const char* op, std::int64_t a, std::int64_t b);
}  // namespace detail

inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) [[unlikely]]
    detail::throw_overflow("+", a, b);
  return r;
}

inline std::int64_t checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) [[unlikely]]
    detail::throw_overflow("-", a, b);
  return r;
}

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) [[unlikely]]
    detail::throw_overflow("*", a, b);
  return r;
}

/// Resolves a possibly negative dimension index against `rank` (Python style: -1 is the last).
/// Throws Error when it is out of range: `resolve_dim(-1, 2) == 1`, `resolve_dim(2, 2)` throws.
std::size_t resolve_dim(std::int64_t dim, std::size_t rank);

}  // namespace tapestry::zspace

namespace tapestry::zspace {

/// Exact accumulator for sums of int64 products: a product of two int64 always fits in 127 bits,
/// and a sum of up to 2^62 such products is checked by wide_add. Only the final value must fit
/// in int64 (`narrow`), so `[[1, -1]] + (INT64_MAX)` applied to (1, 1) is exactly INT64_MAX.
__extension__ using Wide = __int128;

inline Wide wide_add(Wide a, Wide b) {
  Wide r;
  if (__builtin_add_overflow(a, b, &r)) [[unlikely]]
    detail::throw_overflow("+", 0, 0);
  return r;
}

/// `value` as int64; Error naming `what` when it does not fit.
std::int64_t narrow(Wide value, const char* what);

}  // namespace tapestry::zspace
