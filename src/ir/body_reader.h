// BodyReader: reads loom node bodies and tag values straight from a JsonCursor into typed
// values (private to module ir; used by GraphReader).
//
// The happy path builds TensorBody, OperationBody, … without any DOM. Anything that does not
// match the schema throws SchemaMismatch with a short reason; the GraphReader then re-reads the
// body verbatim (JsonCursor::read_json) and keeps the node as Opaque, leaving the detailed
// report to the `body-schema` constraint (body_schema.h), which walks the verbatim JSON.
//
// References (tensorId, operationId) are handed to a `ReferenceSink`, which returns a
// provisional NodeId; the GraphReader fixes them up once every node is known.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "json_cursor.h"
#include "tapestry/ir/nodes.h"

namespace tapestry::ir {

/// The body or tag does not match its schema (the reason is for diagnostics only).
struct SchemaMismatch {
  std::string reason;
};

/// Maps a referenced key to a provisional id (see GraphReader).
using ReferenceSink = std::function<NodeId(std::string_view key)>;

/// A body as read, plus the fields the schema does not know.
template <typename Body>
struct ReadBody {
  Body body;
  nlohmann::json extensions;  // object of unknown fields, or null
};

class BodyReader {
 public:
  BodyReader(JsonCursor& cursor, ReferenceSink references)
      : cur_(cursor), references_(std::move(references)) {}

  ReadBody<TensorBody> read_tensor();
  ReadBody<OperationBody> read_operation();
  ReadBody<ApplicationBody> read_application();
  ReadBody<NoteBody> read_note();

  /// A ZRange `{"start": [..], "end": [..]}` (also the IPFIndex tag value).
  zspace::Range read_range();
  /// The IPFSignature tag value.
  IpfSignature read_ipf_signature();
  /// The IOSequencePoint tag value: must be `{}`.
  void read_empty_object();

 private:
  void read_selection_map(SelectionMap& map);
  void read_selection_into(std::string_view name, SelectionMap& map);
  void read_corners();
  void read_ipf_map(IpfMap& map);
  zspace::IndexProjection read_ipf();
  void read_ints(std::vector<std::int64_t>& out);
  std::string_view read_string_field(std::string_view field);
  std::string_view read_identifier(std::string_view what);
  void expect_kind(JsonKind kind, std::string_view what);
  void add_extension(nlohmann::json& extensions, std::string_view key);

  JsonCursor& cur_;
  ReferenceSink references_;
  std::vector<std::int64_t> start_scratch_;
  std::vector<std::int64_t> end_scratch_;
  SelectionMap selection_scratch_;
};

/// True for `[a-zA-Z_][a-zA-Z0-9_]*` (loom's name pattern for selection maps and params).
bool is_identifier(std::string_view name);

}  // namespace tapestry::ir
