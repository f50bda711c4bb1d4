// Tapestry's error channel for bad user input (docs/design.md §8, channel 2).
//
// `tapestry::Error` is thrown by value constructors and parsers when input from outside the
// program (a file, a CLI argument, a JSON body) breaks a rule, and is caught at the API/CLI
// boundary, where it becomes a message and a non-zero exit code. Its message is complete and
// names what was wrong ("range start (1, 1) must be <= end (0, 1)"); a reader that locates it
// (file and line:column, JSON pointer, node) throws support::DiagnosticError (diagnostic.h).
//
// Internal invariants use TAPESTRY_ASSERT (support/assert.h) instead; "a rewrite does not apply"
// is a result with a reason, never an Error.
#pragma once

#include <stdexcept>
#include <string>

namespace tapestry {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;

  /// A new error whose message is `context + ": " + what()`.
  [[nodiscard]] Error with_context(const std::string& context) const {
    return Error(context + ": " + what());
  }
};

}  // namespace tapestry
