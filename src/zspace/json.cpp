#include "tapestry/zspace/json.h"

#include <fmt/core.h>

#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tapestry/support/diagnostic.h"
#include "tapestry/support/error.h"

namespace tapestry::zspace {

using nlohmann::json;

namespace {

// Error `source:line:column: message` at byte `offset` of `text`.
[[noreturn]] void fail_at(std::string_view text, std::size_t offset, std::string_view source_name,
                          std::string message) {
  support::Diagnostic d{.message = std::move(message)};
  d.where.file = std::string(source_name);
  d.where.pos = support::source_position(text, offset);
  throw support::DiagnosticError(std::move(d));
}

// Where `number` first occurs in `text` (0 when it does not): the position of the number
// nlohmann's overflow error (out_of_range.406, which carries no byte offset) quotes.
std::size_t find_number(std::string_view text, std::string_view number) {
  const std::size_t at = text.find(number);
  return at == std::string_view::npos ? 0 : at;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(fmt::format("{}: {}", path.empty() ? "/" : path, what));
}

const char* type_name(const json& j) {
  return j.type_name();
}

std::int64_t read_int(const json& j, const std::string& path) {
  if (j.is_number_integer()) {
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      fail(path, fmt::format("integer {} does not fit in int64", j.get<std::uint64_t>()));
    }
    return j.get<std::int64_t>();
  }
  if (j.is_number_float()) fail(path, fmt::format("expected an integer, got {}", j.dump()));
  fail(path, fmt::format("expected an integer, got {}", type_name(j)));
}

std::vector<std::int64_t> read_ints(const json& j, const std::string& path) {
  if (!j.is_array()) fail(path, fmt::format("expected an array of integers, got {}", type_name(j)));
  std::vector<std::int64_t> out;
  out.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i)
    out.push_back(read_int(j[i], fmt::format("{}/{}", path, i)));
  return out;
}

// Checks that `j` is an object with exactly the members `required` (plus nothing else).
void check_object(const json& j, const std::string& path,
                  std::initializer_list<const char*> required) {
  if (!j.is_object()) fail(path, fmt::format("expected an object, got {}", type_name(j)));
  for (const char* key : required) {
    if (!j.contains(key)) fail(path, fmt::format("missing member \"{}\"", key));
  }
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : required) known |= key == k;
    if (!known) fail(path, fmt::format("unknown member \"{}\"", key));
  }
}

Point point_at(const json& j, const std::string& path) {
  std::vector<std::int64_t> v = read_ints(j, path);
  return Point(std::span<const std::int64_t>(v));
}

Range range_at(const json& j, const std::string& path) {
  check_object(j, path, {"start", "end"});
  Point start = point_at(j["start"], path + "/start");
  Point end = point_at(j["end"], path + "/end");
  try {
    return Range(std::move(start), std::move(end));
  } catch (const Error& e) {
    fail(path, e.what());
  }
}

AffineMap affine_map_at(const json& j, const std::string& path) {
  check_object(j, path, {"projection", "offset"});
  Point offset = point_at(j["offset"], path + "/offset");
  const json& proj = j["projection"];
  if (!proj.is_array())
    fail(path + "/projection", fmt::format("expected an array of rows, got {}", type_name(proj)));
  std::vector<std::vector<std::int64_t>> rows;
  rows.reserve(proj.size());
  for (std::size_t r = 0; r < proj.size(); ++r)
    rows.push_back(read_ints(proj[r], fmt::format("{}/projection/{}", path, r)));
  try {
    return AffineMap::from_rows(rows, std::move(offset));
  } catch (const Error& e) {
    fail(path, e.what());
  }
}

// nlohmann::json keeps the last of duplicate keys without a word, so `{"split": {"d0": 2},
// "split": {"d0": 3}}` would lose a split. A second pass with its SAX interface finds them. SAX
// events carry no position, so the text is read through an iterator that remembers the last
// byte the lexer took: at a `key` event, the key's closing quote.
class TrackingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator(const char* at, const char** last) : at_(at), last_(last) {}
  const char& operator*() const {
    *last_ = at_;
    return *at_;
  }
  TrackingIterator& operator++() {
    ++at_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator before = *this;
    ++at_;
    return before;
  }
  friend bool operator==(const TrackingIterator& a, const TrackingIterator& b) {
    return a.at_ == b.at_;
  }

 private:
  const char* at_;
  const char** last_;
};

// The SAX handler: the keys seen in every open object; stops at the first repeated one.
struct DuplicateKeyFinder {
  const char* const* last_read;
  std::vector<std::set<std::string, std::less<>>> open;
  const char* duplicate_end = nullptr;  // the closing quote of the repeated key
  std::string duplicate;

  bool start_object(std::size_t /*size*/) {
    open.emplace_back();
    return true;
  }
  bool end_object() {
    open.pop_back();
    return true;
  }
  bool key(std::string& k) {
    if (open.back().insert(k).second) return true;
    duplicate_end = *last_read;
    duplicate = k;
    return false;
  }
  bool start_array(std::size_t /*size*/) { return true; }
  bool end_array() { return true; }
  bool null() { return true; }
  bool boolean(bool /*value*/) { return true; }
  bool number_integer(json::number_integer_t /*value*/) { return true; }
  bool number_unsigned(json::number_unsigned_t /*value*/) { return true; }
  bool number_float(json::number_float_t /*value*/, const std::string& /*text*/) { return true; }
  bool string(std::string& /*value*/) { return true; }
  bool binary(json::binary_t& /*value*/) { return true; }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) {
    return false;  // syntax errors are the DOM parse's to report
  }
};

// The offset of the opening quote of the string whose closing quote is at `close`: the nearest
// quote before it not escaped by an odd run of backslashes.
std::size_t opening_quote(std::string_view text, std::size_t close) {
  for (std::size_t i = close; i-- > 0;) {
    if (text[i] != '"') continue;
    std::size_t backslashes = 0;
    while (backslashes < i && text[i - 1 - backslashes] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return i;
  }
  return 0;
}

}  // namespace

void reject_duplicate_keys(std::string_view text, std::string_view source_name) {
  const char* last = text.data();
  DuplicateKeyFinder finder{&last, {}, nullptr, {}};
  json::sax_parse(TrackingIterator(text.data(), &last),
                  TrackingIterator(text.data() + text.size(), &last), &finder);
  if (finder.duplicate_end == nullptr) return;
  const std::size_t at =
      opening_quote(text, static_cast<std::size_t>(finder.duplicate_end - text.data()));
  fail_at(
      text, at, source_name,
      fmt::format("duplicate key \"{}\" (a JSON object names each member once)", finder.duplicate));
}

json parse_json_text(std::string_view text, std::string_view source_name) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    const std::string what = e.what();
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    const auto colon = what.find(": ", what.find("column"));
    fail_at(text, e.byte == 0 ? 0 : e.byte - 1, source_name,
            "invalid JSON: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const json::out_of_range& e) {
    // "[json.exception.out_of_range.406] number overflow parsing '1e999'": the only error the
    // parser raises besides parse_error; the number may be long, so it is cut short.
    const std::string what = e.what();
    const auto open = what.find('\'');
    const auto close = what.rfind('\'');
    const std::string number =
        open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
    const std::string shown = number.size() > 40 ? number.substr(0, 37) + "..." : number;
    fail_at(text, find_number(text, number), source_name,
            fmt::format("invalid JSON: number {} is out of range", shown));
  }
}

json to_json(const Point& point) {
  return json(std::vector<std::int64_t>(point.begin(), point.end()));
}

json to_json(const Range& range) {
  json j = json::object();
  j["start"] = to_json(range.start());
  j["end"] = to_json(range.end());
  return j;
}

json to_json(const AffineMap& map) {
  json j = json::object();
  j["projection"] = map.rows();
  j["offset"] = to_json(map.offset());
  return j;
}

json to_json(const IndexProjection& ipf) {
  json j = json::object();
  j["affineMap"] = to_json(ipf.map());
  j["shape"] = to_json(ipf.shape());
  return j;
}

Point point_from_json(const json& j) {
  return point_at(j, "");
}
Range range_from_json(const json& j) {
  return range_at(j, "");
}
AffineMap affine_map_from_json(const json& j) {
  return affine_map_at(j, "");
}

IndexProjection index_projection_from_json(const json& j) {
  check_object(j, "", {"affineMap", "shape"});
  AffineMap map = affine_map_at(j["affineMap"], "/affineMap");
  Point shape = point_at(j["shape"], "/shape");
  try {
    return IndexProjection(std::move(map), std::move(shape));
  } catch (const Error& e) {
    fail("", e.what());
  }
}

std::string json_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace tapestry::zspace
