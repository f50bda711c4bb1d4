// Short literal helpers and matchers shared by the zspace tests.
//
//   zr("[0:2, 0:3]")                       // Range, via parse_range ("zr" prefix optional)
//   zp("(1, -2)")                          // Point, via parse_point
//   map({{1, 0}, {0, 2}}, {4, 5})          // AffineMap from rows and offset
//   ipf({{1, -1}}, {0}, {1})               // IndexProjection from rows, offset and shape
//   EXPECT_THAT([&] { ... }, FailsWith({"(1, 1)", "(0, 1)"}));
//
// Tests read values in the same text form a diagnostic prints them, so a failing expectation
// and its source line look alike.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/support/error.h"
#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/index_projection.h"
#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"
#include "tapestry/zspace/text.h"

namespace tapestry::zspace::testing {

using Rows = std::vector<std::vector<std::int64_t>>;

/// A range from its text form; the `zr` prefix may be left out: zr("[0:2, 0:3]").
inline Range zr(std::string_view text) {
  if (text.substr(0, 2) == "zr") return parse_range(text);
  return parse_range("zr" + std::string(text));
}

/// A point from its text form: zp("(1, -2)").
inline Point zp(std::string_view text) {
  return parse_point(text);
}

/// An affine map from nested rows (one per output dimension) and an offset.
inline AffineMap map(const Rows& rows, Point offset, std::size_t in_rank_if_no_rows = 0) {
  return AffineMap::from_rows(rows, std::move(offset), in_rank_if_no_rows);
}

/// An index projection from rows, offset and shape.
inline IndexProjection ipf(const Rows& rows, Point offset, Point shape) {
  return IndexProjection(map(rows, std::move(offset)), std::move(shape));
}

/// All points of `range` in iteration order.
inline std::vector<Point> points_of(const Range& range) {
  std::vector<Point> points;
  for (const Point& p : range.points()) points.push_back(p);
  return points;
}

/// Matches a callable that throws tapestry::Error whose message contains every one of
/// `needles` (the parts of the message that name what is wrong).
inline auto FailsWith(std::initializer_list<std::string> needles) {
  std::vector<::testing::Matcher<std::string>> parts;
  for (const std::string& needle : needles) parts.push_back(::testing::HasSubstr(needle));
  return ::testing::ThrowsMessage<Error>(::testing::AllOfArray(parts));
}

/// Matches a callable that throws tapestry::Error (any message).
inline auto Fails() {
  return ::testing::Throws<Error>();
}

}  // namespace tapestry::zspace::testing
