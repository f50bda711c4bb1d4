// BodyReader: typed reading of loom bodies and tags (see body_reader.h).
//
// Each reader loops over the object's keys in whatever order they come, remembers which
// required fields it saw, and throws SchemaMismatch at the first deviation. Duplicate keys are a
// syntax error, as everywhere in Tapestry's JSON.
#include "body_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "tapestry/support/error.h"
#include "tapestry/zspace/json.h"

namespace tapestry::ir {

namespace {

[[noreturn]] void mismatch(std::string reason) {
  throw SchemaMismatch{std::move(reason)};
}

// Tracks which known fields of an object were seen, to catch duplicates and missing ones.
class FieldSet {
 public:
  explicit FieldSet(JsonCursor& cursor) : cursor_(cursor) {}
  void see(int bit, std::string_view key) {
    if (seen_ & (1u << bit)) {
      throw JsonSyntaxError(cursor_.offset(), fmt::format("duplicate key \"{}\"", key));
    }
    seen_ |= 1u << bit;
  }
  void require(int bit, std::string_view key) const {
    if (!(seen_ & (1u << bit))) mismatch(fmt::format("missing \"{}\"", key));
  }

 private:
  JsonCursor& cursor_;
  unsigned seen_ = 0;
};

}  // namespace

bool is_identifier(std::string_view name) {
  if (name.empty()) return false;
  auto ok_first = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!ok_first(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [&](char c) { return ok_first(c) || (c >= '0' && c <= '9'); });
}

void BodyReader::expect_kind(JsonKind kind, std::string_view what) {
  JsonKind got = cur_.peek();
  if (got != kind) {
    mismatch(
        fmt::format("{}: expected {}, got {}", what, json_kind_name(kind), json_kind_name(got)));
  }
}

std::string_view BodyReader::read_string_field(std::string_view field) {
  expect_kind(JsonKind::kString, field);
  return cur_.read_string();
}

std::string_view BodyReader::read_identifier(std::string_view what) {
  std::string_view name = read_string_field(what);
  if (!is_identifier(name)) mismatch(fmt::format("{}: \"{}\" is not an identifier", what, name));
  return name;
}

void BodyReader::add_extension(nlohmann::json& extensions, std::string_view key) {
  std::string k(key);  // the view dies with the next string read
  if (extensions.is_null()) extensions = nlohmann::json::object();
  if (extensions.contains(k)) {
    throw JsonSyntaxError(cur_.offset(), fmt::format("duplicate key \"{}\"", k));
  }
  extensions[k] = cur_.read_json();
}

void BodyReader::read_ints(std::vector<std::int64_t>& out) {
  if (cur_.read_compact_int_array(out)) return;
  out.clear();
  expect_kind(JsonKind::kArray, "point");
  cur_.begin_array();
  while (cur_.next_element()) {
    expect_kind(JsonKind::kNumber, "coordinate");
    JsonNumber n = cur_.read_number();
    if (!n.integer) mismatch(fmt::format("{} is not an int64 integer", n.text));
    out.push_back(*n.integer);
  }
}

// Reads {"start": [..], "end": [..]} into start_scratch_ / end_scratch_ and checks equal ranks
// and start <= end.
void BodyReader::read_corners() {
  expect_kind(JsonKind::kObject, "range");
  cur_.begin_object();
  FieldSet fields(cur_);
  std::string_view expected = "start";  // the usual order: start, end
  while (auto key = cur_.next_key(expected)) {
    expected = "end";
    if (*key == "start") {
      fields.see(0, *key);
      read_ints(start_scratch_);
    } else if (*key == "end") {
      fields.see(1, *key);
      read_ints(end_scratch_);
    } else {
      mismatch(fmt::format("range: unknown field \"{}\"", *key));
    }
  }
  fields.require(0, "start");
  fields.require(1, "end");
  if (start_scratch_.size() != end_scratch_.size()) mismatch("range: start and end ranks differ");
  for (std::size_t k = 0; k < start_scratch_.size(); ++k) {
    if (start_scratch_[k] > end_scratch_[k]) mismatch("range: start is after end");
  }
}

zspace::Range BodyReader::read_range() {
  read_corners();
  return zspace::Range(zspace::Point(std::span<const std::int64_t>(start_scratch_)),
                       zspace::Point(std::span<const std::int64_t>(end_scratch_)));
}

// One selection, appended straight from the scratch corners (no Range built).
void BodyReader::read_selection_into(std::string_view name, SelectionMap& map) {
  expect_kind(JsonKind::kObject, "selection");
  cur_.begin_object();
  FieldSet fields(cur_);
  TensorId tensor;
  std::string_view expected = "tensorId";  // the usual order: tensorId, range
  while (auto key = cur_.next_key(expected)) {
    expected = "range";
    if (*key == "tensorId") {
      fields.see(0, *key);
      tensor = TensorId(references_(read_string_field("tensorId")));
    } else if (*key == "range") {
      fields.see(1, *key);
      read_corners();
    } else {
      mismatch(fmt::format("selection: unknown field \"{}\"", *key));
    }
  }
  fields.require(0, "tensorId");
  fields.require(1, "range");
  try {
    map.append(name, tensor, start_scratch_, end_scratch_);
  } catch (const Error& e) {  // the name table is full
    mismatch(e.what());
  }
}

// Entries collect in a reused scratch map; the copy into `result` then allocates exactly once.
void BodyReader::read_selection_map(SelectionMap& result) {
  SelectionMap& map = selection_scratch_;
  map.clear();
  expect_kind(JsonKind::kObject, "selection map");
  cur_.begin_object();
  while (auto key = cur_.next_key()) {
    if (!is_identifier(*key)) mismatch(fmt::format("\"{}\" is not an identifier", *key));
    std::string name(*key);
    if (map.has(name))
      throw JsonSyntaxError(cur_.offset(), fmt::format("duplicate key \"{}\"", name));
    expect_kind(JsonKind::kArray, "selection list");
    cur_.begin_array();
    std::size_t count = 0;
    while (cur_.next_element()) {
      read_selection_into(name, map);
      ++count;
    }
    if (count == 0) mismatch(fmt::format("selection list \"{}\" is empty", name));
  }
  result = map;
}

ReadBody<TensorBody> BodyReader::read_tensor() {
  expect_kind(JsonKind::kObject, "body");
  cur_.begin_object();
  FieldSet fields(cur_);
  ReadBody<TensorBody> out;
  std::string_view expected = "dtype";  // the usual order: dtype, range
  while (auto key = cur_.next_key(expected)) {
    expected = "range";
    if (*key == "dtype") {
      fields.see(0, *key);
      out.body.dtype = LoomDType::parse(read_string_field("dtype"));
    } else if (*key == "range") {
      fields.see(1, *key);
      out.body.range = read_range();
    } else {
      add_extension(out.extensions, *key);
    }
  }
  fields.require(0, "dtype");
  fields.require(1, "range");
  return out;
}

ReadBody<OperationBody> BodyReader::read_operation() {
  expect_kind(JsonKind::kObject, "body");
  cur_.begin_object();
  FieldSet fields(cur_);
  ReadBody<OperationBody> out;
  OperationBody& body = out.body;
  while (auto key = cur_.next_key()) {
    if (*key == "kernel") {
      fields.see(0, *key);
      body.kernel = std::string(read_string_field("kernel"));
    } else if (*key == "params") {
      fields.see(1, *key);
      expect_kind(JsonKind::kObject, "params");
      body.params = cur_.read_json();
      for (const auto& [name, value] : body.params.items()) {
        if (!is_identifier(name)) mismatch(fmt::format("param \"{}\" is not an identifier", name));
      }
    } else if (*key == "inputs") {
      fields.see(2, *key);
      read_selection_map(body.inputs);
    } else if (*key == "outputs") {
      fields.see(3, *key);
      read_selection_map(body.outputs);
    } else if (*key == "indexNames") {
      fields.see(4, *key);
      expect_kind(JsonKind::kArray, "indexNames");
      cur_.begin_array();
      while (cur_.next_element()) body.index_names.emplace_back(read_identifier("index name"));
    } else if (*key == "reductions") {
      fields.see(5, *key);
      expect_kind(JsonKind::kObject, "reductions");
      cur_.begin_object();
      while (auto dim = cur_.next_key()) {
        std::string name(*dim);
        std::string_view monoid = read_string_field("monoid");
        auto m = parse_monoid(monoid);
        if (!m) mismatch(fmt::format("unknown monoid \"{}\"", monoid));
        body.reductions.push_back({std::move(name), *m});
      }
      std::sort(body.reductions.begin(), body.reductions.end(),
                [](const Reduction& a, const Reduction& b) { return a.dim < b.dim; });
    } else {
      add_extension(out.extensions, *key);
    }
  }
  fields.require(0, "kernel");
  return out;
}

ReadBody<ApplicationBody> BodyReader::read_application() {
  expect_kind(JsonKind::kObject, "body");
  cur_.begin_object();
  FieldSet fields(cur_);
  ReadBody<ApplicationBody> out;
  std::string_view expected = "operationId";  // the usual order: operationId, inputs, outputs
  while (auto key = cur_.next_key(expected)) {
    expected = {};
    if (*key == "operationId") {
      fields.see(0, *key);
      out.body.operation = OperationId(references_(read_string_field("operationId")));
      expected = "inputs";
    } else if (*key == "inputs") {
      fields.see(1, *key);
      read_selection_map(out.body.inputs);
      expected = "outputs";
    } else if (*key == "outputs") {
      fields.see(2, *key);
      read_selection_map(out.body.outputs);
    } else {
      add_extension(out.extensions, *key);
    }
  }
  fields.require(0, "operationId");
  return out;
}

ReadBody<NoteBody> BodyReader::read_note() {
  expect_kind(JsonKind::kObject, "body");
  cur_.begin_object();
  FieldSet fields(cur_);
  ReadBody<NoteBody> out;
  while (auto key = cur_.next_key()) {
    if (*key == "message") {
      fields.see(0, *key);
      out.body.message = std::string(read_string_field("message"));
    } else {
      add_extension(out.extensions, *key);
    }
  }
  fields.require(0, "message");
  return out;
}

// IPF signatures sit on operations only (thousands, not millions): reading them through the
// DOM and zspace's JSON reader keeps one definition of the IPF format.
zspace::IndexProjection BodyReader::read_ipf() {
  nlohmann::json j = cur_.read_json();
  try {
    return zspace::index_projection_from_json(j);
  } catch (const Error& e) {
    mismatch(e.what());
  }
}

void BodyReader::read_ipf_map(IpfMap& map) {
  expect_kind(JsonKind::kObject, "IPF map");
  cur_.begin_object();
  while (auto key = cur_.next_key()) {
    if (!is_identifier(*key)) mismatch(fmt::format("\"{}\" is not an identifier", *key));
    std::string name(*key);
    if (map.has(name))
      throw JsonSyntaxError(cur_.offset(), fmt::format("duplicate key \"{}\"", name));
    expect_kind(JsonKind::kArray, "IPF list");
    cur_.begin_array();
    while (cur_.next_element()) map.append(name, read_ipf());
  }
}

IpfSignature BodyReader::read_ipf_signature() {
  expect_kind(JsonKind::kObject, "IPFSignature");
  cur_.begin_object();
  FieldSet fields(cur_);
  IpfSignature sig;
  while (auto key = cur_.next_key()) {
    if (*key == "inputs") {
      fields.see(0, *key);
      read_ipf_map(sig.inputs);
    } else if (*key == "outputs") {
      fields.see(1, *key);
      read_ipf_map(sig.outputs);
    } else {
      mismatch(fmt::format("IPFSignature: unknown field \"{}\"", *key));
    }
  }
  fields.require(0, "inputs");
  fields.require(1, "outputs");
  return sig;
}

void BodyReader::read_empty_object() {
  expect_kind(JsonKind::kObject, "IOSequencePoint");
  cur_.begin_object();
  if (auto key = cur_.next_key()) mismatch(fmt::format("unexpected field \"{}\"", *key));
}

}  // namespace tapestry::ir
