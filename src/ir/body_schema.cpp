// Structural checks of loom bodies and tags (body_schema.h).
#include "body_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "body_reader.h"
#include "tapestry/ir/nodes.h"

namespace tapestry::ir {

namespace {

using nlohmann::json;

class Checker {
 public:
  std::vector<SchemaProblem> problems;

  void fail(const std::string& path, std::string message) {
    problems.push_back({path, std::move(message), nullptr});
  }
  void fail(const std::string& path, std::string message, const json& value) {
    problems.push_back({path, std::move(message), value.is_structured() ? json() : value});
  }

  bool expect(const json& j, json::value_t type, const std::string& path) {
    bool ok = j.type() == type || (type == json::value_t::number_integer && j.is_number());
    if (!ok) fail(path, fmt::format("expected {}, got {}", name_of(type), j.type_name()), j);
    return ok;
  }

  // Checks object members: `required` must be present; members outside `known` are reported
  // only when `closed` (loom's additionalProperties: false).
  bool object(const json& j, const std::string& path, std::initializer_list<const char*> required,
              std::initializer_list<const char*> known, bool closed) {
    if (!expect(j, json::value_t::object, path)) return false;
    for (const char* key : required) {
      if (!j.contains(key)) fail(path, fmt::format("missing required field \"{}\"", key));
    }
    if (!closed) return true;
    for (const auto& member : j.items()) {
      // A named variable, not a structured binding: clang 14 (the fuzz preset) cannot capture
      // bindings in lambdas.
      const std::string& key = member.key();
      bool is_known =
          std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; });
      if (!is_known) fail(fmt::format("{}.{}", path, key), "unknown field");
    }
    return true;
  }

  bool integer(const json& j, const std::string& path) {
    if (j.is_number_integer() && !j.is_number_unsigned()) return true;
    if (j.is_number_unsigned()) {
      if (j.get<std::uint64_t>() <=
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return true;
      }
      fail(path, fmt::format("integer {} does not fit in int64", j.dump()), j);
      return false;
    }
    if (j.is_number_float()) {
      // Integers beyond uint64 arrive as floating-point numbers.
      double v = j.get<double>();
      bool integral_but_huge = std::isfinite(v) && std::floor(v) == v && std::fabs(v) >= 9.2e18;
      bool inf = std::isinf(v);
      fail(path,
           inf                 ? std::string("number out of range (expected an int64 integer)")
           : integral_but_huge ? fmt::format("integer {} does not fit in int64", j.dump())
                               : fmt::format("expected an int64 integer, got {}", j.dump()),
           j);
      return false;
    }
    fail(path, fmt::format("expected an integer, got {}", j.type_name()), j);
    return false;
  }

  // An integer array; returns its length, or -1 when it is not one.
  std::ptrdiff_t ints(const json& j, const std::string& path) {
    if (!expect(j, json::value_t::array, path)) return -1;
    bool ok = true;
    for (std::size_t i = 0; i < j.size(); ++i)
      ok = integer(j[i], fmt::format("{}[{}]", path, i)) && ok;
    return ok ? static_cast<std::ptrdiff_t>(j.size()) : -1;
  }

  void range(const json& j, const std::string& path) {
    if (!object(j, path, {"start", "end"}, {"start", "end"}, true)) return;
    if (!j.contains("start") || !j.contains("end")) return;
    std::ptrdiff_t a = ints(j["start"], path + ".start");
    std::ptrdiff_t b = ints(j["end"], path + ".end");
    if (a < 0 || b < 0) return;
    if (a != b) {
      fail(path, fmt::format("start has rank {} but end has rank {}", a, b));
      return;
    }
    for (std::size_t k = 0; k < static_cast<std::size_t>(a); ++k) {
      if (j["start"][k].get<std::int64_t>() > j["end"][k].get<std::int64_t>()) {
        fail(path, fmt::format("start {} is after end {} in dimension {}", j["start"].dump(),
                               j["end"].dump(), k));
        return;
      }
    }
  }

  template <typename CheckItem>
  void named_lists(const json& j, const std::string& path, bool non_empty, CheckItem&& item) {
    if (!expect(j, json::value_t::object, path)) return;
    for (const auto& [name, list] : j.items()) {
      std::string p = fmt::format("{}.{}", path, name);
      if (!is_identifier(name)) fail(p, fmt::format("\"{}\" is not an identifier", name));
      if (!expect(list, json::value_t::array, p)) continue;
      if (non_empty && list.empty()) fail(p, "a selection list must not be empty");
      for (std::size_t i = 0; i < list.size(); ++i) item(list[i], fmt::format("{}[{}]", p, i));
    }
  }

  void selection_map(const json& j, const std::string& path) {
    named_lists(j, path, true, [this](const json& sel, const std::string& p) {
      if (!object(sel, p, {"tensorId", "range"}, {"tensorId", "range"}, true)) return;
      if (sel.contains("tensorId")) expect(sel["tensorId"], json::value_t::string, p + ".tensorId");
      if (sel.contains("range")) range(sel["range"], p + ".range");
    });
  }

  void ipf(const json& j, const std::string& path) {
    if (!object(j, path, {"affineMap", "shape"}, {"affineMap", "shape"}, true)) return;
    std::ptrdiff_t out_rank = -1;
    if (j.contains("affineMap")) out_rank = affine_map(j["affineMap"], path + ".affineMap");
    if (!j.contains("shape")) return;
    std::ptrdiff_t shape = ints(j["shape"], path + ".shape");
    if (shape >= 0 && out_rank >= 0 && shape != out_rank) {
      fail(path + ".shape",
           fmt::format("shape has rank {} but the map has {} rows", shape, out_rank));
    }
    if (shape >= 0) {
      for (std::size_t k = 0; k < j["shape"].size(); ++k) {
        if (j["shape"][k].get<std::int64_t>() < 0)
          fail(fmt::format("{}.shape[{}]", path, k), "negative shape");
      }
    }
  }

  // Returns the number of rows, or -1.
  std::ptrdiff_t affine_map(const json& j, const std::string& path) {
    if (!object(j, path, {"projection", "offset"}, {"projection", "offset"}, true)) return -1;
    if (!j.contains("projection") || !j.contains("offset")) return -1;
    const json& proj = j["projection"];
    if (!expect(proj, json::value_t::array, path + ".projection")) return -1;
    std::ptrdiff_t cols = -1;
    bool ok = true;
    for (std::size_t r = 0; r < proj.size(); ++r) {
      std::string p = fmt::format("{}.projection[{}]", path, r);
      std::ptrdiff_t n = ints(proj[r], p);
      if (n < 0) {
        ok = false;
        continue;
      }
      if (cols >= 0 && n != cols) {
        fail(p, fmt::format("ragged matrix: {} columns, row 0 has {}", n, cols));
        ok = false;
      }
      if (cols < 0) cols = n;
    }
    std::ptrdiff_t offset = ints(j["offset"], path + ".offset");
    if (offset >= 0 && offset != static_cast<std::ptrdiff_t>(proj.size())) {
      fail(path + ".offset",
           fmt::format("offset has rank {} but the projection has {} rows", offset, proj.size()));
      ok = false;
    }
    return ok ? static_cast<std::ptrdiff_t>(proj.size()) : -1;
  }

  void string_field(const json& j, const char* key, const std::string& path) {
    if (j.contains(key)) expect(j[key], json::value_t::string, fmt::format("{}.{}", path, key));
  }

 private:
  static const char* name_of(json::value_t type) {
    switch (type) {
      case json::value_t::object:
        return "an object";
      case json::value_t::array:
        return "an array";
      case json::value_t::string:
        return "a string";
      case json::value_t::number_integer:
        return "a number";
      default:
        return "a value";
    }
  }
};

void check_operation(Checker& c, const json& j) {
  if (!c.object(j, "", {"kernel"}, {}, false)) return;
  c.string_field(j, "kernel", "");
  if (j.contains("params") && c.expect(j["params"], json::value_t::object, ".params")) {
    for (const auto& [name, value] : j["params"].items()) {
      if (!is_identifier(name))
        c.fail(".params." + name, fmt::format("\"{}\" is not an identifier", name));
    }
  }
  if (j.contains("inputs")) c.selection_map(j["inputs"], ".inputs");
  if (j.contains("outputs")) c.selection_map(j["outputs"], ".outputs");
  if (j.contains("indexNames") && c.expect(j["indexNames"], json::value_t::array, ".indexNames")) {
    for (std::size_t i = 0; i < j["indexNames"].size(); ++i) {
      const json& n = j["indexNames"][i];
      std::string p = fmt::format(".indexNames[{}]", i);
      if (c.expect(n, json::value_t::string, p) && !is_identifier(n.get<std::string>())) {
        c.fail(p, fmt::format("{} is not an identifier", n.dump()));
      }
    }
  }
  if (j.contains("reductions") && c.expect(j["reductions"], json::value_t::object, ".reductions")) {
    for (const auto& [dim, monoid] : j["reductions"].items()) {
      std::string p = ".reductions." + dim;
      if (c.expect(monoid, json::value_t::string, p) && !parse_monoid(monoid.get<std::string>())) {
        c.fail(p, fmt::format("unknown monoid {} (expected sum, max, min or prod)", monoid.dump()));
      }
    }
  }
}

}  // namespace

std::vector<std::string> known_body_fields(NodeKind kind) {
  switch (kind) {
    case NodeKind::kTensor:
      return {"dtype", "range"};
    case NodeKind::kOperation:
      return {"kernel", "params", "inputs", "outputs", "indexNames", "reductions"};
    case NodeKind::kApplication:
      return {"operationId", "inputs", "outputs"};
    case NodeKind::kNote:
      return {"message"};
    case NodeKind::kOpaque:
      return {};
  }
  return {};
}

std::vector<SchemaProblem> check_node_body(NodeKind kind, const json& body) {
  Checker c;
  switch (kind) {
    case NodeKind::kTensor:
      if (!c.object(body, "", {"dtype", "range"}, {}, false)) break;
      c.string_field(body, "dtype", "");
      if (body.contains("range")) c.range(body["range"], ".range");
      break;
    case NodeKind::kOperation:
      check_operation(c, body);
      break;
    case NodeKind::kApplication:
      if (!c.object(body, "", {"operationId"}, {}, false)) break;
      c.string_field(body, "operationId", "");
      if (body.contains("inputs")) c.selection_map(body["inputs"], ".inputs");
      if (body.contains("outputs")) c.selection_map(body["outputs"], ".outputs");
      break;
    case NodeKind::kNote:
      if (!c.object(body, "", {"message"}, {}, false)) break;
      c.string_field(body, "message", "");
      break;
    case NodeKind::kOpaque:
      break;
  }
  return std::move(c.problems);
}

// {"device": "gpu:1", "receives": [{"tensorId": "…", "range": {…}, "from": "gpu:0"}, …]}.
void check_placement(Checker& c, const json& j) {
  if (!c.object(j, "", {"device"}, {"device", "receives"}, true)) return;
  c.string_field(j, "device", "");
  if (j.contains("device") && j["device"].is_string() && j["device"].get<std::string>().empty()) {
    c.fail(".device", "a device name cannot be empty");
  }
  if (!j.contains("receives") || !c.expect(j["receives"], json::value_t::array, ".receives")) {
    return;
  }
  for (std::size_t i = 0; i < j["receives"].size(); ++i) {
    const json& r = j["receives"][i];
    const std::string path = fmt::format(".receives[{}]", i);
    if (!c.object(r, path, {"tensorId", "range", "from"}, {"tensorId", "range", "from"}, true)) {
      continue;
    }
    c.string_field(r, "tensorId", path);
    c.string_field(r, "from", path);
    if (r.contains("range")) c.range(r["range"], path + ".range");
  }
}

std::vector<SchemaProblem> check_tag_value(TagKind kind, const json& value) {
  Checker c;
  switch (kind) {
    case TagKind::kIpfIndex:
      c.range(value, "");
      break;
    case TagKind::kIpfSignature:
      if (!c.object(value, "", {"inputs", "outputs"}, {"inputs", "outputs"}, true)) break;
      for (const char* side : {"inputs", "outputs"}) {
        if (!value.contains(side)) continue;
        c.named_lists(value[side], std::string(".") + side, false,
                      [&c](const json& ipf, const std::string& p) { c.ipf(ipf, p); });
      }
      break;
    case TagKind::kIoSequencePoint:
      c.object(value, "", {}, {}, true);
      break;
    case TagKind::kPlacement:
      check_placement(c, value);
      break;
  }
  return std::move(c.problems);
}

}  // namespace tapestry::ir
