// tensor-dtype: every tensor's dtype is one the dialect knows (dtype.h).
//
//   error[tensor-dtype]: Unknown tensor dtype
//     dtype "boolean" is not one of float32, float64, …, uint8
#include <fmt/format.h>

#include "tapestry/ir/constraints.h"
#include "tapestry/ir/dialect.h"

namespace tapestry::ir::constraints {

namespace {

class TensorDType final : public Constraint {
 public:
  std::string_view name() const override { return "tensor-dtype"; }
  std::string_view description() const override {
    return "Every tensor's dtype is one the dialect knows.";
  }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (TensorId t : ctx.graph.tensors()) {
      const LoomDType& dtype = ctx.graph.tensor(t).dtype();
      if (ctx.dialect.knows_dtype(dtype)) continue;
      std::string known;
      for (DType d : ctx.dialect.dtypes()) {
        known += known.empty() ? "" : ", ";
        known += dtype_name(d);
      }
      Issue issue = make_issue("Unknown tensor dtype",
                               fmt::format("dtype \"{}\" is not one of {}", dtype, known));
      issue.params = {{"dtype", dtype.name()}};
      issue.contexts.push_back(ctx.node_context(t, ".body.dtype"));
      out.push_back(std::move(issue));
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> tensor_dtype() {
  return std::make_shared<TensorDType>();
}

}  // namespace tapestry::ir::constraints
