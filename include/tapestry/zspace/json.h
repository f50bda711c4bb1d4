// JSON forms of ZSpace values — identical to Tapestry's loom JSON:
//
//   Point            [2, 3]
//   Range            {"start": [2, 3], "end": [4, 5]}
//   AffineMap        {"projection": [[1, 0], [0, 2]], "offset": [4, 5]}
//   IndexProjection  {"affineMap": {"projection": [[1, -1]], "offset": [0]}, "shape": [1]}
//
// The `*_from_json` readers check types, ranks and value invariants and throw Error with a
// message that names the offending member relative to the value read ("/affineMap/offset: ...");
// callers prefix their own JSON path. Unknown members are rejected (the loom schemas say
// additionalProperties: false). Numbers must be integers within int64.
//
// `parse_json_text` turns JSON text from outside (a CLI argument, a plan file) into a value;
// every way text can fail to be JSON is a support::DiagnosticError (an Error whose Diagnostic
// carries the source, line and column; support/diagnostic.h):
//
//   parse_json_text("{\n  \"ops\": {,}\n}", "plan.json")
//     Error "plan.json:2:11: invalid JSON: syntax error while parsing object key - ..."
//   parse_json_text("[1e999]", "--ipf")
//     Error "--ipf:1:2: invalid JSON: number 1e999 is out of range"
#pragma once

#include <utility>

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/index_projection.h"
#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"

namespace tapestry::zspace {

/// Parses JSON text; Error `source:line:column: invalid JSON: ...` when it is not JSON (a syntax
/// error, or a number beyond the range of a double).
nlohmann::json parse_json_text(std::string_view text, std::string_view source_name);

/// Error `source:line:column: duplicate key "k" (a JSON object names each member once)` at the
/// second occurrence of the first key an object repeats; returns when no object repeats a key.
/// nlohmann::json keeps the last of duplicate keys silently, so readers of user files call this
/// after parse_json_text (which reports syntax errors first: this one ignores them).
///
///   reject_duplicate_keys("{\"a\": 1,\n \"a\": 2}", "t.json")
///     Error "t.json:2:2: duplicate key \"a\" (a JSON object names each member once)"
void reject_duplicate_keys(std::string_view text, std::string_view source_name);

/// `key` as one reference token of a JSON Pointer (RFC 6901: "~" → "~0", "/" → "~1"), for the
/// paths located errors name: "/ops/" + json_pointer_token("H/linear") == "/ops/H~1linear".
std::string json_pointer_token(std::string_view key);

nlohmann::json to_json(const Point& point);
nlohmann::json to_json(const Range& range);
nlohmann::json to_json(const AffineMap& map);
nlohmann::json to_json(const IndexProjection& ipf);

Point point_from_json(const nlohmann::json& json);
Range range_from_json(const nlohmann::json& json);
AffineMap affine_map_from_json(const nlohmann::json& json);
IndexProjection index_projection_from_json(const nlohmann::json& json);

}  // namespace tapestry::zspace
