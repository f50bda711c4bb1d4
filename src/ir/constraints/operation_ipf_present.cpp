// operation-ipf-present: an Operation carries both IPFIndex and IPFSignature, or neither.
//
// Neither is allowed — Java graphs have opaque operations — but such an operation cannot be
// sharded or checked, so it is a warning; one without the other is an error:
//
//   warning[operation-ipf-present]: Operation has no IPF index or signature
//     op0 cannot be sharded or checked against its selections
#include <fmt/format.h>

#include "tapestry/ir/constraints.h"

namespace tapestry::ir::constraints {

namespace {

class OperationIpfPresent final : public Constraint {
 public:
  std::string_view name() const override { return "operation-ipf-present"; }
  std::string_view description() const override {
    return "Operations carry IPFIndex and IPFSignature together (warning when neither).";
  }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (OperationId op : ctx.graph.operations()) {
      OperationView v = ctx.graph.operation(op);
      bool index = v.has_ipf_index();
      bool signature = v.ipf_signature() != nullptr;
      if (index && signature) continue;
      std::string name(v.display_name());
      Issue issue =
          !index && !signature
              ? make_issue(
                    "Operation has no IPF index or signature",
                    fmt::format("{} cannot be sharded or checked against its selections", name),
                    Severity::kWarning)
              : make_issue(
                    index ? "Operation has an IPFIndex but no IPFSignature"
                          : "Operation has an IPFSignature but no IPFIndex",
                    fmt::format("{} needs both tags for its selections to be checked", name));
      issue.contexts.push_back(ctx.node_context(op, ".tags"));
      out.push_back(std::move(issue));
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> operation_ipf_present() {
  return std::make_shared<OperationIpfPresent>();
}

}  // namespace tapestry::ir::constraints
