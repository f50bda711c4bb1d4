#include "tapestry/rewrite/fresh_names.h"

#include <fmt/core.h>

namespace tapestry::rewrite {

// A scan, not a table: a rewrite asks for a handful of names, and building a table of every name
// of the graph for each rewrite made the rewrite driver quadratic in the graph's size.
bool FreshNames::is_taken(std::string_view name) const {
  if (handed_out_.is_taken(name)) return true;
  if (plan_ != nullptr && plan_->ops.find(std::string(name)) != plan_->ops.end()) return true;
  if (auto node = graph_->find(name)) {  // an operation's key
    if (graph_->kind(*node) == ir::NodeKind::kOperation && !graph_->is_removed(*node)) return true;
  }
  for (ir::OperationId op : graph_->operations()) {
    if (graph_->operation(op).label() == name) return true;
  }
  for (ir::TensorId t : graph_->tensors()) {
    if (graph_->tensor(t).label() == name) return true;
  }
  return false;
}

std::string FreshNames::take(std::string_view base) {
  std::string name(base);
  for (int n = 2; is_taken(name); ++n) name = fmt::format("{}.{}", base, n);
  handed_out_.take(name);
  if (log_) log_(name, name != base);
  return name;
}

}  // namespace tapestry::rewrite
