#include "tapestry/zspace/checked.h"

#include <fmt/core.h>

#include "tapestry/support/error.h"

namespace tapestry::zspace {

namespace detail {
void throw_overflow(const char* op, std::int64_t a, std::int64_t b) {
  throw Error(fmt::format("int64 overflow: {} {} {}", a, op, b));
}
}  // namespace detail

std::size_t resolve_dim(std::int64_t dim, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t resolved = dim < 0 ? dim + r : dim;
  if (resolved < 0 || resolved >= r) {
    throw Error(fmt::format("dimension {} is out of range for rank {} (valid: {} to {})", dim, rank,
                            -r, r - 1));
  }
  return static_cast<std::size_t>(resolved);
}

}  // namespace tapestry::zspace

namespace tapestry::zspace {

std::int64_t narrow(Wide value, const char* what) {
  if (value > INT64_MAX || value < INT64_MIN) [[unlikely]] {
    throw Error(fmt::format("int64 overflow in {}: the exact result does not fit in int64", what));
  }
  return static_cast<std::int64_t>(value);
}

}  // namespace tapestry::zspace
