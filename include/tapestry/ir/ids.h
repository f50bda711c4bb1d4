// Typed node identities inside one Graph.
//
// Inside the program a node is named by a `NodeId`: a dense index into its Graph's node table,
// cheap to copy, hash and compare, and meaningless outside that Graph. The loom JSON key of a
// node (a UUID-shaped string such as "0308d788-0064-4494-9c18-6e4c3d078b13") is only used at the
// file boundary: `Graph::find(key)` maps it to a NodeId and `Graph::key(id)` back.
//
// `TensorId`, `OperationId`, `ApplicationId` and `NoteId` are NodeIds that are known to name a
// node of that kind. They convert implicitly to NodeId (widening); the other direction is checked
// by the Graph (`graph.as_tensor(node)` returns std::optional<TensorId>):
//
//   TensorId x = g.add_tensor({.dtype = DType::kFloat32, .range = Range::of_shape({4, 8})});
//   NodeId any = x;                              // fine: every tensor is a node
//   std::optional<TensorId> t = g.as_tensor(any);  // checked narrowing
//
// A default-constructed id is invalid (`is_valid() == false`); the reader uses invalid ids for
// references that did not resolve (see Graph::unresolved_references()).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>

namespace tapestry::ir {

/// The closed set of node kinds Tapestry understands. `kOpaque` is a node whose type URL is
/// unknown, or whose body did not match its type's schema: it is kept verbatim (type URL and raw
/// JSON body) so that validation can report it and writing preserves it.
enum class NodeKind : std::uint8_t { kTensor, kOperation, kApplication, kNote, kOpaque };

/// "Tensor", "Operation", "Application", "Note", "Opaque".
std::string_view kind_name(NodeKind kind);

/// Identity of any node of one Graph: a dense index in insertion order.
class NodeId {
 public:
  static constexpr std::uint32_t kInvalidIndex = std::numeric_limits<std::uint32_t>::max();

  /// The invalid id.
  constexpr NodeId() = default;
  constexpr explicit NodeId(std::uint32_t index) : index_(index) {}

  [[nodiscard]] constexpr std::uint32_t index() const { return index_; }
  [[nodiscard]] constexpr bool is_valid() const { return index_ != kInvalidIndex; }

  friend constexpr bool operator==(NodeId, NodeId) = default;
  friend constexpr auto operator<=>(NodeId, NodeId) = default;

 private:
  std::uint32_t index_ = kInvalidIndex;
};

/// A NodeId known to name a node of kind `K`. Only a Graph hands these out (or checks them);
/// constructing one from a NodeId directly is for the Graph's own use and for tests.
template <NodeKind K>
class TypedId {
 public:
  static constexpr NodeKind kKind = K;

  /// The invalid id.
  constexpr TypedId() = default;
  /// Unchecked: `node` must name a node of kind K (Graph::as_* checks).
  constexpr explicit TypedId(NodeId node) : node_(node) {}

  [[nodiscard]] constexpr NodeId node() const { return node_; }
  [[nodiscard]] constexpr std::uint32_t index() const { return node_.index(); }
  [[nodiscard]] constexpr bool is_valid() const { return node_.is_valid(); }
  constexpr operator NodeId() const { return node_; }  // NOLINT: widening is always safe

  friend constexpr bool operator==(TypedId, TypedId) = default;
  friend constexpr auto operator<=>(TypedId, TypedId) = default;

 private:
  NodeId node_;
};

using TensorId = TypedId<NodeKind::kTensor>;
using OperationId = TypedId<NodeKind::kOperation>;
using ApplicationId = TypedId<NodeKind::kApplication>;
using NoteId = TypedId<NodeKind::kNote>;

}  // namespace tapestry::ir

template <>
struct std::hash<tapestry::ir::NodeId> {
  std::size_t operator()(tapestry::ir::NodeId id) const noexcept { return id.index(); }
};

template <tapestry::ir::NodeKind K>
struct std::hash<tapestry::ir::TypedId<K>> {
  std::size_t operator()(tapestry::ir::TypedId<K> id) const noexcept { return id.index(); }
};
