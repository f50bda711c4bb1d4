// Located diagnostics: the one type for "a problem in the input, and where it is".
//
// Every reader of user input names the place of a problem the same way, whatever the input: a
// position in a text file (the .tap and YAML languages, JSON syntax), a JSON pointer into a JSON
// document (a plan, a target), or a node of a graph (an operation or tensor by its display name).
// A `Location` holds any subset of these; a `Diagnostic` is a message at a Location, with a
// severity and, where a rule has one, a stable dash-case `code`. ONE formatter renders all of
// them (docs/design.md §8):
//
//   examples/bad.tap:6:10: error: linear: X has 12 columns but W has 16 (its in dimension)
//     H = relu(linear(X, W, b))                  file + line:column with the source text: the
//              ^                                 compiler form, quoting the line
//   plan.json:2:11: invalid JSON: syntax error … file + line:column, no text to quote
//   plan.json: /ops/Y/split/out: operation 'Y' has no index dimension 'out' (it has: …)
//                                                file + JSON pointer
//   model.onnx: node 'pool' (MaxPool, node 0): … file + node (+ a note on the node)
//
// At an API boundary a list of diagnostics becomes one `DiagnosticError`: a tapestry::Error (so
// every `catch (const Error&)` and the CLI's exit codes work unchanged) whose what() is the
// formatted text and which still carries the Diagnostics for callers that want the structure
// (tests, tools, Python).
//
//   throw DiagnosticError("plan.json: the plan does not fit the graph",
//                         {Diagnostic::at_pointer("/ops/Y/split/out", "operation 'Y' has …"),
//                          Diagnostic::at_pointer("/outputs/Q", "no graph output named 'Q' …")});
//   // what(): "plan.json: the plan does not fit the graph:\n"
//   //         "  /ops/Y/split/out: operation 'Y' has …\n"
//   //         "  /outputs/Q: no graph output named 'Q' …"
//
// ir::Issue (ir/issue.h) stays the record of the loom tool's validation schema; its contexts carry
// a Location, and ir::to_diagnostic turns an issue into one of these.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/support/error.h"

namespace tapestry::support {

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

/// The 1-based line and column of byte `offset` in `text` (columns count bytes; past the end:
/// the position after the last byte).
SourcePos source_position(std::string_view text, std::size_t offset);

/// Where a problem is. Any subset of the fields may be set (empty / unknown = not set).
struct Location {
  std::string file;       // the input's name as the user gave it: "plan.json", "--split", …
  SourcePos pos;          // line and column in `file`'s text
  std::string pointer;    // a JSON pointer into the document ("/ops/H~1linear/split/out"; "/" for
                          // the whole document, as the readers print it)
  std::string node;       // an operation or tensor by its display name ("H/linear")
  std::string node_note;  // said of the node in parentheses after it: "MaxPool, node 0" (the
                          // ONNX importer: its operator and position in the model)

  [[nodiscard]] bool empty() const {
    return file.empty() && !pos.is_known() && pointer.empty() && node.empty();
  }
  friend bool operator==(const Location&, const Location&) = default;
};

/// The place part of a diagnostic: "f.tap:3:7" ("<input>:3:7" without a file; ":7" only when the
/// column is known), "plan.json: /ops/Y", "model.onnx: node 'H/linear'", "m.onnx: node 'pool'
/// (MaxPool, node 0)", "/ops/Y"; "" when empty.
std::string format_location(const Location& where);

enum class Severity : std::uint8_t { kError, kWarning };
/// "error" / "warning".
std::string_view severity_name(Severity severity);

/// One located problem.
struct Diagnostic {
  Severity severity = Severity::kError;
  std::string code;  // stable dash-case name of the rule, where it has one ("duplicate-key")
  std::string message;
  Location where;
  SourceFilePtr source;  // optional: the text `where.pos` points into, for quoting

  /// At a position of a source text (`file` may be null: "<input>", no quoting).
  static Diagnostic at_source(const SourceFilePtr& file, SourcePos pos, std::string message);
  /// At a JSON pointer into `file` (empty: the caller that knows the file names it later); an
  /// empty pointer, the whole document, is written "/" as the readers print it.
  static Diagnostic at_pointer(std::string pointer, std::string message, std::string file = {});
  /// About a file as a whole ("w.npy: truncated data: …").
  static Diagnostic in_file(std::string file, std::string message);

  friend bool operator==(const Diagnostic&, const Diagnostic&) = default;
};

/// The one formatter. A diagnostic that quotes its source text (`source` set: the .tap and YAML
/// languages) reads like a compiler's: `place: error: message`, then the source line and a caret
/// under the column. Every other is `place: message` (`place: warning: message` for a warning),
/// or the message alone when the Location is empty (a file that cannot be read names itself):
/// JSON readers' `file:line:col: invalid JSON: …`, `plan.json: /ops/Y: …`, `node 'H': …`.
std::string format_diagnostic(const Diagnostic& diagnostic);

/// All diagnostics, formatted and joined by newlines.
std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics);

/// Under a heading (which names the input): "heading:" then each diagnostic on its own line,
/// indented by two spaces and formatted without its file (the heading names it) unless it quotes
/// its source.
std::string format_diagnostics(std::string_view heading,
                               const std::vector<Diagnostic>& diagnostics);

/// The exception for located bad input: what() is the formatted text (format_diagnostics, with
/// the heading when there is one); diagnostics() keeps the structure.
class DiagnosticError : public Error {
 public:
  explicit DiagnosticError(Diagnostic diagnostic);
  explicit DiagnosticError(std::vector<Diagnostic> diagnostics);
  DiagnosticError(std::string heading, std::vector<Diagnostic> diagnostics);

  [[nodiscard]] const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  [[nodiscard]] const std::string& heading() const { return heading_; }

 private:
  std::string heading_;
  std::vector<Diagnostic> diagnostics_;
};

/// Throws one DiagnosticError carrying every diagnostic; does nothing when empty.
void throw_diagnostics(const std::vector<Diagnostic>& diagnostics);

}  // namespace tapestry::support
