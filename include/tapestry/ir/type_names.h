// Loom node and tag type names: the full URLs Tapestry writes and the short aliases it accepts.
//
// A loom node's "type" names its schema by URL; tags are keyed by the URL of their type:
//
//   "type": "http://tensortapestry.org/schemas/loom/2024-01/node_types.jsd#/nodes/Tensor"
//   "tags": {"http://tensortapestry.org/schemas/loom/2024-01/tag_types.jsd#/tags/IPFIndex": ...}
//
// Readers also accept the aliases Tapestry's Java environments declare ("loom:Tensor",
// "loom:IPFIndex"); writers emit the full URL unless asked for the short form.
//
//   node_kind_from_type("loom:Operation")             == NodeKind::kOperation
//   node_kind_from_type("http://example.org/#/Other") == std::nullopt
//   node_type_url(NodeKind::kTensor)                  == kTensorTypeUrl
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tapestry/ir/ids.h"

namespace tapestry::ir {

inline constexpr std::string_view kNodeTypesBase =
    "http://tensortapestry.org/schemas/loom/2024-01/node_types.jsd#/nodes/";
inline constexpr std::string_view kTagTypesBase =
    "http://tensortapestry.org/schemas/loom/2024-01/tag_types.jsd#/tags/";

inline constexpr std::string_view kTensorTypeUrl =
    "http://tensortapestry.org/schemas/loom/2024-01/node_types.jsd#/nodes/Tensor";
inline constexpr std::string_view kOperationTypeUrl =
    "http://tensortapestry.org/schemas/loom/2024-01/node_types.jsd#/nodes/Operation";
inline constexpr std::string_view kApplicationTypeUrl =
    "http://tensortapestry.org/schemas/loom/2024-01/node_types.jsd#/nodes/Application";
inline constexpr std::string_view kNoteTypeUrl =
    "http://tensortapestry.org/schemas/loom/2024-01/node_types.jsd#/nodes/Note";

inline constexpr std::string_view kIpfIndexTagUrl =
    "http://tensortapestry.org/schemas/loom/2024-01/tag_types.jsd#/tags/IPFIndex";
inline constexpr std::string_view kIpfSignatureTagUrl =
    "http://tensortapestry.org/schemas/loom/2024-01/tag_types.jsd#/tags/IPFSignature";
inline constexpr std::string_view kIoSequencePointTagUrl =
    "http://tensortapestry.org/schemas/loom/2024-01/tag_types.jsd#/tags/IOSequencePoint";

/// Tapestry's own tag (not a loom type): where an Application runs and what it receives from
/// other devices — {"device": "gpu:1", "receives": [{"tensorId": "…", "range": {…}, "from":
/// "gpu:0"}]}. Written by `tapestry shard --target`; checked by the placement dialect. Kept as
/// JSON among the node's other tags.
inline constexpr std::string_view kPlacementTagUrl =
    "http://tensortapestry.org/schemas/tapestry/2026-11/tag_types.jsd#/tags/Placement";

/// The tag types Tapestry understands. Unknown tag URLs are kept verbatim (NodeTags::other).
enum class TagKind : std::uint8_t { kIpfIndex, kIpfSignature, kIoSequencePoint, kPlacement };

/// The node kind named by a full type URL or its `loom:` alias; nullopt for any other string.
/// Never returns NodeKind::kOpaque.
std::optional<NodeKind> node_kind_from_type(std::string_view type);
/// The tag kind named by a full tag URL or its `loom:` alias; nullopt otherwise.
std::optional<TagKind> tag_kind_from_type(std::string_view type);

/// Full URL (or `loom:X` alias when `short_form`) of a node kind; kOpaque has none (asserts).
std::string_view node_type_url(NodeKind kind, bool short_form = false);
/// Full URL (or `loom:X` alias when `short_form`) of a tag kind.
std::string_view tag_type_url(TagKind kind, bool short_form = false);
/// "IPFIndex", "IPFSignature", "IOSequencePoint", "Placement".
std::string_view tag_kind_name(TagKind kind);

/// Shortens a known URL to its `loom:` alias for display ("loom:Tensor"); other strings are
/// returned unchanged.
std::string_view display_type(std::string_view type);

}  // namespace tapestry::ir
