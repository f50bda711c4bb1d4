// GraphReader: loom JSON text → Graph + reading issues (private to module ir; the public entry
// points are in json_io.h, whose file comment states the rules).
//
// Steps:
//   1. Walk the document object; "nodes" must be an array, "id" a string.
//   2. For each node object collect id, type, label, and the marks of body and tags (fields may
//      come in any order), then read the body with BodyReader for its kind. A SchemaMismatch
//      rewinds to the body mark and keeps the body verbatim as an Opaque node.
//   3. References are interned as they are met: a key already defined resolves at once; any
//      other gets a provisional "pending" id (high bit set) fixed up in step 4.
//   4. After the last node: resolve pending ids, check the kind of every reference, record the
//      unresolved ones, and build the graph's relation indexes.
//   5. The graph-level "updates" ({"W1": "W1n"}, state_update.h): names resolved to tensors by
//      display name, each pair checked by update_problem; a problem is an error at $.updates.W1.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "body_reader.h"
#include "json_cursor.h"
#include "tapestry/ir/graph.h"
#include "tapestry/ir/issue.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/ir/key_index.h"

namespace tapestry::ir {

class GraphReader {
 public:
  GraphReader(std::string_view text, std::string_view source_name);
  ReadResult read();
  /// Called now and then with an offset before which the text is no longer needed.
  void set_release_hook(std::function<void(std::size_t)> hook) { release_ = std::move(hook); }

 private:
  struct NodeFields;

  void read_document();
  void read_nodes();
  void read_node(std::size_t index);
  void read_node_field(std::size_t index, int which, NodeFields& fields);
  void finish_deferred_node(std::size_t index, NodeFields& fields);
  void create_node(std::size_t index, NodeFields& fields);
  NodeId add_typed_node(NodeKind kind, std::string_view key);
  void read_tags(NodeId node);
  void prepare_key_index(std::string_view key);
  NodeId reference(std::string_view key);
  void resolve_references();
  void restore_rowless_ipf_ranks();
  void read_updates();
  void resolve_updates();
  void not_a_graph(std::string message);

  void issue(std::string type, Severity severity, std::string summary, std::string message,
             std::string jsonpath, std::size_t offset);
  /// The file and the line and column of byte `offset`.
  [[nodiscard]] support::Location location(std::size_t offset) const;

  JsonCursor cur_;
  std::string source_;
  BodyReader bodies_;
  std::function<void(std::size_t)> release_;
  std::size_t released_ = 0;
  Graph graph_;
  std::vector<Issue> issues_;
  bool not_a_graph_ = false;
  std::string key_buffer_;  // the current node's id
  // The graph-level "updates" object ({state name: next name}), resolved after the nodes.
  struct NamedUpdate {
    std::string state;
    std::string next;
    std::size_t offset = 0;  // of the value
  };
  std::vector<NamedUpdate> named_updates_;
  bool key_index_sized_ = false;
  // The last known node type and tag read without escapes (see JsonCursor::read_string and
  // next_key with an expected text): most nodes repeat the ones before.
  std::string last_type_;
  NodeKind last_kind_ = NodeKind::kOpaque;
  std::string last_tag_;
  std::optional<TagKind> last_tag_kind_;

  struct RecentRef {
    std::uint32_t hash = 0;
    NodeId id;
  };
  std::array<RecentRef, 64> recent_refs_{};

  // Keys referenced before the node defining them was read.
  static constexpr std::uint32_t kPendingBit = 0x80000000u;
  std::string pending_chars_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> pending_keys_;  // (offset, size)
  KeyIndex pending_index_;
};

}  // namespace tapestry::ir
