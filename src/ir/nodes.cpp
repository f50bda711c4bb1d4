// Small helpers for node bodies: monoid names and default index names.
#include "tapestry/ir/nodes.h"

#include <fmt/format.h>

namespace tapestry::ir {

std::string_view monoid_name(Monoid monoid) {
  switch (monoid) {
    case Monoid::kSum:
      return "sum";
    case Monoid::kMax:
      return "max";
    case Monoid::kMin:
      return "min";
    case Monoid::kProd:
      return "prod";
  }
  return "?";
}

std::optional<Monoid> parse_monoid(std::string_view name) {
  for (Monoid m : {Monoid::kSum, Monoid::kMax, Monoid::kMin, Monoid::kProd}) {
    if (monoid_name(m) == name) return m;
  }
  return std::nullopt;
}

std::string default_index_name(std::size_t dim) {
  return fmt::format("d{}", dim);
}

}  // namespace tapestry::ir
