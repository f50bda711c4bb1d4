// body-extension-field (warning): body fields outside the loom schema.
//
// Loom's schemas close their bodies (additionalProperties: false). Tapestry keeps unknown fields
// so that extensions survive a read/write round trip, but says so:
//
//   warning[body-extension-field]: Body field outside the loom:Tensor schema
//     field "layout" is kept but not interpreted
#include <fmt/format.h>

#include "tapestry/ir/constraints.h"
#include "tapestry/ir/ordering.h"

namespace tapestry::ir::constraints {

namespace {

class BodyExtensionField final : public Constraint {
 public:
  std::string_view name() const override { return "body-extension-field"; }
  std::string_view description() const override {
    return "Body fields outside the loom schema are kept but flagged (warning).";
  }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (std::uint32_t i = 0; i < ctx.graph.size(); ++i) {
      NodeView node = ctx.graph.node(NodeId(i));
      if (!node.extensions().is_object()) continue;
      for (const auto& [field, value] : node.extensions().items()) {
        // Tapestry's own Tensor extension: the .tap `output` mark (metakernel/apply.h).
        if (node.kind() == NodeKind::kTensor && field == "graphOutput") continue;
        // and the ordering edges of Operations and Applications (ir/ordering.h).
        if ((node.kind() == NodeKind::kOperation || node.kind() == NodeKind::kApplication) &&
            field == kAfterField)
          continue;
        Issue issue = make_issue(
            fmt::format("Body field outside the {} schema", display_type(node.type())),
            fmt::format("field \"{}\" is kept but not interpreted", field), Severity::kWarning);
        issue.params = {{"field", field}};
        issue.contexts.push_back(
            ctx.data_context(node.id(), kind_name(node.kind()), ".body." + field, value));
        out.push_back(std::move(issue));
      }
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> body_extension_field() {
  return std::make_shared<BodyExtensionField>();
}

}  // namespace tapestry::ir::constraints
