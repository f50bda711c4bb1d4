#include "tapestry/rewrite/fresh_names.h"

namespace tapestry::rewrite {

FreshNames::FreshNames(const ir::Graph& graph, const Plan& plan) {
  for (const auto& [name, op_plan] : plan.ops) table_.take(name);
  for (const auto& group : plan.fuse) {
    for (const std::string& name : group) table_.take(name);
  }
  for (ir::OperationId op : graph.operations()) {
    const ir::OperationView view = graph.operation(op);
    if (!view.label().empty()) table_.take(view.label());
    table_.take(std::string(view.key()));
  }
  for (ir::TensorId t : graph.tensors()) {
    const std::string& label = graph.tensor(t).label();
    if (!label.empty()) table_.take(label);
  }
}

std::string FreshNames::take(std::string_view base) {
  std::string name = table_.fresh(base);
  table_.take(name);
  return name;
}

}  // namespace tapestry::rewrite
