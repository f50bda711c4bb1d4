#include "tapestry/zspace/json.h"

#include <fmt/core.h>

#include <string>
#include <utility>
#include <vector>

#include "tapestry/support/error.h"

namespace tapestry::zspace {

using nlohmann::json;

// 1-based line and column of byte `offset` in `text`.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset) {
  std::size_t line = 1;
  std::size_t column = 1;
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

namespace {

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

}  // namespace

json parse_json_text(std::string_view text, std::string_view source_name) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    const auto [line, column] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    const std::string what = e.what();
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    const auto colon = what.find(": ", what.find("column"));
    throw Error(fmt::format("{}:{}:{}: invalid JSON: {}", source_name, line, column,
                            colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const json::out_of_range& e) {
    // "[json.exception.out_of_range.406] number overflow parsing '1e999'": the only error the
    // parser raises besides parse_error; the number may be long, so it is cut short.
    const std::string what = e.what();
    const auto open = what.find('\'');
    const auto close = what.rfind('\'');
    const std::string number =
        open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
    const auto [line, column] = line_column(text, find_number(text, number));
    const std::string shown = number.size() > 40 ? number.substr(0, 37) + "..." : number;
    throw Error(fmt::format("{}:{}:{}: invalid JSON: number {} is out of range", source_name, line,
                            column, shown));
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

}  // namespace tapestry::zspace
