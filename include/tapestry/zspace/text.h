// Text forms of ZSpace values: parse what `to_string()` prints.
//
//   parse_range("zr[2:4, 3:5]") == Range({2, 3}, {4, 5})
//   parse_range("zr[]")         == Range()                 (0-dimensional)
//   parse_point("(1, -2)")      == Point{1, -2}            ("[1, -2]" is accepted too)
//
// Whitespace is free. A malformed string is an Error naming the 1-based column and what was
// expected: `column 10: expected ':' in "zr[2:4, 3]"`.
#pragma once

#include <string_view>

#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"

namespace tapestry::zspace {

Point parse_point(std::string_view text);
Range parse_range(std::string_view text);

}  // namespace tapestry::zspace
