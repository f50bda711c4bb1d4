// JsonCursor: see json_cursor.h. The hot paths (whitespace, short ASCII strings, small
// integers) are plain loops over the buffer; everything unusual takes a slower, checked path.
#include "json_cursor.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tapestry::ir {

std::string_view json_kind_name(JsonKind kind) {
  switch (kind) {
    case JsonKind::kObject:
      return "object";
    case JsonKind::kArray:
      return "array";
    case JsonKind::kString:
      return "string";
    case JsonKind::kNumber:
      return "number";
    case JsonKind::kBool:
      return "boolean";
    case JsonKind::kNull:
      return "null";
  }
  return "?";
}

void JsonCursor::fail(const std::string& what) const {
  throw JsonSyntaxError(pos_, what);
}

void JsonCursor::expect_failed(char c) const {
  if (pos_ >= text_.size()) fail(fmt::format("expected '{}' but the input ended", c));
  fail(fmt::format("expected '{}'", c));
}

void JsonCursor::too_deep() const {
  fail(fmt::format("nesting deeper than {} levels", kMaxDepth));
}

JsonKind JsonCursor::peek_slow() {
  if (pos_ >= text_.size()) fail("expected a value but the input ended");
  switch (text_[pos_]) {
    case '{':
      return JsonKind::kObject;
    case '[':
      return JsonKind::kArray;
    case '"':
      return JsonKind::kString;
    case 't':
    case 'f':
      return JsonKind::kBool;
    case 'n':
      return JsonKind::kNull;
    default:
      break;
  }
  char c = text_[pos_];
  if (c == '-' || (c >= '0' && c <= '9')) return JsonKind::kNumber;
  fail(fmt::format("unexpected character '{}'", c));
}

namespace {

// SWAR: true when any byte of `w` is '"', '\\', a control character (< 0x20) or non-ASCII
// (>= 0x80) — the bytes that end the fast path of a string.
inline bool has_special_byte(std::uint64_t w) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  constexpr std::uint64_t kHigh = 0x8080808080808080ull;
  auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  std::uint64_t quote = has_zero(w ^ (kOnes * '"'));
  std::uint64_t backslash = has_zero(w ^ (kOnes * '\\'));
  std::uint64_t control = (w - kOnes * 0x20) & ~w & kHigh;  // bytes < 0x20 (or >= 0x80, below)
  return (quote | backslash | control | (w & kHigh)) != 0;
}

}  // namespace

// Fast path: no escapes and plain ASCII → a view into the text. Thirty-two bytes at a time (AVX2)
// or sixteen (SSE2) up to the first special byte — one step for an id, three for a type URL —
// then, when that byte is the closing quote, done; else byte by byte (escapes, UTF-8, the last
// bytes of the text), with eight-byte SWAR steps where no vector unit is there.
std::string_view JsonCursor::read_string_at_quote() {
  std::size_t begin = ++pos_;
  const char* text = text_.data();
  const std::size_t size = text_.size();
#if defined(__AVX2__)
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i space = _mm256_set1_epi8(0x20);
  while (pos_ + 32 <= size) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(text + pos_));
    // Bytes >= 0x80 are negative as int8, so "0x20 > v" (signed) also catches non-ASCII.
    __m256i special = _mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash)),
        _mm256_cmpgt_epi8(space, v));
    auto mask = static_cast<unsigned>(_mm256_movemask_epi8(special));
    if (mask != 0) {
      pos_ += static_cast<std::size_t>(__builtin_ctz(mask));
      if (text[pos_] == '"') return text_.substr(begin, pos_++ - begin);
      break;
    }
    pos_ += 32;
  }
#elif defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  while (pos_ + 16 <= size) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text + pos_));
    // Bytes >= 0x80 are negative as int8, so "v < 0x20" (signed) also catches non-ASCII.
    __m128i special =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                     _mm_cmplt_epi8(v, space));
    int mask = _mm_movemask_epi8(special);
    if (mask != 0) {
      pos_ += static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
      if (text[pos_] == '"') return text_.substr(begin, pos_++ - begin);
      break;
    }
    pos_ += 16;
  }
#endif
  while (pos_ + 8 <= size) {
    std::uint64_t w;
    std::memcpy(&w, text + pos_, 8);
    if (has_special_byte(w)) break;
    pos_ += 8;
  }
  bool ascii = true;
  while (pos_ < size) {
    auto c = static_cast<unsigned char>(text[pos_]);
    if (c == '"') {
      std::string_view s = text_.substr(begin, pos_ - begin);
      ++pos_;
      if (!ascii) check_utf8(s, begin);
      return s;
    }
    if (c == '\\') {
      decode_escapes(begin);
      return scratch_;
    }
    if (c < 0x20) fail("control character in string");
    ascii &= c < 0x80;
    ++pos_;
  }
  fail("unterminated string");
}

void JsonCursor::check_utf8(std::string_view s, std::size_t at) const {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    int extra = c < 0x80           ? 0
                : (c >> 5) == 0x6  ? 1
                : (c >> 4) == 0xe  ? 2
                : (c >> 3) == 0x1e ? 3
                                   : -1;
    bool ok = extra >= 0 && i + extra < s.size() + (extra == 0 ? 1 : 0);
    for (int k = 1; ok && k <= extra; ++k) {
      ok = i + k < s.size() && (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    }
    if (!ok) throw JsonSyntaxError(at + i, "invalid UTF-8 in string");
    i += static_cast<std::size_t>(extra) + 1;
  }
}

namespace {

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

// Slow path: copies the string into scratch_, decoding escapes; pos_ is at the first '\\'.
void JsonCursor::decode_escapes(std::size_t begin) {
  scratch_.assign(text_.substr(begin, pos_ - begin));
  auto read_hex4 = [this]() -> std::uint32_t {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      int h = hex_value(text_[pos_ + k]);
      if (h < 0) fail("bad hex digit in \\u escape");
      v = v * 16 + static_cast<std::uint32_t>(h);
    }
    pos_ += 4;
    return v;
  };
  while (pos_ < text_.size()) {
    auto c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      check_utf8(scratch_, begin);
      return;
    }
    if (c < 0x20) fail("control character in string");
    if (c != '\\') {
      scratch_ += static_cast<char>(c);
      ++pos_;
      continue;
    }
    if (++pos_ >= text_.size()) break;
    char e = text_[pos_++];
    switch (e) {
      case '"':
        scratch_ += '"';
        break;
      case '\\':
        scratch_ += '\\';
        break;
      case '/':
        scratch_ += '/';
        break;
      case 'b':
        scratch_ += '\b';
        break;
      case 'f':
        scratch_ += '\f';
        break;
      case 'n':
        scratch_ += '\n';
        break;
      case 'r':
        scratch_ += '\r';
        break;
      case 't':
        scratch_ += '\t';
        break;
      case 'u': {
        std::uint32_t cp = read_hex4();
        if (cp >= 0xd800 && cp < 0xdc00) {
          if (pos_ + 2 > text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
            fail("unpaired surrogate in \\u escape");
          }
          pos_ += 2;
          std::uint32_t lo = read_hex4();
          if (lo < 0xdc00 || lo >= 0xe000) fail("invalid low surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          fail("unpaired surrogate in \\u escape");
        }
        append_utf8(scratch_, cp);
        break;
      }
      default:
        fail(fmt::format("invalid escape '\\{}'", e));
    }
  }
  fail("unterminated string");
}

// Fast path: an integer of at most 18 digits (no overflow possible), ended by a byte that cannot
// continue a number — every coordinate of a loom graph. Anything else takes the checked path.
JsonNumber JsonCursor::read_number() {
  skip_whitespace();
  std::size_t begin = pos_;
  if (text_.size() - pos_ >= 20) {  // sign, 18 digits and the byte after them are all in the text
    const char* p = text_.data() + pos_;
    const bool negative = *p == '-';
    const char* digits = p + (negative ? 1 : 0);
    auto is_digit = [](char c) { return static_cast<unsigned char>(c - '0') <= 9; };
    if (is_digit(digits[0]) && !(digits[0] == '0' && is_digit(digits[1]))) {
      std::int64_t value = 0;
      const char* q = digits;
      while (is_digit(*q) && q - digits < 18) value = value * 10 + (*q++ - '0');
      const char next = *q;
      if (!is_digit(next) && next != '.' && next != 'e' && next != 'E') {
        pos_ = static_cast<std::size_t>(q - text_.data());
        return JsonNumber{.text = text_.substr(begin, pos_ - begin),
                          .integer = negative ? -value : value,
                          .is_integral_text = true};
      }
    }
  }
  bool negative = pos_ < text_.size() && text_[pos_] == '-';
  if (negative) ++pos_;
  if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') fail("expected a digit");
  bool leading_zero = text_[pos_] == '0';
  // Accumulate as a negative value so that INT64_MIN is representable.
  std::int64_t value = 0;
  bool overflow = false;
  std::size_t digits = 0;
  while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
    int d = text_[pos_] - '0';
    overflow = overflow || __builtin_mul_overflow(value, 10, &value) ||
               __builtin_sub_overflow(value, d, &value);
    ++pos_;
    ++digits;
  }
  if (leading_zero && digits > 1) fail("leading zeros are not allowed in numbers");
  bool integral = true;
  if (pos_ < text_.size() && text_[pos_] == '.') {
    integral = false;
    ++pos_;
    std::size_t frac = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    if (pos_ == frac) fail("expected a digit after '.'");
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    integral = false;
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    std::size_t exp = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    if (pos_ == exp) fail("expected a digit in the exponent");
  }
  JsonNumber n;
  n.text = text_.substr(begin, pos_ - begin);
  n.is_integral_text = integral;
  if (integral && !overflow) {
    if (!negative) {
      if (value != INT64_MIN) n.integer = -value;
    } else {
      n.integer = value;
    }
  }
  return n;
}

bool JsonCursor::read_compact_int_array(std::vector<std::int64_t>& out) {
  out.clear();
  skip_whitespace();
  const char* text = text_.data();
  const std::size_t size = text_.size();
  std::size_t p = pos_;
  if (p >= size || text[p] != '[' || depth_ >= kMaxDepth) return false;
  ++p;
  auto is_digit = [](char c) { return static_cast<unsigned char>(c - '0') <= 9; };
  if (p < size && text[p] == ']') {
    pos_ = p + 1;
    return true;
  }
  for (;;) {
    if (size - p < 20) return false;  // sign, 18 digits and the byte after them
    const bool negative = text[p] == '-';
    const char* digits = text + p + (negative ? 1 : 0);
    if (!is_digit(digits[0]) || (digits[0] == '0' && is_digit(digits[1]))) return false;
    std::int64_t value = 0;
    const char* q = digits;
    while (is_digit(*q) && q - digits < 18) value = value * 10 + (*q++ - '0');
    out.push_back(negative ? -value : value);
    p = static_cast<std::size_t>(q - text);
    if (text[p] == ',') {
      ++p;
    } else if (text[p] == ']') {
      pos_ = p + 1;
      return true;
    } else {
      return false;  // more digits, a fraction, whitespace, …: the checked path decides
    }
  }
}

bool JsonCursor::read_bool() {
  skip_whitespace();
  if (text_.substr(pos_, 4) == "true") {
    pos_ += 4;
    return true;
  }
  if (text_.substr(pos_, 5) == "false") {
    pos_ += 5;
    return false;
  }
  fail("expected true or false");
}

void JsonCursor::read_null() {
  skip_whitespace();
  if (text_.substr(pos_, 4) != "null") fail("expected null");
  pos_ += 4;
}

void JsonCursor::skip_value() {
  switch (peek()) {
    case JsonKind::kObject:
      begin_object();
      while (next_key()) skip_value();
      return;
    case JsonKind::kArray:
      begin_array();
      while (next_element()) skip_value();
      return;
    case JsonKind::kString:
      read_string();
      return;
    case JsonKind::kNumber:
      read_number();
      return;
    case JsonKind::kBool:
      read_bool();
      return;
    case JsonKind::kNull:
      read_null();
      return;
  }
}

nlohmann::json JsonCursor::read_json_number() {
  JsonNumber n = read_number();
  if (n.integer) return *n.integer;
  if (n.is_integral_text && n.text[0] != '-') {
    errno = 0;
    std::string digits(n.text);
    unsigned long long u = std::strtoull(digits.c_str(), nullptr, 10);
    if (errno == 0) return static_cast<std::uint64_t>(u);
  }
  return std::strtod(std::string(n.text).c_str(), nullptr);
}

nlohmann::json JsonCursor::read_json() {
  switch (peek()) {
    case JsonKind::kObject: {
      nlohmann::json obj = nlohmann::json::object();
      begin_object();
      while (auto key = next_key()) {
        std::string k(*key);
        if (obj.contains(k)) fail(fmt::format("duplicate key \"{}\"", k));
        obj[k] = read_json();
      }
      return obj;
    }
    case JsonKind::kArray: {
      nlohmann::json arr = nlohmann::json::array();
      begin_array();
      while (next_element()) arr.push_back(read_json());
      return arr;
    }
    case JsonKind::kString:
      return std::string(read_string());
    case JsonKind::kNumber:
      return read_json_number();
    case JsonKind::kBool:
      return read_bool();
    case JsonKind::kNull:
      read_null();
      return nullptr;
  }
  return nullptr;
}

void JsonCursor::expect_end() {
  skip_whitespace();
  if (pos_ != text_.size()) fail("unexpected text after the JSON value");
}

support::SourcePos JsonCursor::location(std::size_t offset) const {
  return support::source_position(text_, offset);
}

}  // namespace tapestry::ir
