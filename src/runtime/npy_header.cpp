// A parser for the one Python literal .npy headers hold: a dict of string keys to strings,
// booleans and tuples of integers.
#include "npy_header.h"

#include <cctype>
#include <charconv>
#include <optional>

#include <fmt/format.h>

#include "tapestry/support/error.h"

namespace tapestry::runtime::detail {

namespace {

class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  NpyHeader parse() {
    NpyHeader header;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (!peek('}')) {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        header.descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        header.shape = int_tuple();
        has_shape = true;
      } else {
        fail(fmt::format("unexpected key '{}'", key));
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the dict");
    if (!has_descr || !has_order || !has_shape) {
      throw Error(fmt::format("malformed header: it has no '{}'", !has_descr   ? "descr"
                                                                  : !has_order ? "fortran_order"
                                                                               : "shape"));
    }
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("malformed header: {} at column {}", what, pos_ + 1));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      fail("expected a string");
    }
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::string_view w(word);
      if (text_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  std::int64_t integer() {
    skip_space();
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), value);
    if (ec != std::errc()) fail("expected an integer");
    pos_ = static_cast<std::size_t>(end - text_.data());
    if (value < 0) fail(fmt::format("negative dimension {} in shape", value));
    // Python 2 headers may write long integers as 3L.
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
    return value;
  }
  std::vector<std::int64_t> int_tuple() {
    std::vector<std::int64_t> values;
    expect('(');
    while (!peek(')')) {
      values.push_back(integer());
      if (!peek(')')) expect(',');
    }
    expect(')');
    return values;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

NpyHeader parse_npy_header(std::string_view text) {
  return HeaderParser(text).parse();
}

std::string python_tuple(const zspace::Point& shape) {
  if (shape.rank() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape.coords(), ", "));
}

}  // namespace tapestry::runtime::detail
