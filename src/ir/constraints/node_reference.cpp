// node-reference: every tensorId names a Tensor and every operationId an Operation.
//
// The reader resolves references after reading all nodes (so order does not matter) and keeps
// the ones that failed; this reports them:
//
//   error[node-reference]: Reference to a missing node
//     inputs.x[0].tensorId names "9f…", which is not a node of this graph
#include <fmt/format.h>

#include "tapestry/ir/constraints.h"

namespace tapestry::ir::constraints {

namespace {

class NodeReference final : public Constraint {
 public:
  std::string_view name() const override { return "node-reference"; }
  std::string_view description() const override {
    return "tensorId references name Tensor nodes; operationId references name Operation nodes.";
  }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (const UnresolvedReference& ref : ctx.graph.unresolved_references()) {
      std::optional<NodeId> target = ctx.graph.find(ref.key);
      std::string field = ref.json_path.substr(1);
      Issue issue =
          target ? make_issue(
                       fmt::format("Reference to a node that is not a {}", kind_name(ref.expected)),
                       fmt::format("{} names \"{}\", a {} node", field, ref.key,
                                   kind_name(ctx.graph.kind(*target))))
                 : make_issue("Reference to a missing node",
                              fmt::format("{} names \"{}\", which is not a node of this graph",
                                          field, ref.key));
      issue.params = {{"key", ref.key}, {"expected", kind_name(ref.expected)}};
      issue.contexts.push_back(ctx.node_context(ref.from, ".body" + ref.json_path));
      if (target) issue.contexts.push_back(ctx.node_context(*target));
      out.push_back(std::move(issue));
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> node_reference() {
  return std::make_shared<NodeReference>();
}

}  // namespace tapestry::ir::constraints
