#include "tapestry/rewrite/decompose_linear.h"

#include <algorithm>
#include <optional>

#include <fmt/core.h>

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
  ir::TensorId output;
};

// Evaluates `kernel` on `inputs` and adds it (no Application); `target`, when valid, is the
// existing tensor it writes (its IPF moves with the tensor's start).
Added add_kernel(const RewriteState& state, ir::Graph& graph, std::string_view kernel,
                 std::vector<ir::TensorId> inputs, const std::string& name,
                 ir::TensorId target = {},
                 const nlohmann::json& params = nlohmann::json::object()) {
  std::vector<metakernel::Argument> args;
  args.reserve(inputs.size());
  for (ir::TensorId t : inputs) args.push_back({name, metakernel::tensor_type(graph, t)});
  metakernel::Signature sig =
      metakernel::evaluate_signature(state.signatures->get(kernel), args, params);
  metakernel::ApplyOptions options{.add_application = false};
  if (target.is_valid()) {
    const zspace::Range& range = graph.tensor(target).range();
    metakernel::Port& result = sig.outputs[0];
    result.ipf = result.ipf.translate(range.start() - result.type.range.start());
    result.type.range = range;
    options.outputs = {target};
  }
  metakernel::AddedOperation added = metakernel::add_operation(graph, sig, inputs, name, options);
  return {std::move(sig), added.outputs[0]};
}

// `reshape(t, shape)`, named `name`.
Added add_reshape(const RewriteState& state, ir::Graph& graph, ir::TensorId t,
                  std::vector<std::int64_t> shape, const std::string& name) {
  return add_kernel(state, graph, "reshape", {t}, name, {}, {{"shape", std::move(shape)}});
}

// `ipf` with a constant row 0 (extent 1) on top: how the linear reads a vector x or writes a
// vector result, seen as the one-row matrix [1, n] the matmul reads or writes, so that splits
// carry over by tensor dim (transfer_splits).
zspace::IndexProjection as_row(const zspace::IndexProjection& ipf) {
  const std::vector<std::int64_t> zeros(ipf.index_rank(), 0);
  return zspace::IndexProjection(zspace::AffineMap(ipf.index_rank(), zeros, zspace::Point{0}),
                                 zspace::Point{1})
      .stack(ipf);
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
  for (std::string_view k : {"transpose", "matmul", "bias_add", "reshape"}) {
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

  // A vector x ([in], no batch dim) is multiplied as the one-row matrix [1, in]; the product
  // [1, out] is reshaped back to [out] before the bias is added.
  const zspace::Range x_range = graph.tensor(x.tensor).range();
  const zspace::Range result_range = graph.tensor(result.tensor).range();
  const std::int64_t in = x_range.extent(x_range.rank() - 1);
  const std::int64_t out = result_range.extent(result_range.rank() - 1);
  const bool vector = x_range.rank() == 1;
  const zspace::IndexProjection x_ipf = vector ? as_row(x.ipf) : x.ipf;
  const zspace::IndexProjection result_ipf = vector ? as_row(result.ipf) : result.ipf;

  FreshNames names(graph, state.plan);
  const std::string row_name = vector ? names.take(old.label + "/reshape") : std::string();
  const std::string transpose_name = names.take(old.label + "/transpose");
  const std::string matmul_name = names.take(old.label + "/matmul");
  const std::string vector_name = vector ? names.take(old.label + "/reshape") : std::string();
  std::optional<Added> row;
  if (vector) {
    state.derive(row_name, old.label);
    row = add_reshape(state, graph, x.tensor, {1, in}, row_name);
  }
  state.derive(transpose_name, old.label);
  state.derive(matmul_name, old.label);
  Added transpose = add_kernel(state, graph, "transpose", {w.tensor}, transpose_name);
  const ir::TensorId wt = transpose.output;
  Added matmul =
      add_kernel(state, graph, "matmul", {vector ? row->output : x.tensor, wt}, matmul_name);
  const metakernel::Signature& mm = matmul.sig;
  std::optional<Added> flat;
  if (vector) {
    state.derive(vector_name, old.label);
    flat = add_reshape(state, graph, matmul.output, {out}, vector_name);
  }
  const metakernel::Signature ba =
      add_kernel(state, graph, "bias_add", {vector ? flat->output : matmul.output, bias.tensor},
                 old.label, result.tensor)
          .sig;

  // The splits follow the tensors (see the header).
  OpPlan mm_plan{.split = {}, .substitute = {}};
  detail::transfer_splits(old, old_plan, x_ipf, mm.inputs[0].ipf, mm.dim_names(), mm_plan.split);
  detail::transfer_splits(old, old_plan, result_ipf, mm.outputs[0].ipf, mm.dim_names(),
                          mm_plan.split);
  // The transpose of w is cut as the linear cut w, so each shard transposes only the block of w
  // its matmul shards read (with `in` split, block k of Wᵀ is made where block k is multiplied).
  OpPlan tr_plan{.split = {}, .substitute = {}};
  detail::transfer_splits(old, old_plan, w.ipf, transpose.sig.inputs[0].ipf,
                          transpose.sig.dim_names(), tr_plan.split);
  OpPlan ba_plan{.split = {}, .substitute = old_plan.substitute};
  detail::transfer_splits(old, old_plan, result.ipf, ba.outputs[0].ipf, ba.dim_names(),
                          ba_plan.split);
  // Placement follows the splits: both new operations run where the linear's shards would.
  carry_placement(old_plan, transpose.sig.dim_names(), tr_plan);
  carry_placement(old_plan, mm.dim_names(), mm_plan);
  carry_placement(old_plan, ba.dim_names(), ba_plan);
  state.plan.ops.erase(old.label);
  if (!is_empty(tr_plan)) state.plan.ops[transpose_name] = tr_plan;
  if (!is_empty(mm_plan)) state.plan.ops[matmul_name] = mm_plan;
  if (!is_empty(ba_plan)) state.plan.ops[old.label] = ba_plan;
  if (!vector) {
    return fmt::format("{} -> {} + {} + {} (bias_add)", old.label, transpose_name, matmul_name,
                       old.label);
  }
  // The reshapes are cut as the tensors they write are: x's row along `in`, the product's
  // vector along `out`.
  OpPlan row_plan, vector_plan;
  detail::transfer_splits(old, old_plan, x_ipf, row->sig.outputs[0].ipf, row->sig.dim_names(),
                          row_plan.split);
  detail::transfer_splits(old, old_plan, result.ipf, flat->sig.outputs[0].ipf,
                          flat->sig.dim_names(), vector_plan.split);
  carry_placement(old_plan, row->sig.dim_names(), row_plan);
  carry_placement(old_plan, flat->sig.dim_names(), vector_plan);
  if (!is_empty(row_plan)) state.plan.ops[row_name] = row_plan;
  if (!is_empty(vector_plan)) state.plan.ops[vector_name] = vector_plan;
  return fmt::format("{} -> {} + {} + {} + {} + {} (bias_add; x is a vector: matmul of [1, {}])",
                     old.label, row_name, transpose_name, matmul_name, vector_name, old.label, in);
}

}  // namespace tapestry::rewrite
