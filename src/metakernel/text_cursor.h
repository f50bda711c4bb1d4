// TextCursor: a position in a one-line snippet of kernel-file text (a shape pattern, an IPF
// list, an expression), with the helpers the small recursive-descent parsers of the template
// language share. Positions are reported as SourcePos relative to where the snippet starts in
// its file, so a parse error points at the exact character in the YAML file.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

#include "tapestry/metakernel/source.h"

namespace tapestry::metakernel::detail {

class TextCursor {
 public:
  TextCursor(std::string_view text, SourcePos origin) : text_(text), origin_(origin) {}

  /// Skips blanks; true when nothing but blanks remain.
  bool at_end() {
    skip_blanks();
    return offset_ >= text_.size();
  }
  /// The next non-blank character, or '\0' at the end.
  char peek() {
    skip_blanks();
    return offset_ < text_.size() ? text_[offset_] : '\0';
  }
  /// The character `ahead` places after the next non-blank one (no blank skipping inside).
  char peek_at(std::size_t ahead) {
    skip_blanks();
    return offset_ + ahead < text_.size() ? text_[offset_ + ahead] : '\0';
  }
  /// Consumes `token` if the text continues with it (after blanks).
  bool accept(std::string_view token) {
    skip_blanks();
    if (text_.substr(offset_, token.size()) != token) return false;
    offset_ += token.size();
    return true;
  }
  /// Consumes `token` or throws "expected <token> <context>".
  void expect(std::string_view token, std::string_view context) {
    if (!accept(token))
      fail(std::string("expected '") + std::string(token) + "' " + std::string(context) + found());
  }
  /// The very next character, blanks included ('\0' at the end).
  char next_raw() const { return offset_ < text_.size() ? text_[offset_] : '\0'; }
  bool at_identifier() {
    const char c = peek();
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  }
  /// Reads [A-Za-z_][A-Za-z0-9_]*; throws when there is none.
  std::string identifier(std::string_view what) {
    if (!at_identifier()) fail("expected " + std::string(what) + found());
    const std::size_t begin = offset_;
    while (offset_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[offset_])) || text_[offset_] == '_')) {
      ++offset_;
    }
    return std::string(text_.substr(begin, offset_ - begin));
  }
  /// Reads a non-negative decimal integer; throws on overflow.
  std::int64_t integer() {
    skip_blanks();
    const SourcePos start = pos();
    std::int64_t value = 0;
    bool any = false;
    while (offset_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[offset_]))) {
      const int digit = text_[offset_] - '0';
      if (value > (INT64_MAX - digit) / 10) throw LocatedError(start, "integer is too large");
      value = value * 10 + digit;
      ++offset_;
      any = true;
    }
    if (!any) fail("expected an integer" + found());
    return value;
  }

  /// The position of the next non-blank character.
  SourcePos pos() {
    skip_blanks();
    return origin_.advance(static_cast<int>(offset_));
  }
  /// ", found 'x'" or ", found the end of the text".
  std::string found() {
    const char c = peek();
    if (c == '\0') return ", found the end of the text";
    return std::string(", found '") + c + "'";
  }
  [[noreturn]] void fail(const std::string& message) { throw LocatedError(pos(), message); }
  std::string_view text() const { return text_; }

 private:
  void skip_blanks() {
    while (offset_ < text_.size() && (text_[offset_] == ' ' || text_[offset_] == '\t')) ++offset_;
  }

  std::string_view text_;
  SourcePos origin_;
  std::size_t offset_ = 0;
};

}  // namespace tapestry::metakernel::detail
