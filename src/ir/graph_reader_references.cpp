// GraphReader, steps 3 and 4 (graph_reader.h): references met while reading, and their
// resolution once every node is known.
#include <fmt/format.h>

#include "graph_reader.h"

namespace tapestry::ir {

// Step 3: a key defined earlier resolves now; others get a pending id.
// Shards of one operation name the same few keys over and over: a small direct-mapped cache
// of recent hits saves most hash-table probes (and their cache misses).
NodeId GraphReader::reference(std::string_view key) {
  std::uint32_t h = KeyIndex::hash(key);
  RecentRef& recent = recent_refs_[h % recent_refs_.size()];
  if (recent.hash == h) {
    const std::string_view known = graph_.key(recent.id);
    if (known.size() == key.size() && JsonCursor::equal_bytes(known.data(), key.data(), key.size()))
      return recent.id;
  }
  if (std::optional<NodeId> found = graph_.find_hashed(key, h)) {
    recent = RecentRef{h, *found};
    return *found;
  }
  auto key_of = [this](std::uint32_t i) {
    return std::string_view(pending_chars_).substr(pending_keys_[i].first, pending_keys_[i].second);
  };
  auto next = static_cast<std::uint32_t>(pending_keys_.size());
  pending_keys_.emplace_back(pending_chars_.size(), static_cast<std::uint32_t>(key.size()));
  pending_chars_.append(key);
  if (auto existing = pending_index_.insert(key, next, key_of)) {
    pending_keys_.pop_back();
    pending_chars_.resize(pending_chars_.size() - key.size());
    return NodeId(kPendingBit | *existing);
  }
  return NodeId(kPendingBit | next);
}

// Step 4.
void GraphReader::resolve_references() {
  std::vector<NodeId> pending_target(pending_keys_.size());
  for (std::size_t i = 0; i < pending_keys_.size(); ++i) {
    auto [offset, size] = pending_keys_[i];
    if (auto id = graph_.find(std::string_view(pending_chars_).substr(offset, size))) {
      pending_target[i] = *id;
    }
  }
  auto resolve = [&](NodeId from, NodeId ref, NodeKind expected, std::string path) -> NodeId {
    NodeId target = ref;
    std::string key;
    if (ref.index() & kPendingBit) {
      std::uint32_t p = ref.index() & ~kPendingBit;
      target = pending_target[p];
      key = pending_chars_.substr(pending_keys_[p].first, pending_keys_[p].second);
    }
    if (target.is_valid() && graph_.kind(target) == expected) return target;
    if (target.is_valid()) key = std::string(graph_.key(target));
    graph_.unresolved_.push_back(
        UnresolvedReference{from, std::move(path), std::move(key), expected});
    return NodeId();
  };
  auto resolve_map = [&](NodeId from, const char* name, SelectionMap& map) {
    map.for_each_tensor([&](const std::string& port, std::uint32_t pos, TensorId& tensor) {
      if (!(tensor.index() & kPendingBit) && tensor.is_valid() &&
          graph_.kind(tensor) == NodeKind::kTensor) {
        return;  // the common case: resolved when read
      }
      tensor = TensorId(resolve(from, tensor, NodeKind::kTensor,
                                fmt::format(".{}.{}[{}].tensorId", name, port, pos)));
    });
  };
  for (std::size_t i = 0; i < graph_.operation_bodies_.size(); ++i) {
    NodeId from = graph_.operation_ids_[i];
    resolve_map(from, "inputs", graph_.operation_bodies_[i].inputs);
    resolve_map(from, "outputs", graph_.operation_bodies_[i].outputs);
  }
  for (std::size_t i = 0; i < graph_.application_bodies_.size(); ++i) {
    NodeId from = graph_.application_ids_[i];
    ApplicationBody& body = graph_.application_bodies_[i];
    if ((body.operation.index() & kPendingBit) || !body.operation.is_valid() ||
        graph_.kind(body.operation) != NodeKind::kOperation) {
      body.operation =
          OperationId(resolve(from, body.operation, NodeKind::kOperation, ".operationId"));
    }
    resolve_map(from, "inputs", body.inputs);
    resolve_map(from, "outputs", body.outputs);
  }
}

}  // namespace tapestry::ir
