// Hand-written structural checks of loom bodies and tag values (private to module ir).
//
// These mirror the loom JSON schemas in tests/data/compat/*.jsd (plus Tapestry's optional
// Operation fields indexNames and reductions) and list *every* problem with a JSON path relative
// to the checked value:
//
//   check_node_body(NodeKind::kTensor, {"dtype": 3, "range": {"start": [0], "end": [1, 2]}})
//     → {".dtype", "expected a string, got number"},
//       {".range", "start has rank 1 but end has rank 2"}
//
// Why hand-written rather than a JSON-schema library: the schemas are small and fixed; the
// checks also need rules JSON Schema cannot state (start <= end, equal ranks, int64 range, a
// non-ragged projection matrix); no schema library is packaged for this build; and the typed
// reader (body_reader.cpp) already encodes the same rules, so a second, independent encoding here
// doubles as a cross-check (tests/ir/body_schema_test.cpp reads bodies both ways).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/ids.h"
#include "tapestry/ir/type_names.h"

namespace tapestry::ir {

struct SchemaProblem {
  std::string path;  // relative: "" for the value itself, ".range.start[1]", …
  std::string message;
  nlohmann::json value;  // the offending value, when small and useful (else null)
};

/// Problems of a node body of a known kind (kOpaque is not a kind with a schema).
std::vector<SchemaProblem> check_node_body(NodeKind kind, const nlohmann::json& body);
/// Problems of a known tag's value.
std::vector<SchemaProblem> check_tag_value(TagKind kind, const nlohmann::json& value);
/// The body fields of `kind` that the loom schema (plus Tapestry's extension) defines.
std::vector<std::string> known_body_fields(NodeKind kind);

}  // namespace tapestry::ir
