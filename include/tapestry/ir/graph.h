// Graph: Tapestry's IR — a flat set of typed loom nodes, with fast lookup and relations.
//
// A graph holds Tensor, Operation, Application and Note nodes (and Opaque ones: unknown or
// malformed nodes kept verbatim). Each node has a typed id (ids.h), a UUID-shaped string key
// (its loom "id"), an optional label, a body (nodes.h) and tags. The graph is built through
// `add_*` and `set_*` calls, or read from loom JSON (json_io.h); validation against a dialect
// lives in dialect.h.
//
// Building the running example, Z = add(X, Y) with an identity IPF over a [10, 5] index:
//
//   Graph g;
//   auto box = zspace::Range::of_shape({10, 5});
//   TensorId x = g.add_tensor({.dtype = DType::kFloat32, .range = box}, {.label = "X"});
//   TensorId y = g.add_tensor({.dtype = DType::kFloat32, .range = box}, {.label = "Y"});
//   TensorId z = g.add_tensor({.dtype = DType::kFloat32, .range = box}, {.label = "Z"});
//   OperationBody add{.kernel = "add"};
//   add.inputs.append("tensors", {x, box});
//   add.inputs.append("tensors", {y, box});
//   add.outputs.append("result", {z, box});
//   OperationId op = g.add_operation(std::move(add), {.label = "add"});
//   IpfSignature sig;
//   sig.inputs.append("tensors", IndexProjection::identity(2));   // … one per selection
//   g.set_ipf_index(op, box);
//   g.set_ipf_signature(op, std::move(sig));
//
//   g.operation(op).kernel() == "add";   g.producers(z) == {op};   g.consumers(x) == {op}
//
// Keys: `add_*` generates a deterministic UUID-shaped key from a counter
// ("00000000-0000-4000-8000-000000000001", …, skipping keys already taken) unless
// NodeOptions::key is given, so generated graphs are reproducible and diff well.
//
// Lifetime: views (TensorView, …) hold the graph pointer and an id and stay usable while the
// graph lives; references and spans they return point into the graph's tables and are
// invalidated by the next mutation. A const Graph is safe to read from several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/ids.h"
#include "tapestry/ir/key_index.h"
#include "tapestry/ir/nodes.h"
#include "tapestry/ir/type_names.h"

namespace tapestry::ir {

class Graph;
class GraphReader;

/// A reference in a node body that does not name a node of the expected kind (only graphs read
/// from JSON have these; the `node-reference` constraint reports them).
struct UnresolvedReference {
  NodeId from;            // the node whose body holds the reference
  std::string json_path;  // relative to the node's body, e.g. ".inputs.x[0].tensorId"
  std::string key;        // the key as written
  NodeKind expected = NodeKind::kTensor;
};

/// Read-only view of any node. Cheap to copy.
class NodeView {
 public:
  NodeView(const Graph& graph, NodeId id) : graph_(&graph), id_(id) {}

  [[nodiscard]] NodeId id() const { return id_; }
  [[nodiscard]] NodeKind kind() const;
  /// The loom "id" string.
  [[nodiscard]] std::string_view key() const;
  /// Empty when the node has no label.
  [[nodiscard]] const std::string& label() const;
  /// The name users see: the label, else the key (`Y/linear`, `H`, or a loom id). Messages,
  /// plans, reports and renderings name nodes this one way. A view into the graph (valid while
  /// it lives and the node is not relabelled); Graph::display_name copies.
  [[nodiscard]] std::string_view display_name() const;
  /// The type URL as it is written (full URL; the original string for opaque nodes).
  [[nodiscard]] std::string_view type() const;
  /// Body fields not defined by the node type's schema (an object), or null. Kept so that
  /// extensions survive a read/write round trip.
  [[nodiscard]] const nlohmann::json& extensions() const;

  /// The IPFIndex tag, if present. A value: the graph keeps index boxes packed (2·rank words
  /// each, not a 128-byte Range), so bind it to a value, not a reference —
  /// `std::optional<zspace::Range> index = view.ipf_index();`.
  [[nodiscard]] std::optional<zspace::Range> ipf_index() const;
  /// True when the node carries an IPFIndex tag (without building the Range).
  [[nodiscard]] bool has_ipf_index() const;
  /// The IPFIndex seen without building a Range: spans of its corners, pointing into the graph
  /// (for loops over a million applications); nullopt when there is none.
  struct IndexCorners {
    std::span<const std::int64_t> start;
    std::span<const std::int64_t> end;
  };
  [[nodiscard]] std::optional<IndexCorners> ipf_index_corners() const;
  /// The IPFSignature tag, if present.
  [[nodiscard]] const IpfSignature* ipf_signature() const;
  /// True when the node carries the (empty) IOSequencePoint tag.
  [[nodiscard]] bool has_io_sequence_point() const;
  /// Tags of unknown types, or known tags whose value did not match their schema: an object
  /// {url: value}, or null when there are none.
  [[nodiscard]] const nlohmann::json& other_tags() const;

  [[nodiscard]] const Graph& graph() const { return *graph_; }

 protected:
  const Graph* graph_;
  NodeId id_;
};

class TensorView : public NodeView {
 public:
  TensorView(const Graph& graph, TensorId id) : NodeView(graph, id) {}
  [[nodiscard]] TensorId tensor_id() const { return TensorId(id_); }
  [[nodiscard]] const TensorBody& body() const;
  [[nodiscard]] const LoomDType& dtype() const { return body().dtype; }
  [[nodiscard]] const zspace::Range& range() const { return body().range; }
};

class OperationView : public NodeView {
 public:
  OperationView(const Graph& graph, OperationId id) : NodeView(graph, id) {}
  [[nodiscard]] OperationId operation_id() const { return OperationId(id_); }
  [[nodiscard]] const OperationBody& body() const;
  [[nodiscard]] const std::string& kernel() const { return body().kernel; }
  [[nodiscard]] const nlohmann::json& params() const { return body().params; }
  [[nodiscard]] const SelectionMap& inputs() const { return body().inputs; }
  [[nodiscard]] const SelectionMap& outputs() const { return body().outputs; }

  /// Rank of the index space: the IPFIndex rank, else the number of index names, else 0.
  [[nodiscard]] std::size_t index_rank() const;
  /// The name of index dim `dim` (explicit, or "d<dim>").
  [[nodiscard]] std::string index_name(std::size_t dim) const;
  /// All index names (explicit, or d0 … d<rank-1>).
  [[nodiscard]] std::vector<std::string> index_names() const;
  /// The dim called `name`, if any.
  [[nodiscard]] std::optional<std::size_t> index_dim(std::string_view name) const;
  /// The monoid when dim `dim` is a reduction dim, else nullopt.
  [[nodiscard]] std::optional<Monoid> reduction(std::size_t dim) const;
  /// Applications of this operation, in graph order.
  [[nodiscard]] std::span<const ApplicationId> applications() const;
};

class ApplicationView : public NodeView {
 public:
  ApplicationView(const Graph& graph, ApplicationId id) : NodeView(graph, id) {}
  [[nodiscard]] ApplicationId application_id() const { return ApplicationId(id_); }
  [[nodiscard]] const ApplicationBody& body() const;
  [[nodiscard]] OperationId operation() const { return body().operation; }
  [[nodiscard]] const SelectionMap& inputs() const { return body().inputs; }
  [[nodiscard]] const SelectionMap& outputs() const { return body().outputs; }
};

class NoteView : public NodeView {
 public:
  NoteView(const Graph& graph, NoteId id) : NodeView(graph, id) {}
  [[nodiscard]] const std::string& message() const;
};

/// A training state update (docs/training.md, "The training loop"): after a step, the value of
/// tensor `next` becomes the value of graph input `state` for the next step. The graph keeps a
/// list of them (loom JSON: the graph-level `"updates": {"W1": "W1n"}`; .tap: `update W1 <- W1n`);
/// state_update.h checks that one makes sense.
struct StateUpdate {
  TensorId state;
  TensorId next;

  friend bool operator==(const StateUpdate&, const StateUpdate&) = default;
};

/// The result of a topological sort of tensors and operations.
struct TopologicalOrder {
  /// Tensors and operations, producers before consumers; ties in graph order. Complete only when
  /// `cycle` is empty.
  std::vector<NodeId> order;
  /// When the tensor/operation graph has a cycle: its nodes in edge order (t → op → t' → …).
  std::vector<NodeId> cycle;
};

class Graph {
 public:
  Graph() = default;

  // ---- the graph itself --------------------------------------------------------------------
  /// The loom graph "id" (optional).
  [[nodiscard]] const std::string& graph_key() const { return graph_key_; }
  void set_graph_key(std::string key) { graph_key_ = std::move(key); }
  /// The state updates, in the order they were declared (empty for a graph that trains nothing).
  [[nodiscard]] std::span<const StateUpdate> updates() const { return updates_; }
  /// Appends one; both must be tensors of this graph (asserted; state_update.h checks the rest).
  void add_update(StateUpdate update);
  /// Replaces the list.
  void set_updates(std::vector<StateUpdate> updates);
  /// Number of nodes of every kind.
  [[nodiscard]] std::size_t size() const { return nodes_.size(); }
  /// All node ids, in graph (insertion / file) order; removed nodes are not listed.
  [[nodiscard]] std::vector<NodeId> node_ids() const;

  // ---- building ----------------------------------------------------------------------------
  /// Adds a Tensor. Asserts that a given key is not taken.
  TensorId add_tensor(TensorBody body, NodeOptions options = {});
  /// Adds an Operation; every selection must name a tensor of this graph (asserted).
  OperationId add_operation(OperationBody body, NodeOptions options = {});
  /// Adds an Application of an operation of this graph (asserted, as are its tensors).
  ApplicationId add_application(ApplicationBody body, NodeOptions options = {});
  /// Makes room for `count` more Applications of `op`, each with an IPFIndex tag and a generated
  /// key, so that adding them neither moves the tables nor leaves their growth slack (a
  /// million-shard lowering; see docs/rewrites.md, "Lowering speed").
  void reserve_applications(OperationId op, std::size_t count);
  NoteId add_note(std::string message, NodeOptions options = {});
  /// Adds a node kept verbatim (unknown type, or a body that does not match its schema).
  NodeId add_opaque(OpaqueBody body, NodeOptions options = {});

  /// Removes Operations and Tensors from the graph in place: each leaves the lists of its kind and
  /// every relation (an operation stops producing and consuming its tensors), but keeps its id,
  /// key and body, which stay readable — ids are dense indexes, so `size()` does not shrink and
  /// no other id moves. How rewrites replace operations without copying the graph (the rewrite
  /// driver copies it once at the end, leaving removed nodes out). A removed tensor must have no
  /// producer or consumer left; an operation must have no Application (both asserted).
  void remove(std::span<const NodeId> nodes);
  /// True for a node remove() took out.
  [[nodiscard]] bool is_removed(NodeId node) const { return record(node).removed; }

  void set_label(NodeId node, std::string label);
  /// Sets (replaces) the IPFIndex tag of an Operation or Application.
  void set_ipf_index(NodeId node, const zspace::Range& index);
  /// Sets (replaces) the IPFSignature tag of an Operation.
  void set_ipf_signature(OperationId op, IpfSignature signature);
  /// Sets or clears the IOSequencePoint tag.
  void set_io_sequence_point(NodeId node, bool on);
  /// Sets the raw value of a tag Tapestry does not interpret ({url: value}; null value erases).
  void set_other_tag(NodeId node, std::string url, nlohmann::json value);
  /// Replaces the extension (unknown) fields of a node body; must be an object or null.
  void set_extensions(NodeId node, nlohmann::json extensions);

  // ---- lookup ------------------------------------------------------------------------------
  /// The node whose key (loom "id") is `key`.
  [[nodiscard]] std::optional<NodeId> find(std::string_view key) const;
  /// A node of `kind` by the name users give it (display_name): the one labelled `name`, else
  /// the one keyed `name`. `labelled` counts the nodes of `kind` labelled `name`; when it is
  /// above 1 the name is ambiguous and `node` is empty (name one by its key).
  ///
  ///   graph.find_named(NodeKind::kTensor, "H").node    // the tensor labelled H
  struct Named {
    std::optional<NodeId> node;
    std::size_t labelled = 0;
  };
  [[nodiscard]] Named find_named(NodeKind kind, std::string_view name) const;
  /// NodeView::display_name of `node`, copied.
  [[nodiscard]] std::string display_name(NodeId node) const;
  [[nodiscard]] std::string_view key(NodeId node) const;
  [[nodiscard]] NodeKind kind(NodeId node) const;
  [[nodiscard]] bool contains(NodeId node) const { return node.index() < nodes_.size(); }

  [[nodiscard]] NodeView node(NodeId id) const { return {*this, id}; }
  [[nodiscard]] TensorView tensor(TensorId id) const { return {*this, id}; }
  [[nodiscard]] OperationView operation(OperationId id) const { return {*this, id}; }
  [[nodiscard]] ApplicationView application(ApplicationId id) const { return {*this, id}; }
  [[nodiscard]] NoteView note(NoteId id) const { return {*this, id}; }

  /// Checked narrowing: the typed id when `node` has that kind.
  [[nodiscard]] std::optional<TensorId> as_tensor(NodeId node) const;
  [[nodiscard]] std::optional<OperationId> as_operation(NodeId node) const;
  [[nodiscard]] std::optional<ApplicationId> as_application(NodeId node) const;
  [[nodiscard]] std::optional<NoteId> as_note(NodeId node) const;

  /// Ids of each kind, in graph order.
  [[nodiscard]] std::span<const TensorId> tensors() const { return tensor_ids_; }
  [[nodiscard]] std::span<const OperationId> operations() const { return operation_ids_; }
  [[nodiscard]] std::span<const ApplicationId> applications() const { return application_ids_; }
  [[nodiscard]] std::span<const NoteId> notes() const { return note_ids_; }
  [[nodiscard]] std::span<const NodeId> opaque_nodes() const { return opaque_ids_; }
  [[nodiscard]] const OpaqueBody& opaque(NodeId node) const;

  // ---- relations ---------------------------------------------------------------------------
  /// Operations that list `tensor` among their outputs (a valid graph has at most one).
  [[nodiscard]] std::span<const OperationId> producers(TensorId tensor) const;
  /// Operations that list `tensor` among their inputs, each once, in graph order.
  [[nodiscard]] std::span<const OperationId> consumers(TensorId tensor) const;
  /// Applications whose operationId is `op`, in graph order.
  [[nodiscard]] std::span<const ApplicationId> applications_of(OperationId op) const;
  /// Tensors and operations in dependency order, or a cycle (see TopologicalOrder). An
  /// operation's ordering edges (ordering.h: the tensors it starts after) count as reads.
  [[nodiscard]] TopologicalOrder topological_order() const;

  /// References in bodies that did not resolve when the graph was read.
  [[nodiscard]] std::span<const UnresolvedReference> unresolved_references() const {
    return unresolved_;
  }

 private:
  friend class NodeView;
  friend class TensorView;
  friend class OperationView;
  friend class ApplicationView;
  friend class NoteView;
  friend class GraphReader;

  struct NodeRecord {
    std::uint64_t key_offset = 0;  // into key_chars_
    std::uint32_t key_size = 0;
    NodeKind kind = NodeKind::kOpaque;
    bool io_sequence_point = false;
    bool removed = false;                  // see remove()
    std::uint16_t index_rank = 0;          // of the IPFIndex; kRankInWords: see index_words_
    std::uint32_t slot = 0;                // index into the table of its kind
    std::uint32_t index_at = kNone;        // word offset of the IPFIndex in index_words_
    std::uint32_t signature_slot = kNone;  // into signatures_
    std::uint32_t extra_slot = kNone;      // into extras_ (label, extensions, other tags)
  };
  struct NodeExtra {
    std::string label;
    nlohmann::json extensions;
    nlohmann::json other_tags;
  };
  static constexpr std::uint32_t kNone = 0xffffffffu;
  static constexpr std::uint16_t kRankInWords = 0xffffu;

  NodeId add_record(NodeKind kind, std::uint32_t slot, NodeOptions&& options);
  /// Adds a record for a new node; the invalid id (and no change) when `key` is taken.
  NodeId try_add_record(NodeKind kind, std::uint32_t slot, std::string_view key);
  /// Adds a record with the next generated key that is free.
  NodeId add_generated_record(NodeKind kind, std::uint32_t slot);
  /// Appends a record and its key, indexing nothing.
  NodeId append_record(NodeKind kind, std::uint32_t slot, std::string_view key);
  /// find() with the key's KeyIndex::hash already computed (the reader's lookups).
  std::optional<NodeId> find_hashed(std::string_view key, std::uint32_t hash) const;
  /// True when `serial` is above every serial of a key in the graph, given or generated.
  bool is_above_every_serial(std::uint64_t serial) const;
  /// True when `key` has the shape of a generated key, "xxxxxxxx-0000-4000-8000-xxxxxxxxxxxx".
  static bool has_generated_shape(std::string_view key);
  /// Records that node `id` has the key of serial `serial`, above every serial in serial_runs_.
  void append_serial_run(std::uint64_t serial, NodeId id);
  /// The node whose generated key has serial `serial`, if it is in serial_runs_.
  std::optional<NodeId> find_serial(std::uint64_t serial) const;
  NodeExtra& extra(NodeId node);
  const NodeExtra* find_extra(NodeId node) const;
  const NodeRecord& record(NodeId node) const;
  NodeRecord& mutable_record(NodeId node);
  /// The IPFIndex corners of a node that has one: start, then end.
  std::span<const std::int64_t> index_corners(const NodeRecord& r) const;
  void index_operation(OperationId op);
  void index_application(ApplicationId app);
  void rebuild_relations();

  std::string graph_key_;
  std::vector<StateUpdate> updates_;
  std::vector<NodeRecord> nodes_;
  std::string key_chars_;
  // Keys are found through key_index_, except keys of the generated shape whose serial was above
  // every serial seen when they were added (generated ones, see add_generated_record, and given
  // ones, see try_add_record): consecutive serials on consecutive nodes, one SerialRun each.
  struct SerialRun {
    std::uint64_t serial;  // of the first node
    std::uint32_t node;    // the first node's index
    std::uint32_t count;
  };
  KeyIndex key_index_;
  std::vector<SerialRun> serial_runs_;
  // Largest serial of a given key of the generated shape (in key_index_ or serial_runs_).
  std::uint64_t max_given_serial_ = 0;
  std::uint64_t next_key_serial_ = 1;

  std::vector<TensorBody> tensor_bodies_;
  std::vector<OperationBody> operation_bodies_;
  std::vector<ApplicationBody> application_bodies_;
  std::vector<NoteBody> note_bodies_;
  std::vector<OpaqueBody> opaque_bodies_;
  std::vector<TensorId> tensor_ids_;
  std::vector<OperationId> operation_ids_;
  std::vector<ApplicationId> application_ids_;
  std::vector<NoteId> note_ids_;
  std::vector<NodeId> opaque_ids_;

  // IPFIndex boxes, packed: at a record's index_at, its start then its end coordinates. A rank
  // that does not fit the record's 16 bits (kRankInWords) is stored in the word before them.
  // Replacing a box by one of another rank appends it (the old words stay unused).
  std::vector<std::int64_t> index_words_;
  std::vector<IpfSignature> signatures_;
  std::vector<NodeExtra> extras_;

  std::vector<std::vector<OperationId>> producers_;             // by tensor slot
  std::vector<std::vector<OperationId>> consumers_;             // by tensor slot
  std::vector<std::vector<ApplicationId>> applications_by_op_;  // by operation slot
  std::vector<UnresolvedReference> unresolved_;
};

}  // namespace tapestry::ir
