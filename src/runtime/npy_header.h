// The header dict of a .npy file: a small Python literal parser and printer (private to npy.cpp,
// separate so the tests can reach the parser directly).
//
//   parse_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }")
//     == {descr "<f4", fortran_order false, shape {2, 3}}
//   python_tuple(Point{5}) == "(5,)";  python_tuple(Point{}) == "()"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/zspace/point.h"

namespace tapestry::runtime::detail {

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

/// Parses the dict; Error naming what is wrong ("malformed header: expected ':' at column 9",
/// "header has no 'shape'", "negative dimension -1 in shape").
NpyHeader parse_npy_header(std::string_view text);

/// A Python tuple literal of the coordinates: "(2, 3)", "(5,)", "()".
std::string python_tuple(const zspace::Point& shape);

}  // namespace tapestry::runtime::detail
