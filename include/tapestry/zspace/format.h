// fmt formatters and ostream printers for every ZSpace type, so any value prints in a
// diagnostic or a test failure: fmt::format("{} -> {}", index, ipf.apply(index)).
#pragma once

#include <fmt/format.h>

#include <ostream>
#include <string_view>

#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/index_projection.h"
#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"

namespace tapestry::zspace::detail {
template <typename T>
struct ToStringFormatter : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(const T& value, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(value.to_string(), ctx);
  }
};
}  // namespace tapestry::zspace::detail

template <>
struct fmt::formatter<tapestry::zspace::Point>
    : tapestry::zspace::detail::ToStringFormatter<tapestry::zspace::Point> {};
template <>
struct fmt::formatter<tapestry::zspace::Range>
    : tapestry::zspace::detail::ToStringFormatter<tapestry::zspace::Range> {};
template <>
struct fmt::formatter<tapestry::zspace::AffineMap>
    : tapestry::zspace::detail::ToStringFormatter<tapestry::zspace::AffineMap> {};
template <>
struct fmt::formatter<tapestry::zspace::IndexProjection>
    : tapestry::zspace::detail::ToStringFormatter<tapestry::zspace::IndexProjection> {};

namespace tapestry::zspace {
inline std::ostream& operator<<(std::ostream& os, const Point& v) {
  return os << v.to_string();
}
inline std::ostream& operator<<(std::ostream& os, const Range& v) {
  return os << v.to_string();
}
inline std::ostream& operator<<(std::ostream& os, const AffineMap& v) {
  return os << v.to_string();
}
inline std::ostream& operator<<(std::ostream& os, const IndexProjection& v) {
  return os << v.to_string();
}
}  // namespace tapestry::zspace
