// node-type: every node's type is one the dialect admits.
//
//   error[node-type]: Node type not admitted by the operation dialect
//     loom:Application nodes belong to the application dialect
#include <fmt/format.h>

#include "tapestry/ir/constraints.h"
#include "tapestry/ir/dialect.h"

namespace tapestry::ir::constraints {

namespace {

class NodeType final : public Constraint {
 public:
  std::string_view name() const override { return "node-type"; }
  std::string_view description() const override {
    return "Every node's type is a known loom type admitted by the dialect.";
  }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (std::uint32_t i = 0; i < ctx.graph.size(); ++i) {
      NodeView node = ctx.graph.node(NodeId(i));
      std::optional<NodeKind> kind = node.kind();
      if (kind == NodeKind::kOpaque) kind = node_kind_from_type(node.type());
      if (!kind) {
        Issue issue = make_issue("Unknown node type",
                                 fmt::format("type \"{}\" is not a loom node type", node.type()));
        issue.params = {{"type", node.type()}};
        issue.contexts.push_back(ctx.node_context(node.id(), ".type"));
        out.push_back(std::move(issue));
      } else if (!ctx.dialect.admits(*kind)) {
        Issue issue =
            make_issue(fmt::format("Node type not admitted by the {} dialect", ctx.dialect.name()),
                       fmt::format("{} nodes are not part of the {} dialect",
                                   node_type_url(*kind, /*short_form=*/true), ctx.dialect.name()));
        issue.params = {{"type", node.type()}, {"dialect", ctx.dialect.name()}};
        issue.contexts.push_back(ctx.node_context(node.id(), ".type"));
        out.push_back(std::move(issue));
      }
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> node_type() {
  return std::make_shared<NodeType>();
}

}  // namespace tapestry::ir::constraints
