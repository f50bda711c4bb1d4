// tag-type: every tag is of a type the dialect admits, on a node kind that takes it:
// IPFIndex on Operation and Application nodes, IPFSignature on Operations, IOSequencePoint on
// Operations and Applications, Placement on Applications.
//
//   error[tag-type]: Tag not allowed on this node kind
//     loom:IPFSignature tags belong on Operation nodes, not on Tensor nodes
#include <fmt/format.h>

#include "tapestry/ir/constraints.h"
#include "tapestry/ir/dialect.h"

namespace tapestry::ir::constraints {

namespace {

bool tag_allowed_on(TagKind tag, NodeKind kind) {
  switch (tag) {
    case TagKind::kIpfIndex:
    case TagKind::kIoSequencePoint:
      return kind == NodeKind::kOperation || kind == NodeKind::kApplication;
    case TagKind::kIpfSignature:
      return kind == NodeKind::kOperation;
    case TagKind::kPlacement:
      return kind == NodeKind::kApplication;
  }
  return false;
}

class TagType final : public Constraint {
 public:
  std::string_view name() const override { return "tag-type"; }
  std::string_view description() const override {
    return "Every tag is a known type admitted by the dialect, on a node kind that takes it.";
  }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (std::uint32_t i = 0; i < ctx.graph.size(); ++i) {
      NodeView node = ctx.graph.node(NodeId(i));
      if (node.has_ipf_index()) check_tag(ctx, node, TagKind::kIpfIndex, out);
      if (node.ipf_signature()) check_tag(ctx, node, TagKind::kIpfSignature, out);
      if (node.has_io_sequence_point()) check_tag(ctx, node, TagKind::kIoSequencePoint, out);
      if (!node.other_tags().is_object()) continue;
      for (const auto& [url, value] : node.other_tags().items()) {
        if (auto tag = tag_kind_from_type(url)) {
          check_tag(ctx, node, *tag, out);
          continue;
        }
        Issue issue =
            make_issue("Unknown tag type", fmt::format("tag \"{}\" is not a loom tag type", url));
        issue.params = {{"tag", url}};
        issue.contexts.push_back(ctx.node_context(node.id(), fmt::format(".tags['{}']", url)));
        out.push_back(std::move(issue));
      }
    }
  }

 private:
  void check_tag(const CheckContext& ctx, const NodeView& node, TagKind tag,
                 std::vector<Issue>& out) const {
    std::string_view alias = tag_type_url(tag, /*short_form=*/true);
    NodeKind kind = node.kind();
    if (kind == NodeKind::kOpaque) return;  // body-schema / node-type speak for it
    // Formatted only for an issue: a million-application graph has a million IPFIndex tags.
    auto path = [&] { return fmt::format(".tags['{}']", tag_type_url(tag)); };
    if (!ctx.dialect.admits(tag)) {
      Issue issue =
          make_issue(fmt::format("Tag type not admitted by the {} dialect", ctx.dialect.name()),
                     fmt::format("{} tags are not part of the dialect", alias));
      issue.contexts.push_back(ctx.node_context(node.id(), path()));
      out.push_back(std::move(issue));
    } else if (!tag_allowed_on(tag, kind)) {
      Issue issue =
          make_issue("Tag not allowed on this node kind",
                     fmt::format("{} tags do not belong on {} nodes", alias, kind_name(kind)));
      issue.params = {{"tag", alias}, {"kind", kind_name(kind)}};
      issue.contexts.push_back(ctx.node_context(node.id(), path()));
      out.push_back(std::move(issue));
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> tag_type() {
  return std::make_shared<TagType>();
}

}  // namespace tapestry::ir::constraints
