// JsonCursor: a fast pull parser over JSON text held in memory (private to module ir).
//
// The loom reader walks a document with it token by token, building typed node bodies directly —
// no DOM for the million-application case — and falls back to `read_json()` (an nlohmann::json
// DOM of one value) only for the rare parts it keeps verbatim: params, extension fields,
// unknown tags, malformed bodies.
//
// Syntax errors throw JsonSyntaxError with the byte offset; `location(offset)` turns it into a
// 1-based line and column. Nesting deeper than kMaxDepth is a syntax error (so hostile input
// cannot overflow the stack). Strings are checked to be UTF-8.
//
//   JsonCursor c(R"({"a": [1, 2]})");
//   c.begin_object();
//   while (auto key = c.next_key()) {         // "a"
//     c.begin_array();
//     while (c.next_element()) c.read_number();  // 1, 2
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/support/diagnostic.h"

namespace tapestry::ir {

/// Malformed JSON at byte `offset`.
class JsonSyntaxError : public std::runtime_error {
 public:
  JsonSyntaxError(std::size_t offset, const std::string& what)
      : std::runtime_error(what), offset_(offset) {}
  [[nodiscard]] std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

enum class JsonKind : std::uint8_t { kObject, kArray, kString, kNumber, kBool, kNull };
/// "object", "array", "string", "number", "boolean", "null".
std::string_view json_kind_name(JsonKind kind);

/// A number token: `integer` is set when the token is an integer that fits in int64.
struct JsonNumber {
  std::string_view text;
  std::optional<std::int64_t> integer;
  bool is_integral_text = false;  // no fraction or exponent (may still overflow int64)
};

class JsonCursor {
 public:
  static constexpr int kMaxDepth = 256;

  explicit JsonCursor(std::string_view text) : text_(text) {}

  /// The kind of the next value (after whitespace); throws on an unexpected character or EOF.
  JsonKind peek() {
    skip_whitespace();
    if (pos_ < text_.size()) {
      switch (text_[pos_]) {
        case '{':
          return JsonKind::kObject;
        case '[':
          return JsonKind::kArray;
        case '"':
          return JsonKind::kString;
        case '-':
        case '0':
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7':
        case '8':
        case '9':
          return JsonKind::kNumber;
        default:
          break;
      }
    }
    return peek_slow();
  }
  /// Consumes '{'.
  void begin_object() {
    expect('{');
    enter();
  }
  /// The next key of the current object (consuming ':'), or nullopt after consuming '}'.
  /// The view is valid until the next string is read.
  std::optional<std::string_view> next_key() {
    skip_whitespace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      leave();
      return std::nullopt;
    }
    if (need_comma_stack_[depth_]) expect(',');
    need_comma_stack_[depth_] = true;
    skip_whitespace();
    if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string key");
    std::string_view key = read_string_at_quote();
    expect(':');
    return key;
  }
  /// next_key(), with a fast path for the key the caller expects (the next field in the usual
  /// order): when the text holds exactly `"expected":` there, it is consumed without being
  /// decoded, and the view returned is `expected` itself. `expected` must need no escapes.
  std::optional<std::string_view> next_key(std::string_view expected) {
    if (expected.empty()) return next_key();
    skip_whitespace();
    const bool comma = need_comma_stack_[depth_];
    const std::size_t at = pos_ + (comma ? 1 : 0);
    if (is_quoted_at(at, expected) && at + expected.size() + 2 < text_.size() &&
        text_[at + expected.size() + 2] == ':' && (!comma || text_[pos_] == ',')) {
      pos_ = at + expected.size() + 3;
      need_comma_stack_[depth_] = true;
      return expected;
    }
    return next_key();
  }
  /// Consumes '['.
  void begin_array() {
    expect('[');
    enter();
  }
  /// True when another element follows (consuming ','), false after consuming ']'.
  bool next_element() {
    skip_whitespace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      leave();
      return false;
    }
    if (need_comma_stack_[depth_]) expect(',');
    need_comma_stack_[depth_] = true;
    return true;
  }
  /// A string value, decoded; valid until the next string is read.
  std::string_view read_string() {
    skip_whitespace();
    if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string");
    return read_string_at_quote();
  }
  /// read_string(), with a fast path for the value the caller expects (e.g. the type of the node
  /// before): when the text holds exactly `"expected"`, the view returned is `expected` itself.
  std::string_view read_string(std::string_view expected) {
    skip_whitespace();
    if (!expected.empty() && is_quoted_at(pos_, expected)) {
      pos_ += expected.size() + 2;
      return expected;
    }
    return read_string();
  }
  JsonNumber read_number();
  /// Fast path for an array of integers of at most 18 digits written compactly (`[0,40,1600]`):
  /// reads it into `out` (cleared first) and returns true; returns false, having consumed and
  /// changed nothing but `out`, for anything else (the caller then reads it token by token).
  bool read_compact_int_array(std::vector<std::int64_t>& out);
  bool read_bool();
  void read_null();
  /// Skips one value of any kind (checking its syntax).
  void skip_value();
  /// Reads one value into a DOM. Integers beyond int64 become unsigned or floating numbers.
  nlohmann::json read_json();
  /// Checks that only whitespace remains.
  void expect_end();

  /// A position to come back to: the byte offset and the nesting depth.
  struct Mark {
    std::size_t offset = 0;
    int depth = 0;
  };
  [[nodiscard]] std::size_t offset() const { return pos_; }
  /// True when `s` points into the text (not into the scratch buffer of a decoded string).
  [[nodiscard]] bool is_in_text(std::string_view s) const {
    std::less_equal<const char*> le;  // a total order, also across unrelated buffers
    return le(text_.data(), s.data()) && le(s.data() + s.size(), text_.data() + text_.size());
  }
  /// Length of the whole text.
  [[nodiscard]] std::size_t size() const { return text_.size(); }
  /// The current position (take it just before a value to re-read that value later).
  [[nodiscard]] Mark mark() const { return {pos_, depth_}; }
  /// Returns to a mark; the enclosing containers must be the same as when it was taken.
  void reset(Mark mark) {
    pos_ = mark.offset;
    depth_ = mark.depth;
  }
  /// memcmp(a, b, n) == 0 without a call, for the short keys and ids of loom JSON: words of 8
  /// bytes (the last one overlapping), or two overlapping words of 4 or 1 bytes.
  static bool equal_bytes(const char* a, const char* b, std::size_t n) {
    auto same = [&](auto word, std::size_t at) {
      decltype(word) x, y;
      std::memcpy(&x, a + at, sizeof x);
      std::memcpy(&y, b + at, sizeof y);
      return x == y;
    };
    if (n >= 8) {
      for (std::size_t i = 0; i + 8 < n; i += 8) {
        if (!same(std::uint64_t{}, i)) return false;
      }
      return same(std::uint64_t{}, n - 8);
    }
    if (n >= 4) return same(std::uint32_t{}, 0) && same(std::uint32_t{}, n - 4);
    return n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
  }
  /// 1-based line and column of a byte offset.
  [[nodiscard]] support::SourcePos location(std::size_t offset) const;

 private:
  void skip_whitespace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      ++pos_;
    }
  }
  [[noreturn]] void fail(const std::string& what) const;
  // True when the text at `at` is `"s"` (the raw bytes: s must need no escapes).
  [[nodiscard]] bool is_quoted_at(std::size_t at, std::string_view s) const {
    const std::size_t n = s.size();
    return at + n + 2 <= text_.size() && text_[at] == '"' && text_[at + 1 + n] == '"' &&
           equal_bytes(text_.data() + at + 1, s.data(), n);
  }
  void expect(char c) {
    skip_whitespace();
    if (pos_ < text_.size() && text_[pos_] == c) [[likely]] {
      ++pos_;
      return;
    }
    expect_failed(c);
  }
  [[noreturn]] void expect_failed(char c) const;
  JsonKind peek_slow();
  std::string_view read_string_at_quote();
  void decode_escapes(std::size_t begin);
  void check_utf8(std::string_view s, std::size_t at) const;
  void enter() {
    if (++depth_ > kMaxDepth) too_deep();
    need_comma_stack_[depth_] = false;
  }
  [[noreturn]] void too_deep() const;
  void leave() { --depth_; }
  nlohmann::json read_json_number();

  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  // Per-container state: true when the next element/key needs a ',' first.
  std::string scratch_;
  bool need_comma_stack_[kMaxDepth + 2] = {};
};

}  // namespace tapestry::ir
