// Expression parsing on a TextCursor, shared by Expr::parse and the bracket-list parser
// (pattern.cpp), which reads expressions embedded in `[ ... ]` lists.
#pragma once

#include "tapestry/metakernel/expr.h"
#include "text_cursor.h"

namespace tapestry::metakernel::detail {

/// Parses the longest expression at the cursor (stops before ',', ':', ']' and the like).
Expr parse_expr(TextCursor& cursor);

}  // namespace tapestry::metakernel::detail
