// tensor-single-producer: at most one operation writes each tensor.
//
//   error[tensor-single-producer]: A tensor has more than one producer
//     Z is written by add_1 and add_2
#include <fmt/format.h>

#include "tapestry/ir/constraints.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"node-reference"};

class TensorSingleProducer final : public Constraint {
 public:
  std::string_view name() const override { return "tensor-single-producer"; }
  std::string_view description() const override {
    return "At most one operation writes each tensor.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (TensorId t : ctx.graph.tensors()) {
      std::span<const OperationId> producers = ctx.graph.producers(t);
      if (producers.size() <= 1) continue;
      std::string names;
      nlohmann::json ids = nlohmann::json::array();
      for (std::size_t i = 0; i < producers.size(); ++i) {
        names += i == 0 ? "" : (i + 1 == producers.size() ? " and " : ", ");
        names += ctx.graph.node(producers[i]).display_name();
        ids.push_back(ctx.graph.key(producers[i]));
      }
      Issue issue =
          make_issue("A tensor has more than one producer",
                     fmt::format("{} is written by {}", ctx.graph.node(t).display_name(), names));
      issue.params = {{"tensor", ctx.graph.key(t)}, {"producers", ids}};
      issue.contexts.push_back(ctx.node_context(t));
      for (OperationId op : producers)
        issue.contexts.push_back(ctx.node_context(op, ".body.outputs"));
      out.push_back(std::move(issue));
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> tensor_single_producer() {
  return std::make_shared<TensorSingleProducer>();
}

}  // namespace tapestry::ir::constraints
