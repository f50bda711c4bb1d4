// Source locations and located diagnostics for the two text languages of this module: the
// template metakernel language (YAML kernel files) and the .tap graph language.
//
// Bad input is reported as data (docs/design.md §8): a `Diagnostic` names the file, the 1-based
// line and column, and a message. `format_diagnostic` renders it the way compilers do, with the
// source line and a caret under the column:
//
//   examples/bad.tap:6:10: error: linear: X has 12 columns but W has 16 (its in dimension)
//     H = relu(linear(X, W, b))
//              ^
//
// At an API boundary a list of diagnostics becomes one `tapestry::Error` (`throw_diagnostics`).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/support/error.h"

namespace tapestry::metakernel {

/// A position in a source text: 1-based line and column (0 = unknown).
struct SourcePos {
  int line = 0;
  int column = 0;

  [[nodiscard]] bool is_known() const { return line > 0; }
  /// The position `columns` characters further on the same line.
  [[nodiscard]] SourcePos advance(int columns) const { return {line, column + columns}; }
  friend bool operator==(const SourcePos&, const SourcePos&) = default;
};

/// A named source text, shared by everything parsed from it so diagnostics can quote lines.
class SourceFile {
 public:
  SourceFile(std::string name, std::string text);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& text() const { return text_; }
  /// The text of 1-based `line` without its newline; empty when out of range.
  [[nodiscard]] std::string_view line(int line) const;

 private:
  std::string name_;
  std::string text_;
  std::vector<std::size_t> line_starts_;
};

using SourceFilePtr = std::shared_ptr<const SourceFile>;

/// One located problem in a source text.
struct Diagnostic {
  SourceFilePtr file;  // may be null (no quoting then)
  SourcePos pos;
  std::string message;
};

/// `file:line:col: error: message`, then the source line and a caret under the column; a
/// diagnostic with neither file nor position (a file that cannot be read) is its message alone.
std::string format_diagnostic(const Diagnostic& diagnostic);

/// The same with `warning:` for a problem that did not stop the work.
std::string format_warning(const Diagnostic& diagnostic);

/// All diagnostics, formatted and joined by newlines.
std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics);

/// Throws one tapestry::Error carrying every formatted diagnostic; does nothing when empty.
void throw_diagnostics(const std::vector<Diagnostic>& diagnostics);

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
