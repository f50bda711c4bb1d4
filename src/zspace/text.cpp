// A small recursive-descent parser for the text forms `zr[2:4, 3:5]` and `(1, 2)`.
#include "tapestry/zspace/text.h"

#include <fmt/core.h>

#include <cctype>
#include <charconv>
#include <vector>

#include "tapestry/support/error.h"

namespace tapestry::zspace {

namespace {

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(fmt::format("expected '{}'", c));
  }
  void expect_word(std::string_view word) {
    skip_space();
    if (text_.substr(pos_, word.size()) != word) fail(fmt::format("expected '{}'", word));
    pos_ += word.size();
  }
  std::int64_t integer() {
    skip_space();
    std::size_t begin = pos_;
    const bool plus = pos_ < text_.size() && text_[pos_] == '+';
    if (plus) ++begin, ++pos_;
    std::size_t end = pos_;
    if (!plus && end < text_.size() && text_[end] == '-') ++end;  // "+-1" is not a number
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
    std::int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text_.data() + pos_, text_.data() + end, value);
    if (ec == std::errc::result_out_of_range) fail("integer does not fit in int64");
    if (ec != std::errc() || ptr != text_.data() + end) {
      pos_ = begin;
      fail("expected an integer");
    }
    pos_ = end;
    return value;
  }
  [[noreturn]] void fail(const std::string& what) {
    throw Error(fmt::format("column {}: {} in \"{}\"", pos_ + 1, what, text_));
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

Point parse_point(std::string_view text) {
  Cursor in(text);
  const char open = in.peek();
  if (open != '(' && open != '[') in.fail("expected '(' or '['");
  in.accept(open);
  const char close = open == '(' ? ')' : ']';
  std::vector<std::int64_t> coords;
  if (!in.accept(close)) {
    do {
      coords.push_back(in.integer());
    } while (in.accept(','));
    in.expect(close);
  }
  if (!in.at_end()) in.fail("unexpected trailing text");
  return Point(std::span<const std::int64_t>(coords));
}

Range parse_range(std::string_view text) {
  Cursor in(text);
  in.expect_word("zr");
  in.expect('[');
  std::vector<std::int64_t> start;
  std::vector<std::int64_t> end;
  if (!in.accept(']')) {
    do {
      start.push_back(in.integer());
      in.expect(':');
      end.push_back(in.integer());
    } while (in.accept(','));
    in.expect(']');
  }
  if (!in.at_end()) in.fail("unexpected trailing text");
  try {
    return Range(Point(std::span<const std::int64_t>(start)),
                 Point(std::span<const std::int64_t>(end)));
  } catch (const Error& e) {
    throw Error(fmt::format("{} in \"{}\"", e.what(), text));
  }
}

}  // namespace tapestry::zspace
