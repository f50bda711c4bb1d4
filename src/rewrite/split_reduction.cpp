#include "tapestry/rewrite/split_reduction.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include "combine_plan.h"
#include "mixed_precision.h"
#include "op_spec.h"
#include "spec_transforms.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/signature.h"
#include "tapestry/rewrite/fresh_names.h"
#include "tapestry/support/assert.h"

namespace tapestry::rewrite {

namespace {

using detail::combine_kernel;
using detail::OpSpec;
using detail::Port;

// The first reduction dim the plan splits, with its shard count.
std::optional<std::pair<std::size_t, std::int64_t>> requested_split(const RewriteState& state,
                                                                    ir::OperationId op) {
  const ir::OperationView view = state.graph.operation(op);
  const std::string name = operation_name(state.graph, op);
  for (std::size_t d = 0; d < view.index_rank(); ++d) {
    if (!view.reduction(d)) continue;
    const std::int64_t p = state.plan.split_of(name, view.index_name(d));
    if (p > 1) return std::pair{d, p};
  }
  return std::nullopt;
}

// The inner map of an even split of dim k into blocks of q: (block, i…) ↦ i with i_k += q·block.
zspace::AffineMap block_map(std::size_t rank, std::size_t k, std::int64_t q) {
  std::vector<std::int64_t> flat(rank * (rank + 1), 0);
  for (std::size_t d = 0; d < rank; ++d) flat[d * (rank + 1) + d + 1] = 1;
  flat[k * (rank + 1)] = q;
  return zspace::AffineMap(rank + 1, flat, zspace::Point::zeros(rank));
}

// IPF of the leading partial dim: it follows index dim 0, `block`.
zspace::IndexProjection block_row(std::size_t index_rank) {
  std::vector<std::int64_t> row(index_rank, 0);
  row[0] = 1;
  return zspace::IndexProjection(zspace::AffineMap(index_rank, row, zspace::Point{0}),
                                 zspace::Point{1});
}

// Adds `reduce(partial)` writing `target` (the original output), named `name`.
ir::OperationId add_reduce(RewriteState& state, ir::Graph& graph, ir::TensorId partial,
                           ir::TensorId target, ir::Monoid monoid, const std::string& name) {
  const metakernel::Metakernel& reduce = state.signatures->get("reduce");
  metakernel::Argument arg{name, metakernel::tensor_type(graph, partial)};
  metakernel::Signature sig = metakernel::evaluate_signature(
      reduce, std::span(&arg, 1), nlohmann::json{{"op", ir::monoid_name(monoid)}});
  // The original output may start anywhere; the reduce's result then moves with it.
  const zspace::Range& target_range = graph.tensor(target).range();
  metakernel::Port& result = sig.outputs[0];
  TAPESTRY_ASSERT(result.type.range.shape() == target_range.shape(), "reduce result shape");
  result.ipf = result.ipf.translate(target_range.start() - result.type.range.start());
  result.type.range = target_range;
  return metakernel::add_operation(graph, sig, std::span(&partial, 1), name,
                                   {.add_application = false, .outputs = {target}})
      .operation;
}

// The partial output of one block: the output's tensor and range with a label of its own, in
// float32 when the output is bf16/f16 (partial sums stored in 16 bits would round once more than
// the unsplit graph: mixed_precision.h).
ir::TensorId add_partial(ir::Graph& graph, ir::TensorId output, zspace::Range range,
                         const std::string& label) {
  ir::TensorBody body = graph.tensor(output).body();
  body.range = std::move(range);
  if (const std::optional<ir::DType> dtype = body.dtype.known())
    body.dtype = ir::LoomDType(detail::accumulation_dtype(*dtype));
  return graph.add_tensor(std::move(body), {.label = label});
}

// Even split: one operation with a leading `block` dim; one reduce per output.
std::string add_even_split(RewriteState& state, ir::Graph& graph, FreshNames& names,
                           const OpSpec& old, std::size_t k, std::int64_t p,
                           const OpPlan& old_plan) {
  const std::int64_t q = old.index.extent(k) / p;
  OpSpec s = detail::split_exact(old, k, p);
  std::vector<ir::TensorId> partials;
  for (std::size_t j = 0; j < s.outputs.size(); ++j) {
    const ir::TensorId out = old.outputs[j].tensor;
    partials.push_back(add_partial(
        graph, out, zspace::Range::of_shape(zspace::Point{p}).product(graph.tensor(out).range()),
        names.take(old.label + "/partial" + (j == 0 ? "" : fmt::format(".{}", j)))));
    s.outputs[j].tensor = partials[j];
  }
  detail::add_op(graph, s);
  const std::string& block = s.index_names.front();
  OpPlan plan = old_plan;
  plan.split[block] = p;
  if (auto axis = old_plan.mesh.find(old.index_names[k]); axis != old_plan.mesh.end()) {
    plan.mesh.erase(old.index_names[k]);
    plan.mesh[block] = axis->second;  // the split reduction's blocks lie along the mesh axis
  }
  state.plan.ops[old.label] = plan;

  // Each combine takes the plan's entry for it, else the default that follows its consumers
  // (combine_plan.h); the elementwise operations that follow it take its plan.
  const ir::Monoid monoid = old.reduction(old.index_names[k])->monoid;
  std::vector<std::string> reduces;
  for (std::size_t j = 0; j < old.outputs.size(); ++j) {
    const std::string name =
        names.take(old.label + "/reduce" + (j == 0 ? "" : fmt::format(".{}", j)));
    reduces.push_back(name);
    const ir::OperationId reduce =
        add_reduce(state, graph, partials[j], old.outputs[j].tensor, monoid, name);
    const std::vector<ir::OperationId> following =
        detail::followers(state, old.outputs[j].tensor, state.origin(old.label));
    const detail::CombineSite site{.old = &old,
                                   .partial_op = old.label,
                                   .block = block,
                                   .blocks = p,
                                   .partial_plan = &plan,
                                   .old_result_ipf = &old.outputs[j].ipf,
                                   .combine = reduce,
                                   .result = old.outputs[j].tensor};
    const OpPlan reduce_plan = state.plan_of_new(
        reduce, old.label, kSplitReduction, detail::default_combine_plan(state, site, following));
    if (!is_empty(reduce_plan)) state.plan.ops[name] = reduce_plan;
    detail::mirror_plan(state, reduce, reduce_plan, following);
  }
  return fmt::format("{} blocks of {} in a `{}` dim, combined by {} ({})", p, q, block,
                     fmt::join(reduces, ", "), ir::monoid_name(monoid));
}

// Combines `parts` pairwise, level by level, into `output` (the original tensor).
void combine_tree(RewriteState& state, ir::Graph& graph, FreshNames& names,
                  std::vector<ir::TensorId> parts, const Port& output, ir::Monoid monoid,
                  const OpSpec& old, const OpPlan& old_plan) {
  const metakernel::Metakernel& kernel = state.signatures->get(*combine_kernel(monoid));
  int serial = 0;
  while (parts.size() > 1) {
    std::vector<ir::TensorId> next;
    for (std::size_t i = 0; i + 1 < parts.size(); i += 2) {
      const bool last = parts.size() == 2;
      const std::string name = names.take(fmt::format("{}/combine{}", old.label, serial++));
      metakernel::Argument args[] = {{name, metakernel::tensor_type(graph, parts[i])},
                                     {name, metakernel::tensor_type(graph, parts[i + 1])}};
      metakernel::Signature sig =
          metakernel::evaluate_signature(kernel, args, nlohmann::json::object());
      const zspace::Range& range = graph.tensor(output.tensor).range();
      metakernel::Port& result = sig.outputs[0];
      result.ipf = result.ipf.translate(range.start() - result.type.range.start());
      result.type.range = range;
      const ir::TensorId pair[] = {parts[i], parts[i + 1]};
      ir::TensorId target = last ? output.tensor : add_partial(graph, output.tensor, range, name);
      const ir::OperationId combine =
          metakernel::add_operation(graph, sig, pair, name,
                                    {.add_application = false, .outputs = {target}})
              .operation;
      OpPlan plan;
      detail::transfer_splits(old, old_plan, output.ipf, result.ipf, sig.dim_names(), plan.split);
      plan = state.plan_of_new(combine, old.label, kSplitReduction, std::move(plan));
      if (!is_empty(plan)) state.plan.ops[name] = plan;
      next.push_back(target);
    }
    if (parts.size() % 2 == 1) next.push_back(parts.back());
    parts = std::move(next);
  }
}

// Uneven split: block b covers its slice of k and writes its own partial tensor (a tensor has
// one producer); a balanced tree of the monoid's elementwise kernel combines them.
std::string add_uneven_split(RewriteState& state, ir::Graph& graph, FreshNames& names,
                             const OpSpec& old, std::size_t k, std::int64_t p,
                             const OpPlan& old_plan) {
  const std::vector<zspace::Range> blocks = old.index.split_even(k, p);
  std::vector<std::vector<ir::TensorId>> parts(old.outputs.size());
  std::vector<std::string> block_names;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    OpSpec s = old;
    s.label = names.take(fmt::format("{}/block{}", old.label, b));
    block_names.push_back(s.label);
    s.index = blocks[b];
    for (std::size_t j = 0; j < s.outputs.size(); ++j) {
      const ir::TensorId out = old.outputs[j].tensor;
      s.outputs[j].tensor = add_partial(
          graph, out, graph.tensor(out).range(),
          names.take(fmt::format("{}/partial{}", s.label, j == 0 ? "" : fmt::format(".{}", j))));
      parts[j].push_back(s.outputs[j].tensor);
    }
    const OpPlan plan =
        state.plan_of_new(detail::add_op(graph, s), old.label, kSplitReduction, old_plan);
    if (!is_empty(plan)) state.plan.ops[s.label] = plan;
  }
  state.plan.ops.erase(old.label);
  const ir::Monoid monoid = old.reduction(old.index_names[k])->monoid;
  for (std::size_t j = 0; j < old.outputs.size(); ++j) {
    combine_tree(state, graph, names, parts[j], old.outputs[j], monoid, old, old_plan);
  }
  return fmt::format("{} blocks {}…{} of uneven size, combined by a tree of {}", p,
                     block_names.front(), block_names.back(), *combine_kernel(monoid));
}

}  // namespace

std::optional<std::string_view> detail::combine_kernel(ir::Monoid monoid) {
  switch (monoid) {
    case ir::Monoid::kSum:
      return "add";
    case ir::Monoid::kMax:
      return "maximum";
    case ir::Monoid::kProd:
      return "mul";
    case ir::Monoid::kMin:
      return std::nullopt;
  }
  return std::nullopt;
}

OpSpec detail::split_exact(const OpSpec& old, std::size_t k, std::int64_t p) {
  TAPESTRY_ASSERT(p > 0 && old.index.extent(k) % p == 0, "split_exact: p must divide the extent");
  const std::int64_t q = old.index.extent(k) / p;
  const zspace::AffineMap inner = block_map(old.index.rank(), k, q);
  OpSpec s = old;
  s.index = zspace::Range::of_shape(zspace::Point{p})
                .product(old.index.with_dim(k, old.index.start()[k], old.index.start()[k] + q));
  s.index_names.insert(s.index_names.begin(), detail::fresh_name(old.index_names, "block"));
  for (Port& in : s.inputs) in.ipf = in.ipf.compose(inner);
  for (Port& out : s.outputs) out.ipf = block_row(s.index.rank()).stack(out.ipf.compose(inner));
  return s;
}

MatchResult SplitReduction::match(const RewriteState& state, ir::OperationId op) const {
  auto split = requested_split(state, op);
  if (!split) return MatchResult::skip("the plan splits no reduction dim");
  if (auto why = detail::why_not_rewritable(state.graph, op)) return MatchResult::refuse(*why);
  if (state.signatures->find("reduce") == nullptr)
    return MatchResult::refuse("no `reduce` kernel is loaded");
  const ir::OperationView view = state.graph.operation(op);
  const std::int64_t extent = view.ipf_index()->extent(split->first);
  if (split->second > extent) {
    return MatchResult::refuse(
        fmt::format("cannot cut reduction dim '{}' of extent {} into {} blocks",
                    view.index_name(split->first), extent, split->second));
  }
  // Every block must contribute only its own terms: an input read whole by every block (linear's
  // bias) would be counted p times. Such kernels are decomposed first (decompose-linear).
  const ir::IpfSignature& signature = *view.ipf_signature();
  for (const auto& in : signature.inputs.entries()) {
    if (in.value.ignores_index_dim(split->first)) {
      return MatchResult::refuse(fmt::format(
          "input '{}' does not depend on reduction dim '{}', so every block would count it; "
          "decompose the operation first",
          in.name, view.index_name(split->first)));
    }
  }
  if (extent % split->second != 0 && !combine_kernel(*view.reduction(split->first))) {
    return MatchResult::refuse(
        fmt::format("no elementwise kernel combines '{}' partials; split '{}' evenly",
                    ir::monoid_name(*view.reduction(split->first)), view.index_name(split->first)));
  }
  for (const auto& out : view.outputs().entries()) {
    const std::optional<ir::DType> dtype = state.graph.tensor(out.value.tensor).dtype().known();
    if (!dtype || !ir::is_tap_dtype(*dtype)) {
      return MatchResult::refuse(fmt::format("output dtype '{}' has no reduce kernel",
                                             state.graph.tensor(out.value.tensor).dtype()));
    }
  }
  return MatchResult::success();
}

std::string SplitReduction::apply(RewriteState& state, ir::OperationId op) const {
  const auto [k, p] = *requested_split(state, op);
  OpSpec old = detail::spec_of(state.graph, op);
  const std::string k_name = old.index_names[k];
  OpPlan old_plan = state.plan.ops[old.label];
  old_plan.split.erase(k_name);

  const ir::NodeId removed[] = {op};
  state.graph.remove(removed);
  FreshNames names(state.graph, state.plan, state.taken_names);
  std::string summary = old.index.extent(k) % p == 0
                            ? add_even_split(state, state.graph, names, old, k, p, old_plan)
                            : add_uneven_split(state, state.graph, names, old, k, p, old_plan);
  return fmt::format("{} of {}: {}", k_name, old.label, summary);
}

namespace {

bool has_reduction(const ir::Graph& graph, ir::OperationId op) {
  return !graph.operation(op).body().reductions.empty();
}

// Whether fuse-elementwise may make `op` (no reduction dim of its own) the consumer of a fusion
// whose producer chain starts at an operation with a reduction dim that split-reduction refuses
// for its output's dtype alone: the fused operation has the reduction and the consumer's output,
// so split-reduction may accept it and plan its combine from `op`'s readers. (The producer's
// other refusals hold for the fused operation too: it has the producer's index and inputs.) Walks
// back through tensors with one reader that are not graph outputs, as a fusion needs.
bool may_carry_a_reduction(const ir::Graph& graph, ir::OperationId op, int depth) {
  if (depth > 64) return true;  // a long chain: say yes rather than walk it
  for (const auto& in : graph.operation(op).inputs().entries()) {
    const ir::TensorId u = in.value.tensor;
    if (!u.is_valid() || metakernel::is_graph_output(graph, u) || graph.consumers(u).size() != 1)
      continue;
    for (ir::OperationId q : graph.producers(u)) {
      if (has_reduction(graph, q)) {
        const std::optional<ir::DType> dtype = graph.tensor(u).dtype().known();
        if (!dtype || !ir::is_tap_dtype(*dtype)) return true;
      } else if (may_carry_a_reduction(graph, q, depth + 1)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

// The combine's plan follows the readers of the split operation's outputs (combine_plan.h:
// their splits, whether they are cut, the first one's place list), as they are when it applies:
// an edge from an operation with a reduction dim (or one that may become one by a fusion).
bool SplitReduction::may_act_across(const ir::Graph& graph, ir::OperationId producer,
                                    ir::TensorId /*t*/, ir::OperationId /*consumer*/) const {
  return has_reduction(graph, producer) || may_carry_a_reduction(graph, producer, 0);
}

}  // namespace tapestry::rewrite
