// Source positions for the two text languages of this module: the template metakernel language
// (YAML kernel files) and the .tap graph language.
//
// Bad input is reported as data (docs/design.md §8): a support::Diagnostic (support/diagnostic.h,
// the one located diagnostic type of the project) names the file, the 1-based line and column,
// and a message, and quotes the source line with a caret under the column:
//
//   examples/bad.tap:6:10: error: linear: X has 12 columns but W has 16 (its in dimension)
//     H = relu(linear(X, W, b))
//              ^
//
// The parsers here name positions on almost every line, so the support types are brought into
// this namespace; what is this module's own is the exception its parsers throw.
#pragma once

#include <string>

#include "tapestry/support/diagnostic.h"
#include "tapestry/support/error.h"

namespace tapestry::metakernel {

using support::SourceFile;
using support::SourceFilePtr;
using support::SourcePos;

/// Thrown by the parsers in this module for a located problem; converted to a Diagnostic by the
/// caller that knows the file. It derives from tapestry::Error so an uncaught one still prints.
class LocatedError : public Error {
 public:
  LocatedError(SourcePos pos, const std::string& message) : Error(message), pos_(pos) {}
  [[nodiscard]] SourcePos pos() const { return pos_; }

 private:
  SourcePos pos_;
};

}  // namespace tapestry::metakernel
