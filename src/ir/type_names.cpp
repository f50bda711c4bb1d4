// Loom type URLs and their `loom:` aliases.
#include "tapestry/ir/type_names.h"

#include <array>

#include "tapestry/support/assert.h"

namespace tapestry::ir {

namespace {

struct NodeTypeName {
  NodeKind kind;
  std::string_view url;
  std::string_view alias;
};

constexpr std::array<NodeTypeName, 4> kNodeTypes = {{
    {NodeKind::kTensor, kTensorTypeUrl, "loom:Tensor"},
    {NodeKind::kOperation, kOperationTypeUrl, "loom:Operation"},
    {NodeKind::kApplication, kApplicationTypeUrl, "loom:Application"},
    {NodeKind::kNote, kNoteTypeUrl, "loom:Note"},
}};

struct TagTypeName {
  TagKind kind;
  std::string_view url;
  std::string_view alias;
  std::string_view name;
};

constexpr std::array<TagTypeName, 4> kTagTypes = {{
    {TagKind::kIpfIndex, kIpfIndexTagUrl, "loom:IPFIndex", "IPFIndex"},
    {TagKind::kIpfSignature, kIpfSignatureTagUrl, "loom:IPFSignature", "IPFSignature"},
    {TagKind::kIoSequencePoint, kIoSequencePointTagUrl, "loom:IOSequencePoint", "IOSequencePoint"},
    {TagKind::kPlacement, kPlacementTagUrl, "tapestry:Placement", "Placement"},
}};

}  // namespace

std::string_view kind_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::kTensor:
      return "Tensor";
    case NodeKind::kOperation:
      return "Operation";
    case NodeKind::kApplication:
      return "Application";
    case NodeKind::kNote:
      return "Note";
    case NodeKind::kOpaque:
      return "Opaque";
  }
  return "?";
}

namespace {

// The part after the URL base or the "loom:" prefix ("Tensor"), or empty when neither matches.
// Comparing the long shared prefix once keeps the reader's per-node type check cheap.
std::string_view type_suffix(std::string_view type, std::string_view base) {
  if (type.starts_with(base)) return type.substr(base.size());
  if (type.starts_with("loom:")) return type.substr(5);
  return {};
}

}  // namespace

std::optional<NodeKind> node_kind_from_type(std::string_view type) {
  std::string_view suffix = type_suffix(type, kNodeTypesBase);
  if (suffix.empty()) return std::nullopt;
  for (const NodeTypeName& t : kNodeTypes) {
    if (suffix == t.alias.substr(5)) return t.kind;
  }
  return std::nullopt;
}

std::optional<TagKind> tag_kind_from_type(std::string_view type) {
  if (type == kPlacementTagUrl || type == "tapestry:Placement") return TagKind::kPlacement;
  std::string_view suffix = type_suffix(type, kTagTypesBase);
  if (suffix.empty()) return std::nullopt;
  for (const TagTypeName& t : kTagTypes) {
    if (suffix == t.name && t.kind != TagKind::kPlacement) return t.kind;
  }
  return std::nullopt;
}

std::string_view node_type_url(NodeKind kind, bool short_form) {
  for (const NodeTypeName& t : kNodeTypes) {
    if (t.kind == kind) return short_form ? t.alias : t.url;
  }
  TAPESTRY_ASSERT(false, "opaque nodes have no type URL of their own");
  return {};
}

std::string_view tag_type_url(TagKind kind, bool short_form) {
  for (const TagTypeName& t : kTagTypes) {
    if (t.kind == kind) return short_form ? t.alias : t.url;
  }
  return {};
}

std::string_view tag_kind_name(TagKind kind) {
  for (const TagTypeName& t : kTagTypes) {
    if (t.kind == kind) return t.name;
  }
  return {};
}

std::string_view display_type(std::string_view type) {
  if (auto kind = node_kind_from_type(type)) return node_type_url(*kind, true);
  if (auto tag = tag_kind_from_type(type)) return tag_type_url(*tag, true);
  return type;
}

}  // namespace tapestry::ir
