#include "tapestry/rewrite/decompose_linear.h"

#include <algorithm>

#include <fmt/core.h>

#include "mixed_precision.h"
#include "op_spec.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/signature.h"
#include "tapestry/rewrite/fresh_names.h"

namespace tapestry::rewrite {

namespace {

using detail::OpSpec;
using detail::Port;

bool requested(const RewriteState& state, ir::OperationId op) {
  const ir::OperationView view = state.graph.operation(op);
  const std::string name = operation_name(state.graph, op);
  auto it = state.plan.ops.find(name);
  if (it == state.plan.ops.end()) return false;
  const auto& substitute = it->second.substitute;
  if (std::find(substitute.begin(), substitute.end(), kDecomposeLinear) != substitute.end())
    return true;
  for (std::size_t d = 0; d < view.index_rank(); ++d) {
    if (view.reduction(d) && state.plan.split_of(name, view.index_name(d)) > 1) return true;
  }
  return false;
}

const Port* port(const std::vector<Port>& ports, std::string_view name) {
  for (const Port& p : ports) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

struct Added {
  metakernel::Signature sig;
  ir::OperationId op;
  ir::TensorId output;
};

// Evaluates `kernel` on `inputs` and adds it (no Application); `target`, when valid, is the
// existing tensor it writes (its IPF moves with the tensor's start); otherwise a new tensor, in
// float32 where the kernel derives bf16/f16 (the product of a 16-bit linear: mixed_precision.h).
Added add_kernel(const RewriteState& state, ir::Graph& graph, std::string_view kernel,
                 std::vector<ir::TensorId> inputs, const std::string& name,
                 ir::TensorId target = {}) {
  std::vector<metakernel::Argument> args;
  args.reserve(inputs.size());
  for (ir::TensorId t : inputs) args.push_back({name, metakernel::tensor_type(graph, t)});
  detail::read_as_one_precision(args);
  metakernel::Signature sig =
      metakernel::evaluate_signature(state.signatures->get(kernel), args, nlohmann::json::object());
  metakernel::ApplyOptions options{.add_application = false};
  metakernel::Port& result = sig.outputs[0];
  if (target.is_valid()) {
    const zspace::Range& range = graph.tensor(target).range();
    result.ipf = result.ipf.translate(range.start() - result.type.range.start());
    result.type.range = range;
    options.outputs = {target};
  } else {
    result.type.dtype = detail::accumulation_dtype(result.type.dtype);
  }
  metakernel::AddedOperation added = metakernel::add_operation(graph, sig, inputs, name, options);
  return {std::move(sig), added.operation, added.outputs[0]};
}

}  // namespace

MatchResult DecomposeLinear::match(const RewriteState& state, ir::OperationId op) const {
  if (state.graph.operation(op).kernel() != "linear") return MatchResult::skip("not a linear");
  if (!requested(state, op))
    return MatchResult::skip("the plan neither splits `in` nor asks for it");
  if (auto why = detail::why_not_rewritable(state.graph, op)) return MatchResult::refuse(*why);
  OpSpec spec = detail::spec_of(state.graph, op);
  if (!port(spec.inputs, "x") || !port(spec.inputs, "w") || !port(spec.inputs, "bias") ||
      spec.outputs.size() != 1) {
    return MatchResult::refuse("expected inputs x, w, bias and one output");
  }
  for (std::string_view k : {"linear_nobias", "bias_add"}) {
    if (state.signatures->find(k) == nullptr)
      return MatchResult::refuse(fmt::format("no `{}` kernel", k));
  }
  return MatchResult::success();
}

std::string DecomposeLinear::apply(RewriteState& state, ir::OperationId op) const {
  OpSpec old = detail::spec_of(state.graph, op);
  OpPlan old_plan = state.plan.ops[old.label];
  std::erase(old_plan.substitute, std::string(kDecomposeLinear));
  const ir::NodeId removed[] = {op};
  state.graph.remove(removed);
  ir::Graph& graph = state.graph;
  const Port& x = *port(old.inputs, "x");
  const Port& w = *port(old.inputs, "w");
  const Port& bias = *port(old.inputs, "bias");
  const Port& result = old.outputs[0];

  FreshNames names(graph, state.plan, state.taken_names);
  const std::string product_name = names.take(old.label + "/matmul");
  const Added product =
      add_kernel(state, graph, "linear_nobias", {x.tensor, w.tensor}, product_name);
  const metakernel::Signature ba =
      add_kernel(state, graph, "bias_add", {product.output, bias.tensor}, old.label, result.tensor)
          .sig;

  // The product has the linear's index, dim names and IPFs: the linear's entry carries over
  // whole. The bias_add's dims follow the result's: splits and mesh axes by tensor dim, and the
  // place list as it is (its grid is the linear's without `in`, in the same order).
  state.plan.ops.erase(old.label);
  OpPlan product_plan = state.plan_of_new(product.op, old.label, kDecomposeLinear, old_plan);
  OpPlan ba_plan{.split = {}, .substitute = old_plan.substitute, .place = old_plan.place};
  detail::transfer_splits(old, old_plan, result.ipf, ba.outputs[0].ipf, ba.dim_names(),
                          ba_plan.split);
  detail::transfer_mesh(old, old_plan, result.ipf, ba.outputs[0].ipf, ba.dim_names(), ba_plan.mesh);
  if (!is_empty(product_plan)) state.plan.ops[product_name] = product_plan;
  if (!is_empty(ba_plan)) state.plan.ops[old.label] = ba_plan;
  return fmt::format("{} -> {} (linear_nobias) + {} (bias_add)", old.label, product_name,
                     old.label);
}

// A linear becomes a matmul and a bias_add in its own place: nothing is read or changed across an
// edge.
bool DecomposeLinear::may_act_across(const ir::Graph& /*graph*/, ir::OperationId /*producer*/,
                                     ir::TensorId /*t*/, ir::OperationId /*consumer*/) const {
  return false;
}

}  // namespace tapestry::rewrite
