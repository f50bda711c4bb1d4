// Bracket lists of the template metakernel language: shape patterns, index specs, IPFs.
//
// One syntax serves every list in a kernel file; each use admits a subset of the entry forms
// (docs/metakernels.md, "Lists"):
//
//   entry        meaning                                   shapes  index  ipfs  shift
//   $in          a named dimension                         yes     yes    yes   -
//   $batch...    a variadic group of dimensions            yes     yes    yes   -
//   2, ($h-$kh)/stride+1   an expression                   yes*    -      yes   yes
//   $oh*stride : $kh       IPF offset : window size        -       -      yes   -
//   *            the whole tensor dimension                -       -      yes   -
//
//   (*) input shapes admit integer literals only; output shapes any expression.
//
//   parse_list("[$batch..., $in]", pos)      -> {group batch, expr $in}
//   parse_list("[$n, $c, $oh*stride : $kh, *]", pos)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/metakernel/expr.h"
#include "tapestry/metakernel/source.h"

namespace tapestry::metakernel {

struct ListEntry {
  enum class Kind { kExpr, kGroup, kWhole };

  Kind kind = Kind::kExpr;
  std::string group;           // kGroup: the group name (without '$' and '...')
  std::optional<Expr> expr;    // kExpr: the value (a size, or an IPF offset)
  std::optional<Expr> window;  // kExpr in an IPF: the window size after ':' (default 1)
  SourcePos pos;

  /// A bare `$name` (binds or names a dimension).
  [[nodiscard]] bool is_dim() const {
    return kind == Kind::kExpr && !window && expr->kind() == Expr::Kind::kDim;
  }
  /// The name of a bare `$name` entry or a group.
  [[nodiscard]] const std::string& dim_name() const {
    return kind == Kind::kGroup ? group : expr->name();
  }
  [[nodiscard]] std::string to_string() const;
};

using List = std::vector<ListEntry>;

/// Parses `[entry, entry, ...]` (the brackets are required; `[]` is the empty list). Throws
/// LocatedError at the offending column.
List parse_list(std::string_view text, SourcePos origin);

/// `[$batch..., $in]`.
std::string list_to_string(const List& list);

}  // namespace tapestry::metakernel
