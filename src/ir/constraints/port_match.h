// Comparing the port structure (names and list lengths) of two NamedLists — an operation's
// selections against its IPF signature, or an application's selections against its
// operation's. Private to the constraints.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "tapestry/ir/named_lists.h"

namespace tapestry::ir::constraints {

/// "side.name[pos]" for every entry of `a` missing from `b` (as "… has no <b_what>") and of `b`
/// missing from `a` (as "… has no <a_what>"). Both are sorted by (name, position).
template <typename MapA, typename MapB>
std::vector<std::string> port_mismatches(const MapA& a, const MapB& b, std::string_view side,
                                         std::string_view a_what, std::string_view b_what) {
  std::vector<std::string> out;
  auto ia = a.entries().begin();
  auto ib = b.entries().begin();
  auto end_a = a.entries().end();
  auto end_b = b.entries().end();
  auto less = [](const auto& x, const auto& y) {
    return x.name != y.name ? x.name < y.name : x.position < y.position;
  };
  while (ia != end_a || ib != end_b) {
    if (ib == end_b || (ia != end_a && less(*ia, *ib))) {
      const auto& e = *ia;
      out.push_back(
          fmt::format("{} {}.{}[{}] has no {}", a_what, side, e.name, e.position, b_what));
      ++ia;
    } else if (ia == end_a || less(*ib, *ia)) {
      const auto& e = *ib;
      out.push_back(
          fmt::format("{} {}.{}[{}] has no {}", b_what, side, e.name, e.position, a_what));
      ++ib;
    } else {
      ++ia;
      ++ib;
    }
  }
  return out;
}

}  // namespace tapestry::ir::constraints
