// GraphReader: see graph_reader.h for the steps.
#include "graph_reader.h"

#include <fmt/format.h>

#include <optional>

#include "body_reader.h"
#include "tapestry/ir/state_update.h"

namespace tapestry::ir {

struct GraphReader::NodeFields {
  const std::string* key = nullptr;  // points to GraphReader::key_buffer_ (no allocation per node)
  bool has_type = false;
  std::optional<NodeKind> kind;  // when the type is a known loom type
  std::string type;              // the type as written, kept only when it is not known
  std::optional<std::string> label;
  std::optional<JsonCursor::Mark> body;  // deferred: the body came before "id" or "type"
  std::optional<JsonCursor::Mark> tags;  // deferred: the tags came before the node existed
  NodeId id;                             // once the node is in the graph
  std::size_t offset = 0;                // of the node's '{'
  bool broken = false;  // a field had the wrong JSON type, or the id is taken: skip the node
};

GraphReader::GraphReader(std::string_view text, std::string_view source_name)
    : cur_(text),
      source_(source_name),
      bodies_(cur_, [this](std::string_view key) { return reference(key); }) {}

ReadResult GraphReader::read() {
  ReadResult result;
  try {
    read_document();
  } catch (const JsonSyntaxError& e) {
    const support::Location where = location(e.offset());
    Issue syntax{.type = "json-syntax",
                 .summary = "The input is not valid JSON",
                 .message = fmt::format("{}: {}", support::format_location(where), e.what())};
    syntax.params = {{"line", where.pos.line}, {"column", where.pos.column}};
    syntax.contexts.push_back(IssueContext{.name = "File", .message = source_, .where = where});
    result.issues.push_back(std::move(syntax));
    return result;
  }
  if (!not_a_graph_) {
    resolve_references();
    graph_.rebuild_relations();
    restore_rowless_ipf_ranks();
    resolve_updates();
    result.graph = std::move(graph_);
  }
  result.issues = std::move(issues_);
  return result;
}

// An IPF onto a rank-0 tensor (a scalar broadcast over the index) has no rows, and loom JSON
// writes its matrix as `"projection": []`, which cannot say how many columns it has: the reader
// gives it input rank 0. Every IPF of an operation takes the operation's index, so such maps get
// the rank of the operation's IPFIndex back here (a write/read round trip is then exact).
void GraphReader::restore_rowless_ipf_ranks() {
  for (OperationId op : graph_.operations()) {
    const OperationView view = graph_.operation(op);
    if (!view.has_ipf_index() || view.ipf_signature() == nullptr) continue;
    const std::size_t rank = view.ipf_index()->rank();
    bool changed = false;
    IpfSignature signature = *view.ipf_signature();
    const auto restore = [&](const std::string&, std::uint32_t, zspace::IndexProjection& ipf) {
      if (ipf.map().out_rank() != 0 || ipf.map().in_rank() == rank) return;
      ipf = zspace::IndexProjection(zspace::AffineMap::zero(0, rank), ipf.shape());
      changed = true;
    };
    signature.inputs.for_each_entry(restore);
    signature.outputs.for_each_entry(restore);
    if (changed) graph_.set_ipf_signature(op, std::move(signature));
  }
}

support::Location GraphReader::location(std::size_t offset) const {
  return support::Location{.file = source_, .pos = cur_.location(offset)};
}

void GraphReader::issue(std::string type, Severity severity, std::string summary,
                        std::string message, std::string jsonpath, std::size_t offset) {
  Issue i{.type = std::move(type),
          .severity = severity,
          .summary = std::move(summary),
          .message = std::move(message)};
  const support::Location where = location(offset);
  i.contexts.push_back(IssueContext{.name = "Node",
                                    .message = support::format_location(where),
                                    .jsonpath = std::move(jsonpath),
                                    .where = where});
  issues_.push_back(std::move(i));
}

void GraphReader::not_a_graph(std::string message) {
  not_a_graph_ = true;
  issues_.push_back(Issue{.type = "graph-structure",
                          .summary = "The document is not a loom graph",
                          .message = std::move(message)});
}

// Step 1: the document object.
void GraphReader::read_document() {
  if (cur_.peek() != JsonKind::kObject) {
    not_a_graph("expected a JSON object {\"nodes\": [...]}");
    cur_.skip_value();
    cur_.expect_end();
    return;
  }
  cur_.begin_object();
  bool saw_nodes = false;
  while (auto key = cur_.next_key()) {
    std::size_t at = cur_.offset();
    if (*key == "nodes") {
      if (saw_nodes) throw JsonSyntaxError(at, "duplicate key \"nodes\"");
      saw_nodes = true;
      if (cur_.peek() != JsonKind::kArray) {
        not_a_graph("\"nodes\" must be an array");
        return;
      }
      read_nodes();
    } else if (*key == "updates") {
      read_updates();
    } else if (*key == "id") {
      if (cur_.peek() == JsonKind::kString) {
        graph_.set_graph_key(std::string(cur_.read_string()));
      } else {
        issue("graph-structure", Severity::kError, "The graph id is not a string", {}, "$.id", at);
        cur_.skip_value();
      }
    } else {
      issue("graph-structure", Severity::kWarning, "Unknown graph field ignored",
            fmt::format("field \"{}\"", *key), fmt::format("$.{}", *key), at);
      cur_.skip_value();
    }
  }
  cur_.expect_end();
  if (!saw_nodes) not_a_graph("the object has no \"nodes\" array");
}

// Step 1, the "updates" object: names kept until the nodes are read (step 5).
void GraphReader::read_updates() {
  const std::size_t at = cur_.offset();
  if (cur_.peek() != JsonKind::kObject) {
    issue("state-update", Severity::kError, "The updates are not an object",
          "\"updates\" maps a state input's name to the name of the tensor that updates it: "
          "{\"W1\": \"W1n\"}",
          "$.updates", at);
    cur_.skip_value();
    return;
  }
  cur_.begin_object();
  while (auto key = cur_.next_key()) {
    std::string state(*key);
    const std::size_t value_at = cur_.offset();
    if (cur_.peek() != JsonKind::kString) {
      issue("state-update", Severity::kError, "An update is not a tensor name",
            fmt::format("the update of {} must be a string, the name of a tensor", state),
            fmt::format("$.updates.{}", state), value_at);
      cur_.skip_value();
      continue;
    }
    named_updates_.push_back({std::move(state), std::string(cur_.read_string()), value_at});
  }
}

// Step 5.
void GraphReader::resolve_updates() {
  for (const NamedUpdate& u : named_updates_) {
    const std::string path = fmt::format("$.updates.{}", u.state);
    std::optional<TensorId> ids[2];
    bool ok = true;
    for (int i = 0; i < 2; ++i) {
      const std::string& name = i == 0 ? u.state : u.next;
      const Graph::Named named = graph_.find_named(NodeKind::kTensor, name);
      if (named.node) {
        ids[i] = graph_.as_tensor(*named.node);
        continue;
      }
      ok = false;
      issue("state-update", Severity::kError, "An update names an unknown tensor",
            named.labelled > 1
                ? fmt::format("update {} <- {}: {} names {} tensors (name one by its id)", u.state,
                              u.next, name, named.labelled)
                : fmt::format("update {} <- {}: no tensor is named {}", u.state, u.next, name),
            path, u.offset);
    }
    if (!ok) continue;
    if (std::optional<std::string> problem =
            update_problem(graph_, *ids[0], *ids[1], graph_.updates())) {
      issue("state-update", Severity::kError, "An update does not fit the graph",
            std::move(*problem), path, u.offset);
      continue;
    }
    graph_.add_update({*ids[0], *ids[1]});
  }
}

void GraphReader::read_nodes() {
  // Room for the nodes at 400 bytes of text a node (see prepare_key_index): growing by doubling
  // would copy the tables and fault their pages in twice. Untouched room costs no memory.
  const std::size_t nodes = cur_.size() / 400;
  graph_.nodes_.reserve(nodes);
  graph_.key_chars_.reserve(nodes * 36);
  cur_.begin_array();
  std::size_t index = 0;
  constexpr std::size_t kReleaseStep = std::size_t{64} << 20;
  while (cur_.next_element()) {
    read_node(index++);
    if (release_ && cur_.offset() - released_ >= kReleaseStep) {
      released_ = cur_.offset();
      release_(released_);
    }
  }
}

namespace {

constexpr std::string_view kNodeFields[] = {"id", "type", "label", "body", "tags"};
enum NodeField { kId, kType, kLabel, kBody, kTags };

int node_field(std::string_view key) {
  for (int i = 0; i < 5; ++i) {
    if (key == kNodeFields[i]) return i;
  }
  return -1;
}

std::string index_path(std::size_t index) {
  return fmt::format("$.nodes[{}]", index);
}

}  // namespace

// Step 2: one pass over the node object. In the usual field order (id, type, label, body, tags)
// the body and tags are read where they stand; when "body" comes before "id" or "type" it is
// skipped and re-read from its mark at the end.
void GraphReader::read_node(std::size_t index) {
  NodeFields f;
  JsonKind kind = cur_.peek();  // skips the whitespace before the node
  f.offset = cur_.offset();
  if (kind != JsonKind::kObject) {
    issue("graph-structure", Severity::kError, "A node is not a JSON object",
          fmt::format("got {}", json_kind_name(cur_.peek())), index_path(index), f.offset);
    cur_.skip_value();
    return;
  }
  cur_.begin_object();
  unsigned seen = 0;
  std::string_view expected = kNodeFields[kId];  // the usual order: id, type, (label), body, tags
  while (auto key = cur_.next_key(expected)) {
    int which = node_field(*key);
    expected = which == kId     ? kNodeFields[kType]
               : which < kBody  ? kNodeFields[kBody]
               : which == kBody ? kNodeFields[kTags]
                                : std::string_view();
    std::size_t at = cur_.offset();
    if (which < 0) {
      issue("graph-structure", Severity::kWarning, "Unknown node field ignored",
            fmt::format("field \"{}\"", *key), fmt::format("{}.{}", index_path(index), *key), at);
      cur_.skip_value();
      continue;
    }
    if (seen & (1u << which)) throw JsonSyntaxError(at, fmt::format("duplicate key \"{}\"", *key));
    seen |= 1u << which;
    read_node_field(index, static_cast<NodeField>(which), f);
  }
  if (f.broken) return;
  if (!f.id.is_valid()) {
    JsonCursor::Mark end = cur_.mark();
    finish_deferred_node(index, f);
    cur_.reset(end);
  }
  if (f.id.is_valid() && f.label) graph_.set_label(f.id, std::move(*f.label));
}

void GraphReader::read_node_field(std::size_t index, int which, NodeFields& f) {
  std::size_t at = cur_.offset();
  JsonKind kind = cur_.peek();
  bool want_string = which <= kLabel;
  bool ok = which == kBody || (want_string ? kind == JsonKind::kString : kind == JsonKind::kObject);
  if (!ok) {
    issue(
        "graph-structure", Severity::kError,
        fmt::format("Node field \"{}\" has the wrong type", kNodeFields[which]),
        fmt::format("expected {}, got {}", want_string ? "string" : "object", json_kind_name(kind)),
        fmt::format("{}.{}", f.key ? node_json_path(*f.key) : index_path(index),
                    kNodeFields[which]),
        at);
    cur_.skip_value();
    if (which != kLabel && which != kTags) f.broken = true;
    return;
  }
  switch (which) {
    case kId:
      key_buffer_.assign(cur_.read_string());
      f.key = &key_buffer_;
      if (!Graph::has_generated_shape(key_buffer_)) prepare_key_index(key_buffer_);
      break;
    case kType: {
      // Runs of nodes have the same type: the last known type read is recognised by its text.
      std::string_view type = cur_.read_string(last_type_);
      f.has_type = true;
      if (!last_type_.empty() && type.data() == last_type_.data()) {
        f.kind = last_kind_;
        break;
      }
      f.kind = node_kind_from_type(type);
      if (!f.kind) {
        f.type = std::string(type);
      } else if (cur_.is_in_text(type)) {  // no escapes: the text says it the same way again
        last_type_.assign(type);
        last_kind_ = *f.kind;
      }
      break;
    }
    case kLabel:
      f.label = std::string(cur_.read_string());
      break;
    case kBody:
      if (!f.broken && f.key && f.has_type) {
        create_node(index, f);
      } else {
        f.body = cur_.mark();
        cur_.skip_value();
      }
      break;
    default:
      if (f.id.is_valid()) {
        read_tags(f.id);
      } else {
        f.tags = cur_.mark();
        cur_.skip_value();
      }
  }
}

// The key will go to the key index (Graph::try_add_record) once the body is read: start loading
// its slot now. Nodes take 150 bytes of JSON at the least and 500-800 typically; the first such
// key sizes the index for the rest of the text at 400 bytes a node, sparing the rehashes of a
// growing table. (Keys of the shape Tapestry generates usually count up and go to
// Graph::serial_runs_ instead: they are not prefetched.)
void GraphReader::prepare_key_index(std::string_view key) {
  if (!key_index_sized_) {
    graph_.key_index_.reserve((cur_.size() - cur_.offset()) / 400);
    key_index_sized_ = true;
  }
  graph_.key_index_.prefetch(KeyIndex::hash(key));
}

// The body or tags came before the node could be created: check the required fields, then
// re-read them from their marks.
void GraphReader::finish_deferred_node(std::size_t index, NodeFields& f) {
  for (auto [present, name] : {std::pair{f.key != nullptr, "id"}, std::pair{f.has_type, "type"},
                               std::pair{f.body.has_value(), "body"}}) {
    if (!present) {
      issue("graph-structure", Severity::kError, fmt::format("A node has no \"{}\"", name),
            f.key ? fmt::format("node {}", *f.key) : std::string(),
            f.key ? node_json_path(*f.key) : index_path(index), f.offset);
      return;
    }
  }
  cur_.reset(*f.body);
  create_node(index, f);
  if (f.id.is_valid() && f.tags) {
    cur_.reset(*f.tags);
    read_tags(f.id);
  }
}

// Creates the node from the body at the cursor: typed when the type is known and the body
// matches its schema, else verbatim (Opaque). Sets f.id, or f.broken when the id is unusable.
void GraphReader::create_node(std::size_t index, NodeFields& f) {
  if (f.key->empty()) {
    issue("graph-structure", Severity::kError, "A node has an empty id", {}, index_path(index),
          f.offset);
    cur_.skip_value();
    f.broken = true;
    return;
  }
  JsonCursor::Mark body = cur_.mark();
  std::string problem;
  bool taken = false;
  if (f.kind) {
    try {
      f.id = add_typed_node(*f.kind, *f.key);
      taken = !f.id.is_valid();
    } catch (const SchemaMismatch& m) {
      problem = m.reason;
      cur_.reset(body);
    }
  }
  if (!f.id.is_valid() && !taken) {
    std::string type = f.kind ? std::string(node_type_url(*f.kind)) : std::move(f.type);
    OpaqueBody opaque{
        .type = std::move(type), .body = cur_.read_json(), .problem = std::move(problem)};
    auto slot = static_cast<std::uint32_t>(graph_.opaque_bodies_.size());
    f.id = graph_.try_add_record(NodeKind::kOpaque, slot, *f.key);
    if (f.id.is_valid()) {
      graph_.opaque_bodies_.push_back(std::move(opaque));
      graph_.opaque_ids_.push_back(f.id);
    }
    taken = !f.id.is_valid();
  }
  if (taken) {
    issue("duplicate-node-id", Severity::kError, "Two nodes have the same id",
          fmt::format("id \"{}\" is already used by an earlier node; this one is skipped", *f.key),
          index_path(index), f.offset);
    f.broken = true;
  }
}

namespace {

// Appends a read body to its kind's tables; the invalid id when the key is taken.
template <typename Body, typename Id>
NodeId push_node(Graph& g, NodeKind kind, std::string_view key, std::vector<Body>& bodies,
                 std::vector<Id>& ids, ReadBody<Body>&& read,
                 NodeId (Graph::*add)(NodeKind, std::uint32_t, std::string_view)) {
  NodeId id = (g.*add)(kind, static_cast<std::uint32_t>(bodies.size()), key);
  if (!id.is_valid()) return id;
  bodies.push_back(std::move(read.body));
  ids.emplace_back(id);
  if (!read.extensions.is_null()) g.set_extensions(id, std::move(read.extensions));
  return id;
}

}  // namespace

// Reads the body for `kind` (throwing SchemaMismatch before anything is added) and appends the
// node to the graph's tables directly: references are still provisional, so the checked
// Graph::add_* entry points cannot be used. Returns the invalid id when the key is taken.
NodeId GraphReader::add_typed_node(NodeKind kind, std::string_view key) {
  Graph& g = graph_;
  auto add = &Graph::try_add_record;
  switch (kind) {
    case NodeKind::kTensor:
      return push_node(g, kind, key, g.tensor_bodies_, g.tensor_ids_, bodies_.read_tensor(), add);
    case NodeKind::kOperation:
      return push_node(g, kind, key, g.operation_bodies_, g.operation_ids_,
                       bodies_.read_operation(), add);
    case NodeKind::kApplication:
      if (g.application_bodies_.capacity() == 0) {  // the first: most of what follows is alike
        const std::size_t rest = (cur_.size() - cur_.offset()) / 400 + 1;
        g.application_bodies_.reserve(rest);
        g.application_ids_.reserve(rest);
        g.index_words_.reserve(g.index_words_.size() + rest * 6);  // a 3-D IPFIndex each
      }
      return push_node(g, kind, key, g.application_bodies_, g.application_ids_,
                       bodies_.read_application(), add);
    case NodeKind::kNote:
      return push_node(g, kind, key, g.note_bodies_, g.note_ids_, bodies_.read_note(), add);
    case NodeKind::kOpaque:
      break;
  }
  return NodeId();
}

// Known tags are read typed; a known tag whose value does not match its schema, an IPFSignature
// on a node that is not an Operation, and unknown tags are kept verbatim in other_tags.
void GraphReader::read_tags(NodeId node) {
  BodyReader& bodies = bodies_;
  cur_.begin_object();
  std::string copied;
  // Runs of nodes have the same tags: the last known tag read is recognised by its text.
  while (auto key = cur_.next_key(last_tag_)) {
    // A key without escapes is a view into the text and outlives the reads below; only an
    // escaped key (decoded into the cursor's scratch buffer) needs a copy. The memo of the last
    // tag is not changed before the next key is read.
    std::string_view url = *key;
    const bool memo = !last_tag_.empty() && url.data() == last_tag_.data();
    if (!memo && !cur_.is_in_text(url)) url = copied.assign(url);
    std::size_t at = cur_.offset();
    JsonCursor::Mark value = cur_.mark();
    std::optional<TagKind> tag = memo ? last_tag_kind_ : tag_kind_from_type(url);
    bool typed = false;
    try {
      if (tag == TagKind::kIpfIndex) {
        if (NodeView(graph_, node).has_ipf_index())
          throw JsonSyntaxError(at, "duplicate IPFIndex tag");
        graph_.set_ipf_index(node, bodies.read_range());
        typed = true;
      } else if (tag == TagKind::kIpfSignature && graph_.kind(node) == NodeKind::kOperation) {
        if (NodeView(graph_, node).ipf_signature()) {
          throw JsonSyntaxError(at, "duplicate IPFSignature tag");
        }
        graph_.set_ipf_signature(OperationId(node), bodies.read_ipf_signature());
        typed = true;
      } else if (tag == TagKind::kIoSequencePoint) {
        bodies.read_empty_object();
        graph_.set_io_sequence_point(node, true);
        typed = true;
      }
    } catch (const SchemaMismatch&) {
      cur_.reset(value);
    }
    if (tag && !memo && cur_.is_in_text(url)) {
      last_tag_.assign(url);
      last_tag_kind_ = tag;
    }
    if (!typed) {
      const nlohmann::json& existing = NodeView(graph_, node).other_tags();
      if (existing.is_object() && existing.contains(std::string(url))) {
        throw JsonSyntaxError(at, fmt::format("duplicate key \"{}\"", url));
      }
      graph_.set_other_tag(node, std::string(url), cur_.read_json());
    }
  }
}

}  // namespace tapestry::ir
