// tag-schema: values of known tags match their loom schema.
//
// Known tags whose value did not match were kept verbatim in the node's other tags; this
// re-checks them with the hand-written schema (body_schema.h):
//
//   error[tag-schema]: Tag value does not match the loom:IPFIndex schema
//     tags['loom:IPFIndex']: start (5, 0) is after end (4, 5) in dimension 0
#include <fmt/format.h>

#include "body_schema.h"
#include "tapestry/ir/constraints.h"

namespace tapestry::ir::constraints {

namespace {

class TagSchema final : public Constraint {
 public:
  std::string_view name() const override { return "tag-schema"; }
  std::string_view description() const override {
    return "Values of known tags match the loom schema of their tag type.";
  }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (std::uint32_t i = 0; i < ctx.graph.size(); ++i) {
      NodeView node = ctx.graph.node(NodeId(i));
      if (!node.other_tags().is_object()) continue;
      for (const auto& [url, value] : node.other_tags().items()) {
        std::optional<TagKind> tag = tag_kind_from_type(url);
        if (!tag) continue;  // unknown tags are tag-type's business
        std::string alias(tag_type_url(*tag, /*short_form=*/true));
        for (SchemaProblem& p : check_tag_value(*tag, value)) {
          Issue issue = make_issue(fmt::format("Tag value does not match the {} schema", alias),
                                   fmt::format("tags['{}']{}: {}", alias, p.path, p.message));
          IssueContext context =
              ctx.node_context(node.id(), fmt::format(".tags['{}']{}", url, p.path));
          context.data = std::move(p.value);
          issue.contexts.push_back(std::move(context));
          out.push_back(std::move(issue));
        }
      }
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> tag_schema() {
  return std::make_shared<TagSchema>();
}

}  // namespace tapestry::ir::constraints
