#include "tapestry/rewrite/fuse_elementwise.h"

#include <algorithm>

#include <fmt/core.h>

#include "op_spec.h"
#include "spec_transforms.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/support/assert.h"
#include "tapestry/zspace/format.h"

namespace tapestry::rewrite {

namespace {

using detail::OpSpec;
using detail::Port;

// The fusion group whose head is `name` and that has a next element, or null.
const std::vector<std::string>* group_headed_by(const Plan& plan, std::string_view name) {
  for (const auto& group : plan.fuse) {
    if (group.size() >= 2 && group[0] == name) return &group;
  }
  return nullptr;
}

bool is_unit_selection(const zspace::IndexProjection& ipf) {
  for (std::int64_t s : ipf.shape()) {
    if (s != 1) return false;
  }
  for (std::size_t r = 0; r < ipf.tensor_rank(); ++r) {
    auto d = detail::followed_dim(ipf, r);
    if (!d || ipf.map().at(r, *d) != 1) return false;
  }
  return true;
}

bool is_identity_up_to_offset(const zspace::IndexProjection& ipf) {
  return ipf.index_rank() == ipf.tensor_rank() &&
         ipf.map().translate(-ipf.map().offset()) ==
             zspace::AffineMap::identity(ipf.index_rank()) &&
         ipf.shape() == zspace::Point::ones(ipf.tensor_rank());
}

// The fused operation has the producer's index space, and its consumer stage runs over M(S) for
// each producer shard S. That is the consumer's own work only when M maps the producer's index
// onto the consumer's, i.e. when the consumer reads exactly the box of T the producer writes. A
// consumer that reads a sub-box (slice: `s = slice(h, dim=1, start=0, end=1)`) would otherwise
// run over the producer's whole index and write outside its output (docs/rewrites.md, "The
// legality rule"). Strided and windowed reads are not elementwise and never get here.
std::optional<std::string> why_not_whole(const OpSpec& p, const OpSpec& c, ir::TensorId t,
                                         const std::string& c_name, const std::string& t_name) {
  const zspace::Range written = p.outputs[0].ipf.apply(p.index);
  for (const Port& in : c.inputs) {
    if (in.tensor != t) continue;
    const zspace::Range read = in.ipf.apply(c.index);
    if (read == written) return std::nullopt;
    return fmt::format("{} reads only {} of {} ({}): fused, it would run over all of {}'s index",
                       c_name, read, t_name, written, p.label);
  }
  return std::nullopt;
}

struct Candidate {
  ir::OperationId consumer;
  std::string reason;  // empty: fusable
  /// When fusable: the producer's and the consumer's specs, without params (the match reads
  /// them again).
  OpSpec producer_spec, consumer_spec;
};

// Can `op` (the producer) fuse with the single consumer of its output?
Candidate find_consumer(const RewriteState& state, ir::OperationId op, std::string_view wanted) {
  const ir::Graph& g = state.graph;
  const ir::OperationView view = g.operation(op);
  if (view.outputs().size() != 1) return {{}, "the producer has more than one output"};
  const ir::TensorId t = (*view.outputs().entries().begin()).value.tensor;
  const std::string t_name = g.tensor(t).label();
  if (metakernel::is_graph_output(g, t))
    return {{}, fmt::format("its output {} is a graph output", t_name)};
  if (state.ordering_tensors.contains(g.key(t))) {  // recompute.h: a copy waits for it
    return {{},
            fmt::format("its output {} orders a recomputation (the copy starts after it)", t_name)};
  }
  auto consumers = g.consumers(t);
  if (consumers.size() != 1)
    return {{}, fmt::format("its output {} has {} readers", t_name, consumers.size())};
  const ir::OperationId c = consumers[0];
  const std::string c_name = operation_name(g, c);
  if (!wanted.empty() && c_name != wanted)
    return {{}, fmt::format("its output is read by {}, not {}", c_name, wanted)};
  if (auto why = detail::why_not_rewritable(g, c)) return {{}, c_name + ": " + *why};
  OpSpec cs = detail::spec_of(g, c, /*with_params=*/false);
  if (!cs.reductions.empty()) return {{}, fmt::format("{} has a reduction", c_name)};
  int reads = 0;
  for (const Port& in : cs.inputs) {
    if (in.tensor != t) continue;
    ++reads;
    if (!is_identity_up_to_offset(in.ipf))
      return {{}, fmt::format("{} is not elementwise on {}", c_name, t_name)};
  }
  if (reads != 1) return {{}, fmt::format("{} reads {} {} times", c_name, t_name, reads)};
  for (const Port& out : cs.outputs) {
    if (!is_unit_selection(out.ipf))
      return {{}, fmt::format("{} writes more than one cell per index point", c_name)};
  }
  OpSpec ps = detail::spec_of(g, op, /*with_params=*/false);
  if (!is_unit_selection(ps.outputs[0].ipf))
    return {{}, "the producer writes more than one cell per index point"};
  if (auto why = why_not_whole(ps, cs, t, c_name, t_name)) return {{}, *why};
  return {c, "", std::move(ps), std::move(cs)};
}

// The stages of an operation: its own (a fused op) or one stage of itself, whose one output has
// the dtype `out_dtype`.
std::vector<FusedStage> stages_of(const OpSpec& op, const ir::LoomDType& out_dtype,
                                  std::vector<Port>& inputs) {
  if (op.kernel == kFusedKernel) return *shared_fused_stages(op.params);
  FusedStage s{.kernel = op.kernel,
               .label = op.label,
               .params = op.params,
               .index_names = op.index_names,
               .reductions = op.reductions,
               .index_map = zspace::AffineMap::identity(op.index.rank()),
               .inputs = {},
               .outputs = {}};
  for (Port& in : inputs) {
    s.inputs.push_back({in.name, "s0_" + in.name, in.ipf});
    in.name = "s0_" + in.name;
  }
  for (const Port& out : op.outputs) s.outputs.push_back({out.name, "", out.ipf, out_dtype});
  return {std::move(s)};
}

// Splits of the consumer that disagree with the producer's, through T.
std::optional<std::string> split_conflict(const RewriteState& state, const OpSpec& p,
                                          const OpSpec& c, const zspace::IndexProjection& m_ipf) {
  for (std::size_t e = 0; e < c.index_names.size(); ++e) {
    const std::int64_t cs = state.plan.split_of(c.label, c.index_names[e]);
    auto d = detail::followed_dim(m_ipf, e);
    const std::int64_t ps = d ? state.plan.split_of(p.label, p.index_names[*d]) : 1;
    if (cs != 1 && cs != ps) {
      return fmt::format("{} splits {} into {} but {} splits {} into {}", c.label, c.index_names[e],
                         cs, p.label, d ? p.index_names[*d] : std::string("nothing"), ps);
    }
  }
  return std::nullopt;
}

}  // namespace

namespace {

// A fused producer's params made ready for one more stage, in place: every output of its stages
// becomes an intermediate — its source cleared, and one the fused operation wrote (a source)
// records `t_dtype` — as fused_params would write the stages fused_stages reads from them, then
// edited that way. False, and the params unchanged, when they are not of that shape (a fused
// operation read from a file): fuse then reads them, which says what is wrong.
bool make_intermediates(nlohmann::json& params, const ir::LoomDType& t_dtype) {
  if (!params.is_object()) return false;
  const auto list = params.find("stages");
  if (list == params.end() || !list->is_array() || list->empty()) return false;
  for (const nlohmann::json& stage : *list) {
    const auto outputs = stage.is_object() ? stage.find("outputs") : stage.end();
    if (!stage.is_object() || outputs == stage.end() || !outputs->is_array()) return false;
    for (const nlohmann::json& out : *outputs) {
      const auto source = out.is_object() ? out.find("source") : out.end();
      if (!out.is_object() || source == out.end() || !source->is_string()) return false;
    }
  }
  for (nlohmann::json& stage : *list) {
    for (nlohmann::json& out : stage["outputs"]) {
      nlohmann::json& source = out["source"];
      if (!source.get_ref<const std::string&>().empty()) out["dtype"] = t_dtype.name();
      source = "";
    }
  }
  return true;
}

}  // namespace

OpSpec detail::fuse(OpSpec p, const OpSpec& c, ir::TensorId t, const ir::LoomDType& t_dtype) {
  // M: producer index → consumer index, through T.
  const Port* t_port = nullptr;
  for (const Port& in : c.inputs) {
    if (in.tensor == t) t_port = &in;
  }
  TAPESTRY_ASSERT(t_port != nullptr && p.outputs.size() == 1, "fuse: c must read p's one output");
  const zspace::AffineMap m = p.outputs[0].ipf.map().translate(-t_port->ipf.map().offset());

  OpSpec fused{.label = c.label,
               .kernel = std::string(kFusedKernel),
               .params = {},
               .index = p.index,
               .index_names = p.index_names,
               .reductions = p.reductions,
               .inputs = p.inputs,
               .outputs = {}};
  // The producer's stages: a fused producer's params extended as they are (reading them into
  // stages and writing every stage again made a chain of n fusions cost n² stages), else one
  // stage of the producer itself.
  std::vector<FusedStage> stages;
  nlohmann::json params;
  if (p.kernel == kFusedKernel && make_intermediates(p.params, t_dtype)) {
    params = std::move(p.params);
  } else {
    stages = stages_of(p, t_dtype, fused.inputs);
    for (FusedStage& s : stages) {
      for (FusedPort& out : s.outputs) {  // no longer the fused op's outputs: intermediates
        if (!out.source.empty()) out.dtype = t_dtype;
        out.source = "";
      }
    }
  }
  const std::size_t before = params.is_null() ? stages.size() : params["stages"].size();
  FusedStage stage{.kernel = c.kernel,
                   .label = c.label,
                   .params = c.params,
                   .index_names = c.index_names,
                   .reductions = c.reductions,
                   .index_map = m,
                   .inputs = {},
                   .outputs = {}};
  const std::string prefix = fmt::format("s{}_", before);
  for (const Port& in : c.inputs) {
    if (in.tensor == t) {
      stage.inputs.push_back({in.name, "", in.ipf});
      continue;
    }
    stage.inputs.push_back({in.name, prefix + in.name, in.ipf});
    fused.inputs.push_back({prefix + in.name, in.tensor, in.ipf.compose(m)});
  }
  for (const Port& out : c.outputs) {
    stage.outputs.push_back({out.name, out.name, out.ipf});
    fused.outputs.push_back({out.name, out.tensor, out.ipf.compose(m)});
  }
  stages.push_back(std::move(stage));
  if (params.is_null()) {
    fused.params = fused_params(stages);
  } else {
    nlohmann::json last = fused_params(stages);
    params["stages"].push_back(std::move(last["stages"][0]));
    fused.params = std::move(params);
  }
  return fused;
}

MatchResult FuseElementwise::match(const RewriteState& state, ir::OperationId op) const {
  const std::string name = operation_name(state.graph, op);
  const auto* group = group_headed_by(state.plan, name);
  if (!group && !state.plan.fuse_auto) return MatchResult::skip("no fusion requested");
  if (auto why = detail::why_not_rewritable(state.graph, op)) {
    return group ? MatchResult::refuse(*why) : MatchResult::skip(*why);
  }
  Candidate c =
      find_consumer(state, op, group ? std::string_view((*group)[1]) : std::string_view());
  if (!c.reason.empty()) return group ? MatchResult::refuse(c.reason) : MatchResult::skip(c.reason);
  const OpSpec& ps = c.producer_spec;
  const OpSpec& cs = c.consumer_spec;
  zspace::IndexProjection m(ps.outputs[0].ipf.map());
  if (auto conflict = split_conflict(state, ps, cs, m)) {
    return group ? MatchResult::refuse(*conflict) : MatchResult::skip(*conflict);
  }
  return MatchResult::success();
}

std::string FuseElementwise::apply(RewriteState& state, ir::OperationId op) const {
  const std::string name = operation_name(state.graph, op);
  const auto* group = group_headed_by(state.plan, name);
  const ir::OperationId c_id =
      find_consumer(state, op, group ? std::string_view((*group)[1]) : std::string_view()).consumer;
  OpSpec p = detail::spec_of(state.graph, op);
  OpSpec c = detail::spec_of(state.graph, c_id);
  const ir::TensorId t = p.outputs[0].tensor;
  const std::string t_name = state.graph.tensor(t).label();
  const std::string p_label = p.label;
  OpSpec fused = detail::fuse(std::move(p), c, t, state.graph.tensor(t).dtype());
  const std::size_t stages = fused.params["stages"].size();
  const ir::NodeId removed[] = {op, c_id, t};
  state.graph.remove(removed);
  detail::add_op(state.graph, std::move(fused));

  // The plan: the fused op takes the producer's splits under the consumer's name, so the
  // operation the plan named for them is the producer's.
  state.derive(c.label, p_label);
  OpPlan plan = state.plan.ops.count(p_label) ? state.plan.ops[p_label] : OpPlan{};
  state.plan.ops.erase(p_label);
  if (is_empty(plan)) {
    state.plan.ops.erase(c.label);
  } else {
    state.plan.ops[c.label] = plan;
  }
  if (group) {
    for (auto& g : state.plan.fuse) {
      if (&g == group) {
        g.erase(g.begin());
        g[0] = c.label;
      }
    }
    std::erase_if(state.plan.fuse, [](const auto& g) { return g.size() < 2; });
  }
  return fmt::format("{} ⇒ {} fused into {} ({} stages); tensor {} dropped", p_label, c.label,
                     c.label, stages, t_name);
}

// A fusion joins a producer P to the one reader C of its output t. What find_consumer checks and
// no rewrite undoes, read on the input graph: t has one reader and is not a graph output (a second
// reader stays one: rewrites replace readers, and two readers fused into one read t twice, which
// find_consumer refuses too); C has no reduction dim (a linear reading t as its bias becomes a
// bias_add that may be such a consumer: decompose-linear); C reads all of t, once, through an IPF
// of unit cells whose rows each follow one index dim (a fusion of C with its other producer
// composes that IPF with a map of the same kind, which keeps the cells and one dim per row, so
// an IPF without them never becomes the identity find_consumer needs).
bool FuseElementwise::may_act_across(const ir::Graph& graph, ir::OperationId /*producer*/,
                                     ir::TensorId t, ir::OperationId consumer) const {
  if (metakernel::is_graph_output(graph, t)) return false;
  const auto readers = graph.consumers(t);
  for (ir::OperationId other : readers) {
    if (other != consumer) return false;
  }
  const ir::OperationView view = graph.operation(consumer);
  if (!view.body().reductions.empty()) {
    if (view.kernel() != "linear") return false;
    for (const auto& in : view.inputs().entries()) {
      if (in.name == "bias" && in.value.tensor == t) return true;
    }
    return false;
  }
  const ir::IpfSignature* signature = view.ipf_signature();
  if (signature == nullptr || signature->inputs.size() != view.inputs().size()) return true;
  const zspace::Range& whole = graph.tensor(t).range();
  std::size_t i = 0, reads = 0;
  bool fits = true;
  for (const auto& in : view.inputs().entries()) {
    const zspace::IndexProjection& ipf = signature->inputs.entries()[i++].value;
    if (in.value.tensor != t) continue;
    ++reads;
    if (in.value.range != whole) fits = false;
    for (std::int64_t cells : ipf.shape()) fits = fits && cells == 1;
    for (std::size_t r = 0; r < ipf.tensor_rank(); ++r) {
      std::size_t nonzero = 0;
      for (std::size_t c = 0; c < ipf.index_rank(); ++c) nonzero += ipf.map().at(r, c) != 0;
      fits = fits && nonzero == 1;
    }
  }
  return reads == 1 && fits;
}

}  // namespace tapestry::rewrite
