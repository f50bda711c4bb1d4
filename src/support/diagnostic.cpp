// Located diagnostics (include/tapestry/support/diagnostic.h): the one formatter.
#include "tapestry/support/diagnostic.h"

#include <algorithm>
#include <utility>

namespace tapestry::support {

SourceFile::SourceFile(std::string name, std::string text)
    : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

std::string_view SourceFile::line(int line) const {
  if (line < 1 || static_cast<std::size_t>(line) > line_starts_.size()) return {};
  const std::size_t begin = line_starts_[static_cast<std::size_t>(line) - 1];
  std::size_t end = text_.find('\n', begin);
  if (end == std::string::npos) end = text_.size();
  std::string_view text(text_);
  std::string_view result = text.substr(begin, end - begin);
  if (!result.empty() && result.back() == '\r') result.remove_suffix(1);
  return result;
}

SourcePos source_position(std::string_view text, std::size_t offset) {
  int line = 1;
  int column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

std::string format_location(const Location& where) {
  std::string out;
  const auto part = [&](const std::string& text) {
    if (!out.empty()) out += ": ";
    out += text;
  };
  if (where.pos.is_known()) {
    out = where.file.empty() ? std::string("<input>") : where.file;
    out += ':';
    out += std::to_string(where.pos.line);
    if (where.pos.column > 0) {
      out += ':';
      out += std::to_string(where.pos.column);
    }
  } else if (!where.file.empty()) {
    out = where.file;
  }
  if (!where.pointer.empty()) part(where.pointer);
  if (!where.node.empty()) {
    part("node '" + where.node + "'");
    if (!where.node_note.empty()) out += " (" + where.node_note + ")";
  }
  return out;
}

std::string_view severity_name(Severity severity) {
  return severity == Severity::kError ? "error" : "warning";
}

Diagnostic Diagnostic::at_source(const SourceFilePtr& file, SourcePos pos, std::string message) {
  Diagnostic d;
  d.message = std::move(message);
  d.where.file = file ? file->name() : std::string();
  d.where.pos = pos;
  d.source = file;
  return d;
}

Diagnostic Diagnostic::at_pointer(std::string pointer, std::string message, std::string file) {
  Diagnostic d;
  d.message = std::move(message);
  d.where.file = std::move(file);
  d.where.pointer = pointer.empty() ? std::string("/") : std::move(pointer);
  return d;
}

Diagnostic Diagnostic::in_file(std::string file, std::string message) {
  Diagnostic d;
  d.message = std::move(message);
  d.where.file = std::move(file);
  return d;
}

namespace {

// The caret line: the prefix of the source line up to the column with every non-tab character
// replaced by a space, so the caret lines up under tabs too.
std::string caret_line(std::string_view source_line, int column) {
  std::string caret;
  const auto width = static_cast<std::size_t>(std::max(column - 1, 0));
  for (std::size_t i = 0; i < width; ++i) {
    caret += (i < source_line.size() && source_line[i] == '\t') ? '\t' : ' ';
  }
  caret += '^';
  return caret;
}

// Non-printable bytes (from a garbage file) are shown as '?' so the terminal stays sane.
std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) c = '?';
  }
  return out;
}

// The source line and the caret under the column, each on a new line indented by two spaces;
// nothing when the position is unknown or the line is empty and the column at its start.
std::string quote(const Diagnostic& d) {
  if (!d.where.pos.is_known()) return {};
  const std::string_view line = d.source->line(d.where.pos.line);
  if (line.empty() && d.where.pos.column <= 1) return {};
  std::string out = "\n  " + printable(line);
  if (d.where.pos.column > 0) out += "\n  " + caret_line(line, d.where.pos.column);
  return out;
}

}  // namespace

std::string format_diagnostic(const Diagnostic& diagnostic) {
  const std::string place = format_location(diagnostic.where);
  const std::string_view severity = severity_name(diagnostic.severity);
  if (diagnostic.source) {
    return place + ": " + std::string(severity) + ": " + diagnostic.message + quote(diagnostic);
  }
  std::string out = place.empty() ? std::string() : place + ": ";
  if (diagnostic.severity != Severity::kError) out += std::string(severity) + ": ";
  return out + diagnostic.message;
}

std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!out.empty()) out += '\n';
    out += format_diagnostic(d);
  }
  return out;
}

std::string format_diagnostics(std::string_view heading,
                               const std::vector<Diagnostic>& diagnostics) {
  std::string out(heading);
  out += ':';
  for (Diagnostic d : diagnostics) {
    if (!d.source) d.where.file.clear();
    std::string text = format_diagnostic(d);
    out += "\n  ";
    for (char c : text) {  // a quoted source line stays under its diagnostic
      out += c;
      if (c == '\n') out += "  ";
    }
  }
  return out;
}

DiagnosticError::DiagnosticError(Diagnostic diagnostic)
    : DiagnosticError(std::vector<Diagnostic>{std::move(diagnostic)}) {}

DiagnosticError::DiagnosticError(std::vector<Diagnostic> diagnostics)
    : Error(format_diagnostics(diagnostics)), diagnostics_(std::move(diagnostics)) {}

DiagnosticError::DiagnosticError(std::string heading, std::vector<Diagnostic> diagnostics)
    : Error(format_diagnostics(heading, diagnostics)),
      heading_(std::move(heading)),
      diagnostics_(std::move(diagnostics)) {}

void throw_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  if (diagnostics.empty()) return;
  throw DiagnosticError(diagnostics);
}

}  // namespace tapestry::support
