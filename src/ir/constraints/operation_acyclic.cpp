// operation-acyclic: the tensor/operation graph (tensor → reading op → written tensor) has no
// cycle. The issue lists the cycle's nodes in edge order:
//
//   error[operation-acyclic]: The operation graph has a cycle
//     A → add → B → neg → A
#include <fmt/format.h>

#include "tapestry/ir/constraints.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"node-reference"};

class OperationAcyclic final : public Constraint {
 public:
  std::string_view name() const override { return "operation-acyclic"; }
  std::string_view description() const override {
    return "Tensors and operations form a directed acyclic graph.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    TopologicalOrder order = ctx.graph.topological_order();
    if (order.cycle.empty()) return;
    std::string path;
    nlohmann::json ids = nlohmann::json::array();
    for (NodeId n : order.cycle) {
      NodeView v = ctx.graph.node(n);
      path += v.display_name();
      path += " → ";
      ids.push_back(v.key());
    }
    NodeView first = ctx.graph.node(order.cycle.front());
    path += first.display_name();
    Issue issue = make_issue("The operation graph has a cycle", path);
    issue.params = {{"cycle", ids}};
    for (NodeId n : order.cycle) issue.contexts.push_back(ctx.node_context(n));
    out.push_back(std::move(issue));
  }
};

}  // namespace

std::shared_ptr<const Constraint> operation_acyclic() {
  return std::make_shared<OperationAcyclic>();
}

}  // namespace tapestry::ir::constraints
