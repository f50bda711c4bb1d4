// Graph: node tables, keys, building and lookup. Relations live in graph_relations.cpp, views
// in graph_views.cpp.
#include "tapestry/ir/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "tapestry/support/assert.h"

namespace tapestry::ir {

// ---- records and keys ------------------------------------------------------------------------

const Graph::NodeRecord& Graph::record(NodeId node) const {
  TAPESTRY_ASSERT(contains(node), "node id does not belong to this graph");
  return nodes_[node.index()];
}

Graph::NodeRecord& Graph::mutable_record(NodeId node) {
  TAPESTRY_ASSERT(contains(node), "node id does not belong to this graph");
  return nodes_[node.index()];
}

std::string_view Graph::key(NodeId node) const {
  const NodeRecord& r = record(node);
  return {key_chars_.data() + r.key_offset, r.key_size};
}

NodeKind Graph::kind(NodeId node) const {
  return record(node).kind;
}

namespace {

// What every generated key has between its two serial parts (see add_generated_record).
constexpr std::string_view kGeneratedKeyMiddle = "-0000-4000-8000-";

// Lower-case hex digit values; -1 for every other byte.
constexpr std::array<std::int8_t, 256> kHexDigit = [] {
  std::array<std::int8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[c] = static_cast<std::int8_t>(c >= '0' && c <= '9'   ? c - '0'
                                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                           : -1);
  }
  return t;
}();

// The serial n of a key of the generated shape (see add_generated_record), else nullopt. Called
// for every key added or looked up, so the digits are decoded without a branch per character.
std::optional<std::uint64_t> generated_serial(std::string_view key) {
  if (key.size() != 36 || key.substr(8, 16) != kGeneratedKeyMiddle) return std::nullopt;
  std::uint64_t high = 0, low = 0;
  int bad = 0;  // the OR of all digit values: negative when one is not a digit
  auto hex = [&](std::size_t from, std::size_t count, std::uint64_t& value) {
    for (std::size_t i = from; i < from + count; ++i) {
      const int v = kHexDigit[static_cast<unsigned char>(key[i])];
      bad |= v;
      value = value << 4 | static_cast<std::uint64_t>(v & 0xf);
    }
  };
  hex(0, 8, high);
  hex(24, 12, low);
  if (bad < 0 || high > 0xffff) return std::nullopt;
  return high << 48 | low;
}

}  // namespace

std::optional<NodeId> Graph::find(std::string_view key) const {
  if (auto serial = generated_serial(key)) {
    if (auto node = find_serial(*serial)) return node;
  }
  auto found = key_index_.find(key, [this](std::uint32_t i) { return this->key(NodeId(i)); });
  if (!found) return std::nullopt;
  return NodeId(*found);
}

Graph::Named Graph::find_named(NodeKind kind, std::string_view name) const {
  Named found;
  const auto look = [&](const auto& ids) {
    for (const NodeId id : ids) {
      if (node(id).label() != name) continue;
      ++found.labelled;
      found.node = id;
    }
  };
  switch (kind) {
    case NodeKind::kTensor:
      look(tensors());
      break;
    case NodeKind::kOperation:
      look(operations());
      break;
    case NodeKind::kApplication:
      look(applications());
      break;
    case NodeKind::kNote:
      look(notes());
      break;
    case NodeKind::kOpaque:
      for (std::uint32_t i = 0; i < size(); ++i) {
        const NodeId id(i);
        if (this->kind(id) == kind && !is_removed(id) && node(id).label() == name) {
          ++found.labelled;
          found.node = id;
        }
      }
      break;
  }
  if (found.labelled > 1) found.node.reset();
  if (found.labelled == 0) {
    const std::optional<NodeId> keyed = find(name);
    if (keyed && this->kind(*keyed) == kind && !is_removed(*keyed)) found.node = keyed;
  }
  return found;
}

std::string Graph::display_name(NodeId node) const {
  return std::string(this->node(node).display_name());
}

std::optional<NodeId> Graph::find_hashed(std::string_view key, std::uint32_t hash) const {
  if (auto serial = generated_serial(key)) {
    if (auto node = find_serial(*serial)) return node;
  }
  auto found =
      key_index_.find_hashed(key, hash, [this](std::uint32_t i) { return this->key(NodeId(i)); });
  if (!found) return std::nullopt;
  return NodeId(*found);
}

bool Graph::is_above_every_serial(std::uint64_t serial) const {
  return serial > max_given_serial_ &&
         (serial_runs_.empty() || serial >= serial_runs_.back().serial + serial_runs_.back().count);
}

bool Graph::has_generated_shape(std::string_view key) {
  return key.size() == 36 && key.substr(8, 16) == kGeneratedKeyMiddle;
}

std::optional<NodeId> Graph::find_serial(std::uint64_t serial) const {
  // The last run starting at or before `serial` (runs are in serial order).
  auto after =
      std::upper_bound(serial_runs_.begin(), serial_runs_.end(), serial,
                       [](std::uint64_t s, const SerialRun& run) { return s < run.serial; });
  if (after == serial_runs_.begin()) return std::nullopt;
  const SerialRun& run = *(after - 1);
  if (serial - run.serial >= run.count) return std::nullopt;
  return NodeId(run.node + static_cast<std::uint32_t>(serial - run.serial));
}

std::vector<NodeId> Graph::node_ids() const {
  std::vector<NodeId> ids;
  ids.reserve(nodes_.size());
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].removed) ids.emplace_back(i);
  }
  return ids;
}

// Generated keys are UUID-shaped (version 4 / variant 1 nibbles in place) and count up, so a
// graph built twice the same way gets the same keys: serial n is
// "{n >> 48 :08x}-0000-4000-8000-{n & 0xffffffffffff :012x}". Written by hand (a million-shard
// lowering makes a million of them). A serial above every key of this shape given explicitly
// cannot be taken, so it skips the key index (a random probe, a cache miss): serial_runs_ finds
// it. A lower serial is probed for, and skipped when taken.
NodeId Graph::add_generated_record(NodeKind kind, std::uint32_t slot) {
  constexpr char kDigits[] = "0123456789abcdef";
  char key[] = "00000000-0000-4000-8000-000000000000";
  for (;;) {
    const std::uint64_t n = next_key_serial_++;
    auto high = static_cast<std::uint32_t>(n >> 48);
    for (int i = 7; i >= 0; --i, high >>= 4) key[i] = kDigits[high & 0xf];
    std::uint64_t low = n & 0xffffffffffffull;
    for (int i = 35; i >= 24; --i, low >>= 4) key[i] = kDigits[low & 0xf];
    const std::string_view text(key, sizeof key - 1);
    if (n <= max_given_serial_) {
      NodeId id = try_add_record(kind, slot, text);
      if (id.is_valid()) return id;
      continue;
    }
    const NodeId id = append_record(kind, slot, text);
    append_serial_run(n, id);
    return id;
  }
}

void Graph::append_serial_run(std::uint64_t serial, NodeId id) {
  if (!serial_runs_.empty()) {
    SerialRun& last = serial_runs_.back();
    if (last.serial + last.count == serial && last.node + last.count == id.index()) {
      ++last.count;
      return;
    }
  }
  serial_runs_.push_back(SerialRun{serial, id.index(), 1});
}

NodeId Graph::append_record(NodeKind kind, std::uint32_t slot, std::string_view key) {
  TAPESTRY_ASSERT(nodes_.size() < NodeId::kInvalidIndex, "too many nodes");
  NodeRecord r;
  r.key_offset = key_chars_.size();
  r.key_size = static_cast<std::uint32_t>(key.size());
  r.kind = kind;
  r.slot = slot;
  key_chars_.append(key);
  nodes_.push_back(r);
  return NodeId(static_cast<std::uint32_t>(nodes_.size() - 1));
}

// A given key of the generated shape whose serial is above every serial seen so far (given or
// generated) cannot be taken either: it joins serial_runs_ like a generated key, so a graph read
// back from a file Tapestry wrote (serials counting up) needs no key index at all.
NodeId Graph::try_add_record(NodeKind kind, std::uint32_t slot, std::string_view key) {
  const std::optional<std::uint64_t> serial = generated_serial(key);
  if (serial && find_serial(*serial)) return NodeId();  // taken by a generated key
  if (serial && is_above_every_serial(*serial)) {
    const NodeId id = append_record(kind, slot, key);
    append_serial_run(*serial, id);
    max_given_serial_ = *serial;
    return id;
  }
  const NodeId id = append_record(kind, slot, key);
  auto existing = key_index_.insert(this->key(id), id.index(),
                                    [this](std::uint32_t i) { return this->key(NodeId(i)); });
  if (existing) {
    nodes_.pop_back();
    key_chars_.resize(key_chars_.size() - key.size());
    return NodeId();
  }
  if (serial) max_given_serial_ = std::max(max_given_serial_, *serial);
  return id;
}

NodeId Graph::add_record(NodeKind kind, std::uint32_t slot, NodeOptions&& options) {
  NodeId id = options.key.empty() ? add_generated_record(kind, slot)
                                  : try_add_record(kind, slot, options.key);
  TAPESTRY_ASSERT(id.is_valid(), "node key already taken in this graph");
  if (!options.label.empty()) extra(id).label = std::move(options.label);
  return id;
}

Graph::NodeExtra& Graph::extra(NodeId node) {
  NodeRecord& r = mutable_record(node);
  if (r.extra_slot == kNone) {
    r.extra_slot = static_cast<std::uint32_t>(extras_.size());
    extras_.emplace_back();
  }
  return extras_[r.extra_slot];
}

const Graph::NodeExtra* Graph::find_extra(NodeId node) const {
  const NodeRecord& r = record(node);
  return r.extra_slot == kNone ? nullptr : &extras_[r.extra_slot];
}

// ---- building --------------------------------------------------------------------------------

TensorId Graph::add_tensor(TensorBody body, NodeOptions options) {
  auto slot = static_cast<std::uint32_t>(tensor_bodies_.size());
  TensorId id(add_record(NodeKind::kTensor, slot, std::move(options)));
  tensor_bodies_.push_back(std::move(body));
  tensor_ids_.push_back(id);
  producers_.emplace_back();
  consumers_.emplace_back();
  return id;
}

OperationId Graph::add_operation(OperationBody body, NodeOptions options) {
  for (const SelectionMap* map : {&body.inputs, &body.outputs}) {
    for (const auto& e : map->entries()) {
      TAPESTRY_ASSERT(contains(e.value.tensor) && kind(e.value.tensor) == NodeKind::kTensor,
                      "operation selection names no tensor of this graph");
    }
  }
  auto slot = static_cast<std::uint32_t>(operation_bodies_.size());
  OperationId id(add_record(NodeKind::kOperation, slot, std::move(options)));
  operation_bodies_.push_back(std::move(body));
  operation_ids_.push_back(id);
  applications_by_op_.emplace_back();
  index_operation(id);
  return id;
}

ApplicationId Graph::add_application(ApplicationBody body, NodeOptions options) {
  TAPESTRY_ASSERT(contains(body.operation) && kind(body.operation) == NodeKind::kOperation,
                  "application names no operation of this graph");
  for (const SelectionMap* map : {&body.inputs, &body.outputs}) {
    map->for_each_raw([&](const SelectionMap::RawEntry& e) {
      TAPESTRY_ASSERT(contains(e.tensor) && kind(e.tensor) == NodeKind::kTensor,
                      "application selection names no tensor of this graph");
      return true;
    });
  }
  auto slot = static_cast<std::uint32_t>(application_bodies_.size());
  ApplicationId id(add_record(NodeKind::kApplication, slot, std::move(options)));
  application_bodies_.push_back(std::move(body));
  application_ids_.push_back(id);
  index_application(id);
  return id;
}

namespace {

// Room for `more` elements: exactly, when the vector is filled once (a single big lowering);
// geometrically, when this is called again and again (many operations, each sharded).
template <typename Vector>
void reserve_more(Vector& v, std::size_t more) {
  const std::size_t need = v.size() + more;
  if (need <= v.capacity()) return;
  v.reserve(std::max(need, v.capacity() + v.capacity() / 2));
}

}  // namespace

void Graph::reserve_applications(OperationId op, std::size_t count) {
  constexpr std::size_t kGeneratedKeySize = 36;
  reserve_more(nodes_, count);
  reserve_more(key_chars_, count * kGeneratedKeySize);
  if (next_key_serial_ <= max_given_serial_) {  // these generated keys go to the key index
    key_index_.reserve(key_index_.size() +
                       std::min<std::uint64_t>(count, max_given_serial_ - next_key_serial_ + 1));
  }
  reserve_more(application_bodies_, count);
  reserve_more(application_ids_, count);
  const NodeRecord& r = record(op);
  reserve_more(index_words_, count * (r.index_at == kNone ? 0 : index_corners(r).size()));
  reserve_more(applications_by_op_[record(op).slot], count);
}

NoteId Graph::add_note(std::string message, NodeOptions options) {
  auto slot = static_cast<std::uint32_t>(note_bodies_.size());
  NoteId id(add_record(NodeKind::kNote, slot, std::move(options)));
  note_bodies_.push_back(NoteBody{std::move(message)});
  note_ids_.push_back(id);
  return id;
}

NodeId Graph::add_opaque(OpaqueBody body, NodeOptions options) {
  auto slot = static_cast<std::uint32_t>(opaque_bodies_.size());
  NodeId id = add_record(NodeKind::kOpaque, slot, std::move(options));
  opaque_bodies_.push_back(std::move(body));
  opaque_ids_.push_back(id);
  return id;
}

namespace {

// Erases `id` from `list`, keeping the order of the rest (lists are short, or erased rarely).
template <typename Id>
void erase_id(std::vector<Id>& list, Id id) {
  auto at = std::find(list.begin(), list.end(), id);
  if (at != list.end()) list.erase(at);
}

}  // namespace

// Operations first, so that a tensor removed with its producer and consumers is free of them.
void Graph::remove(std::span<const NodeId> nodes) {
  for (NodeId node : nodes) {
    NodeRecord& r = mutable_record(node);
    if (r.removed || r.kind != NodeKind::kOperation) continue;
    const OperationId op(node);
    TAPESTRY_ASSERT(applications_by_op_[r.slot].empty(), "remove: the operation has Applications");
    const OperationBody& body = operation_bodies_[r.slot];
    for (const auto& e : body.inputs.entries()) {
      if (e.value.tensor.is_valid()) erase_id(consumers_[record(e.value.tensor).slot], op);
    }
    for (const auto& e : body.outputs.entries()) {
      if (e.value.tensor.is_valid()) erase_id(producers_[record(e.value.tensor).slot], op);
    }
    erase_id(operation_ids_, op);
    r.removed = true;
  }
  for (NodeId node : nodes) {
    NodeRecord& r = mutable_record(node);
    if (r.removed) continue;
    TAPESTRY_ASSERT(r.kind == NodeKind::kTensor, "remove: only Operations and Tensors");
    TAPESTRY_ASSERT(producers_[r.slot].empty() && consumers_[r.slot].empty(),
                    "remove: the tensor is still produced or consumed");
    erase_id(tensor_ids_, TensorId(node));
    r.removed = true;
  }
}

// ---- state updates ---------------------------------------------------------------------------

void Graph::add_update(StateUpdate update) {
  TAPESTRY_ASSERT(as_tensor(update.state) && as_tensor(update.next),
                  "a state update names a tensor of this graph");
  updates_.push_back(update);
}

void Graph::set_updates(std::vector<StateUpdate> updates) {
  updates_.clear();
  for (const StateUpdate& u : updates) add_update(u);
}

// ---- tags and labels -------------------------------------------------------------------------

void Graph::set_label(NodeId node, std::string label) {
  TAPESTRY_ASSERT(contains(node), "node id does not belong to this graph");
  if (label.empty() && find_extra(node) == nullptr) return;
  extra(node).label = std::move(label);
}

void Graph::set_ipf_index(NodeId node, const zspace::Range& index) {
  NodeRecord& r = mutable_record(node);
  const std::size_t rank = index.rank();
  if (r.index_at == kNone || index_corners(r).size() != 2 * rank) {
    const bool rank_in_words = rank >= kRankInWords;
    TAPESTRY_ASSERT(index_words_.size() + rank_in_words + 2 * rank < kNone,
                    "too many IPFIndex words for one graph");
    if (rank_in_words) index_words_.push_back(static_cast<std::int64_t>(rank));
    r.index_at = static_cast<std::uint32_t>(index_words_.size());
    r.index_rank = rank_in_words ? kRankInWords : static_cast<std::uint16_t>(rank);
    index_words_.resize(index_words_.size() + 2 * rank);
  }
  std::int64_t* at = index_words_.data() + r.index_at;
  std::copy(index.start().begin(), index.start().end(), at);
  std::copy(index.end().begin(), index.end().end(), at + rank);
}

std::span<const std::int64_t> Graph::index_corners(const NodeRecord& r) const {
  const std::int64_t* at = index_words_.data() + r.index_at;
  const std::size_t rank =
      r.index_rank == kRankInWords ? static_cast<std::size_t>(at[-1]) : r.index_rank;
  return {at, 2 * rank};
}

void Graph::set_ipf_signature(OperationId op, IpfSignature signature) {
  NodeRecord& r = mutable_record(op);
  if (r.signature_slot == kNone) {
    r.signature_slot = static_cast<std::uint32_t>(signatures_.size());
    signatures_.push_back(std::move(signature));
  } else {
    signatures_[r.signature_slot] = std::move(signature);
  }
}

void Graph::set_io_sequence_point(NodeId node, bool on) {
  mutable_record(node).io_sequence_point = on;
}

void Graph::set_other_tag(NodeId node, std::string url, nlohmann::json value) {
  TAPESTRY_ASSERT(contains(node), "node id does not belong to this graph");
  nlohmann::json& tags = extra(node).other_tags;
  if (value.is_null()) {
    if (tags.is_object()) tags.erase(url);
    if (tags.is_object() && tags.empty()) tags = nullptr;
    return;
  }
  tags[url] = std::move(value);
}

void Graph::set_extensions(NodeId node, nlohmann::json extensions) {
  TAPESTRY_ASSERT(contains(node), "node id does not belong to this graph");
  TAPESTRY_ASSERT(extensions.is_null() || extensions.is_object(), "extensions must be an object");
  if (extensions.is_object() && extensions.empty()) extensions = nullptr;
  if (extensions.is_null() && find_extra(node) == nullptr) return;
  extra(node).extensions = std::move(extensions);
}

// ---- checked narrowing -----------------------------------------------------------------------

std::optional<TensorId> Graph::as_tensor(NodeId node) const {
  if (!contains(node) || kind(node) != NodeKind::kTensor) return std::nullopt;
  return TensorId(node);
}

std::optional<OperationId> Graph::as_operation(NodeId node) const {
  if (!contains(node) || kind(node) != NodeKind::kOperation) return std::nullopt;
  return OperationId(node);
}

std::optional<ApplicationId> Graph::as_application(NodeId node) const {
  if (!contains(node) || kind(node) != NodeKind::kApplication) return std::nullopt;
  return ApplicationId(node);
}

std::optional<NoteId> Graph::as_note(NodeId node) const {
  if (!contains(node) || kind(node) != NodeKind::kNote) return std::nullopt;
  return NoteId(node);
}

const OpaqueBody& Graph::opaque(NodeId node) const {
  const NodeRecord& r = record(node);
  TAPESTRY_ASSERT(r.kind == NodeKind::kOpaque, "not an opaque node");
  return opaque_bodies_[r.slot];
}

}  // namespace tapestry::ir
