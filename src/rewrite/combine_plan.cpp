#include "combine_plan.h"

#include <algorithm>

#include "tapestry/metakernel/apply.h"

namespace tapestry::rewrite::detail {

namespace {

// `ipf` reads one cell per index point, tensor dim r at index dim r (plus an offset).
bool is_identity_up_to_offset(const zspace::IndexProjection& ipf) {
  return ipf.index_rank() == ipf.tensor_rank() &&
         ipf.map().translate(-ipf.map().offset()) ==
             zspace::AffineMap::identity(ipf.index_rank()) &&
         ipf.shape() == zspace::Point::ones(ipf.tensor_rank());
}

// The IPF with which operation `op` reads tensor `t`, when it reads it once.
const zspace::IndexProjection* reading_ipf(const OpSpec& op, ir::TensorId t) {
  const zspace::IndexProjection* found = nullptr;
  for (const Port& in : op.inputs) {
    if (in.tensor != t) continue;
    if (found != nullptr) return nullptr;
    found = &in.ipf;
  }
  return found;
}

// `op` is elementwise on `t`: no reduction, one output written one cell per point, identity
// IPFs for `t` and the output (so their dims are t's, in order).
bool elementwise_on(const RewriteState& state, ir::OperationId op, ir::TensorId t) {
  if (why_not_rewritable(state.graph, op)) return false;
  const OpSpec spec = spec_of(state.graph, op);
  const zspace::IndexProjection* in = reading_ipf(spec, t);
  return spec.reductions.empty() && spec.outputs.size() == 1 && in != nullptr &&
         is_identity_up_to_offset(*in) && is_identity_up_to_offset(spec.outputs[0].ipf);
}

// For each dim of C: the dim of R it writes (C's output IPF row that follows it), if any.
std::vector<std::optional<std::size_t>> result_dim_of(const OpSpec& c) {
  std::vector<std::optional<std::size_t>> out(c.index_names.size());
  const zspace::IndexProjection& ipf = c.outputs[0].ipf;
  for (std::size_t r = 0; r < ipf.tensor_rank(); ++r) {
    if (auto d = followed_dim(ipf, r)) out[*d] = r;
  }
  return out;
}

// Whether some consumer of `t` cuts tensor dim r (reads it through a dim it splits).
bool cut_by_consumers(const RewriteState& state, std::span<const ir::OperationId> consumers,
                      ir::TensorId t, std::size_t r) {
  for (ir::OperationId k : consumers) {
    if (why_not_rewritable(state.graph, k)) continue;
    const OpSpec spec = spec_of(state.graph, k);
    for (const Port& in : spec.inputs) {
      if (in.tensor != t || r >= in.ipf.tensor_rank()) continue;
      const auto d = followed_dim(in.ipf, r);
      if (d && state.plan.split_of(spec.label, spec.index_names[*d]) > 1) return true;
    }
  }
  return false;
}

bool unsplit(const RewriteState& state, ir::OperationId op) {
  const ir::OperationView view = state.graph.operation(op);
  const std::string name = operation_name(state.graph, op);
  for (std::size_t d = 0; d < view.index_rank(); ++d) {
    if (state.plan.split_of(name, view.index_name(d)) > 1) return false;
  }
  return true;
}

}  // namespace

std::vector<ir::OperationId> followers(const RewriteState& state, ir::TensorId result,
                                       std::string_view origin) {
  std::vector<ir::OperationId> chain;
  ir::TensorId t = result;
  while (!metakernel::is_graph_output(state.graph, t)) {
    const auto readers = state.graph.consumers(t);
    if (readers.size() != 1) break;
    const ir::OperationId f = readers[0];
    if (state.origin(operation_name(state.graph, f)) != origin || !elementwise_on(state, f, t))
      break;
    chain.push_back(f);
    t = (*state.graph.operation(f).outputs().entries().begin()).value.tensor;
  }
  return chain;
}

OpPlan default_combine_plan(const RewriteState& state, const CombineSite& site,
                            const std::vector<ir::OperationId>& following) {
  const OpSpec c = spec_of(state.graph, site.combine);
  const std::vector<std::optional<std::size_t>> writes = result_dim_of(c);
  // 1. Inherited dims: C's dims that follow one of P's split dims through R.
  OpPlan plan;
  std::map<std::string, std::string> from_p;  // C's dim → P's dim it follows
  for (std::size_t d = 0; d < c.index_names.size(); ++d) {
    if (!writes[d]) continue;
    const auto pd = followed_dim(*site.old_result_ipf, *writes[d]);
    if (!pd) continue;
    const std::string& p_dim = site.old->index_names[*pd];
    from_p[c.index_names[d]] = p_dim;
    const std::int64_t count =
        site.partial_plan->split.count(p_dim) != 0 ? site.partial_plan->split.at(p_dim) : 1;
    if (count != 1) plan.split[c.index_names[d]] = count;
  }
  // 2. Where R goes: the consumers of the last follower's output (R's when none follows).
  ir::TensorId last = site.result;
  if (!following.empty()) {
    last = (*state.graph.operation(following.back()).outputs().entries().begin()).value.tensor;
  }
  const auto consumers = state.graph.consumers(last);
  bool every_unsplit = !consumers.empty();
  for (ir::OperationId k : consumers) every_unsplit = every_unsplit && unsplit(state, k);
  // 3. The extra dim of a reduce-scatter: not inherited, wide enough; one a consumer cuts first.
  std::optional<std::size_t> extra;
  if (!every_unsplit) {
    for (bool by_consumer : {true, false}) {
      for (std::size_t d = 0; d < c.index_names.size() && !extra; ++d) {
        if (!writes[d] || plan.split.count(c.index_names[d]) != 0 ||
            c.index.extent(d) < site.blocks) {
          continue;
        }
        if (!by_consumer || cut_by_consumers(state, consumers, last, *writes[d])) extra = d;
      }
    }
  }
  if (extra) plan.split[c.index_names[*extra]] = site.blocks;
  // 4. Where its shards run: unsplit, on the consumer's device; else where P's blocks are.
  const OpPlan& p_plan = *site.partial_plan;
  if (plan.split.empty() && every_unsplit) {
    auto entry = state.plan.ops.find(operation_name(state.graph, consumers[0]));
    if (entry != state.plan.ops.end()) plan.place = entry->second.place;
    return plan;
  }
  if (!p_plan.mesh.empty()) {
    for (const auto& [dim, p_dim] : from_p) {
      auto axis = p_plan.mesh.find(p_dim);
      if (axis != p_plan.mesh.end() && plan.split.count(dim) != 0) plan.mesh[dim] = axis->second;
    }
    auto axis = p_plan.mesh.find(site.block);
    if (extra && axis != p_plan.mesh.end()) plan.mesh[c.index_names[*extra]] = axis->second;
    return plan;
  }
  OpPlan::Colocation colocation{.with = site.partial_op, .dims = {}};
  for (const auto& [dim, p_dim] : from_p) {
    if (plan.split.count(dim) != 0) colocation.dims[dim] = p_dim;
  }
  if (extra) colocation.dims[c.index_names[*extra]] = site.block;
  plan.colocate = std::move(colocation);
  return plan;
}

void mirror_plan(RewriteState& state, ir::OperationId combine, const OpPlan& plan,
                 const std::vector<ir::OperationId>& following) {
  const OpSpec c = spec_of(state.graph, combine);
  const std::vector<std::optional<std::size_t>> writes = result_dim_of(c);
  for (ir::OperationId f : following) {
    const OpSpec spec = spec_of(state.graph, f);
    // Follower dim r reads tensor dim r (identity), which C's dim d writes.
    std::map<std::string, std::string> of_c;  // C's dim → the follower's
    for (std::size_t d = 0; d < c.index_names.size(); ++d) {
      if (writes[d] && *writes[d] < spec.index_names.size())
        of_c[c.index_names[d]] = spec.index_names[*writes[d]];
    }
    OpPlan mirrored{.split = {}, .substitute = {}, .place = plan.place, .mesh = {}, .colocate = {}};
    if (auto old = state.plan.ops.find(spec.label); old != state.plan.ops.end())
      mirrored.substitute = old->second.substitute;
    for (const auto& [dim, count] : plan.split) {
      if (of_c.count(dim) != 0) mirrored.split[of_c[dim]] = count;
    }
    for (const auto& [dim, axis] : plan.mesh) {
      if (of_c.count(dim) != 0) mirrored.mesh[of_c[dim]] = axis;
    }
    if (plan.colocate) {
      mirrored.colocate = OpPlan::Colocation{.with = plan.colocate->with, .dims = {}};
      for (const auto& [dim, with_dim] : plan.colocate->dims) {
        if (of_c.count(dim) != 0) mirrored.colocate->dims[of_c[dim]] = with_dim;
      }
    }
    if (is_empty(mirrored)) {
      state.plan.ops.erase(spec.label);
    } else {
      state.plan.ops[spec.label] = std::move(mirrored);
    }
  }
}

}  // namespace tapestry::rewrite::detail
