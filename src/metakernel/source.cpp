#include "tapestry/metakernel/source.h"

#include <fmt/core.h>

#include <algorithm>

namespace tapestry::metakernel {

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

}  // namespace

namespace {

std::string format_located(const Diagnostic& diagnostic, std::string_view severity) {
  // Not about a place in a file (a file that cannot be read names itself): the message alone.
  if (!diagnostic.file && !diagnostic.pos.is_known()) return diagnostic.message;
  std::string where = diagnostic.file ? diagnostic.file->name() : std::string("<input>");
  if (diagnostic.pos.is_known()) {
    where += fmt::format(":{}", diagnostic.pos.line);
    if (diagnostic.pos.column > 0) where += fmt::format(":{}", diagnostic.pos.column);
  }
  std::string out = fmt::format("{}: {}: {}", where, severity, diagnostic.message);
  if (!diagnostic.file || !diagnostic.pos.is_known()) return out;
  const std::string_view line = diagnostic.file->line(diagnostic.pos.line);
  if (line.empty() && diagnostic.pos.column <= 1) return out;
  out += "\n  " + printable(line);
  if (diagnostic.pos.column > 0) out += "\n  " + caret_line(line, diagnostic.pos.column);
  return out;
}

}  // namespace

std::string format_diagnostic(const Diagnostic& diagnostic) {
  return format_located(diagnostic, "error");
}

std::string format_warning(const Diagnostic& diagnostic) {
  return format_located(diagnostic, "warning");
}

std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!out.empty()) out += '\n';
    out += format_diagnostic(d);
  }
  return out;
}

void throw_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  if (diagnostics.empty()) return;
  throw Error(format_diagnostics(diagnostics));
}

}  // namespace tapestry::metakernel
