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
