// The pipeline pass (pipeline.h): stages for every operation, the microbatch splits and stage
// placement in the plan, the seed read off a weight; after shard-grid, the schedule's edges.
#include "tapestry/rewrite/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "graph_walk.h"
#include "op_spec.h"
#include "tapestry/ir/ordering.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/signature.h"
#include "tapestry/rewrite/fresh_names.h"
#include "tapestry/rewrite/graph_copy.h"
#include "tapestry/rewrite/graph_roles.h"
#include "tapestry/support/cancel.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {

namespace {

using detail::OpSpec;
using detail::Port;

[[noreturn]] void fail(const std::string& why) {
  throw Error("pipeline: " + why);
}

// The gradient seed: the one `ones_like` of a computed scalar (the loss).
std::optional<ir::OperationId> find_seed(const ir::Graph& g) {
  std::optional<ir::OperationId> seed;
  for (ir::OperationId op : g.operations()) {
    const ir::OperationView view = g.operation(op);
    if (view.kernel() != "ones_like" || view.inputs().size() != 1) continue;
    const ir::TensorId x = (*view.inputs().entries().begin()).value.tensor;
    if (g.tensor(x).range().rank() != 0 || g.producers(x).empty()) continue;
    if (seed)
      fail(fmt::format("two gradient seeds ({}, {}): a pipeline runs one training step",
                       operation_name(g, *seed), operation_name(g, op)));
    seed = op;
  }
  return seed;
}

// Replaces the seed's loss input by `L/shape = sum_to(P, shape=[])`, P a graph input of the
// loss's dtype (the smallest, preferring one read on the last stage); returns the new op's name.
std::string rewire_seed(RewriteState& state, ir::OperationId seed,
                        const std::vector<std::size_t>& tensor_stage, std::size_t last) {
  ir::Graph& g = state.graph;
  const ir::TensorId loss = (*g.operation(seed).inputs().entries().begin()).value.tensor;
  const ir::TensorView lview = g.tensor(loss);
  std::optional<ir::TensorId> source;
  const auto better = [&](ir::TensorId t) {
    if (!source) return true;
    const bool on_last = tensor_stage[t.index()] == last;
    const bool was_last = tensor_stage[source->index()] == last;
    if (on_last != was_last) return on_last;
    return g.tensor(t).range().size() < g.tensor(*source).range().size();
  };
  for (ir::TensorId t : g.tensors()) {
    if (!g.producers(t).empty() || g.consumers(t).empty()) continue;
    if (g.tensor(t).dtype() != lview.dtype()) continue;
    if (better(t)) source = t;
  }
  if (!source) {
    fail(
        fmt::format("the seed {} reads the loss {} for its shape; no graph input of its dtype "
                    "can stand in, so every microbatch's backward pass would wait for the "
                    "whole batch's loss",
                    operation_name(g, seed), g.display_name(loss)));
  }
  const std::vector<ir::OperationId> order(g.operations().begin(), g.operations().end());
  FreshNames names(g, state.plan);
  const std::string name = names.take(g.display_name(loss) + "/shape");
  const metakernel::Argument args[] = {
      {g.display_name(*source), metakernel::tensor_type(g, *source)}};
  const metakernel::Signature sig = metakernel::evaluate_signature(
      state.signatures->get("sum_to"), args, {{"shape", nlohmann::json::array()}});
  const metakernel::AddedOperation added = metakernel::add_operation(
      g, sig, std::span<const ir::TensorId>(&*source, 1), name, {.add_application = false});
  state.plan_of_new(added.operation, operation_name(g, seed), kPipeline, {});
  OpSpec s = detail::spec_of(g, seed);
  s.inputs[0].tensor = added.outputs[0];
  const ir::NodeId removed[] = {seed};
  g.remove(removed);
  const ir::OperationId rewired = detail::add_op(g, s);
  std::unordered_map<std::uint32_t, std::vector<ir::OperationId>> before = {
      {seed.index(), {added.operation}}};
  std::unordered_map<std::uint32_t, ir::OperationId> replaced = {{seed.index(), rewired}};
  state.graph = copy_graph_in_order(g, detail::reordered(order, before, replaced)).graph;
  return name;
}

}  // namespace

std::vector<std::string> stage_devices(const PipelinePlan& pipeline, std::size_t s) {
  return s < pipeline.devices.size() ? pipeline.devices[s]
                                     : std::vector<std::string>{fmt::format("#{}", s)};
}

void pipeline_operations(RewriteState& state, std::vector<RewriteEvent>& log) {
  if (!state.plan.pipeline) return;
  const PipelinePlan pipe = *state.plan.pipeline;
  const std::size_t stages = pipe.stages.size();
  const std::int64_t m = pipe.microbatches;

  // The named operations' stages, and contiguity: no named operation depends on a later stage.
  std::vector<std::size_t> named_stage(state.graph.size(), SIZE_MAX);
  {
    const OperationFinder finder(state.graph);  // a scan per name was quadratic in the layers
    for (std::size_t s = 0; s < stages; ++s) {
      for (const std::string& name : pipe.stages[s]) {
        if (auto op = finder.find(name)) named_stage[op->index()] = s;
      }
    }
  }
  {
    const ir::Graph& g = state.graph;
    const ir::TopologicalOrder topo = g.topological_order();
    std::vector<std::size_t> latest(g.size(), 0);  // the latest stage among named ancestors
    std::vector<ir::OperationId> latest_op(g.size());
    for (ir::NodeId node : topo.order) {
      const auto op = g.as_operation(node);
      if (!op) continue;
      for (const auto& in : g.operation(*op).inputs().entries()) {
        for (ir::OperationId p : g.producers(in.value.tensor)) {
          const bool named = named_stage[p.index()] != SIZE_MAX;
          const std::size_t s = named ? named_stage[p.index()] : latest[p.index()];
          if (s >= latest[op->index()] && (named || latest_op[p.index()].is_valid())) {
            latest[op->index()] = s;
            latest_op[op->index()] = named ? p : latest_op[p.index()];
          }
        }
      }
      const std::size_t mine = named_stage[op->index()];
      if (mine != SIZE_MAX && latest_op[op->index()].is_valid() && latest[op->index()] > mine) {
        fail(
            fmt::format("the stages are not contiguous in the forward order: {} (stage {}) "
                        "depends on {} (stage {}); a stage runs after the stages before it",
                        operation_name(g, *op), mine, operation_name(g, latest_op[op->index()]),
                        latest[op->index()]));
      }
    }
  }

  // The seed, then every operation's stage.
  const std::optional<ir::OperationId> seed = find_seed(state.graph);
  if (!seed) {
    fail(
        "the graph has no gradient seed (ones_like of a scalar loss: `tapestry grad`): nothing "
        "tells its backward pass from its forward pass");
  }
  const auto stages_of = [&](const ir::Graph& g) {
    std::vector<std::size_t> tensor_stage(g.size(), SIZE_MAX);  // anchors
    std::vector<std::size_t> op_stage(g.size(), SIZE_MAX);
    const auto anchor = [&](ir::TensorId t, std::size_t s) {
      std::size_t& a = tensor_stage[t.index()];
      a = a == SIZE_MAX ? s : std::max(a, s);
    };
    for (ir::OperationId op : g.operations()) {
      const std::size_t s = named_stage[op.index()];
      if (s == SIZE_MAX) continue;
      op_stage[op.index()] = s;
      for (const auto& in : g.operation(op).inputs().entries()) anchor(in.value.tensor, s);
      for (const auto& out : g.operation(op).outputs().entries()) anchor(out.value.tensor, s);
    }
    const GraphRoles roles = graph_roles(g);
    const auto weight_only = [&](ir::OperationId op) {  // transpose(W): what weights make
      for (const auto& in : g.operation(op).inputs().entries()) {
        if (!roles.is_weight(in.value.tensor)) return false;
      }
      return true;
    };
    for (ir::NodeId node : g.topological_order().order) {
      const auto op = g.as_operation(node);
      if (!op || op_stage[op->index()] != SIZE_MAX) continue;
      std::size_t by_anchor = SIZE_MAX, by_producer = SIZE_MAX;
      const auto most = [](std::size_t& to, std::size_t s) {
        if (s != SIZE_MAX) to = to == SIZE_MAX ? s : std::max(to, s);
      };
      for (const auto& in : g.operation(*op).inputs().entries()) {
        most(by_anchor, tensor_stage[in.value.tensor.index()]);
        for (ir::OperationId p : g.producers(in.value.tensor))
          most(by_producer, op_stage[p.index()]);
      }
      const std::size_t s =
          by_anchor != SIZE_MAX ? by_anchor : (by_producer != SIZE_MAX ? by_producer : 0);
      op_stage[op->index()] = s;
      if (weight_only(*op)) {
        for (const auto& out : g.operation(*op).outputs().entries()) anchor(out.value.tensor, s);
      }
    }
    return std::pair(tensor_stage, op_stage);
  };
  const std::string seed_name = operation_name(state.graph, *seed);
  const std::string loss_name = state.graph.display_name(
      (*state.graph.operation(*seed).inputs().entries().begin()).value.tensor);
  const std::string shape_name =
      rewire_seed(state, *seed, stages_of(state.graph).first, stages - 1);
  // The graph was copied: the named stages again, by name.
  named_stage.assign(state.graph.size(), SIZE_MAX);
  {
    const OperationFinder finder(state.graph);
    for (std::size_t s = 0; s < stages; ++s) {
      for (const std::string& name : pipe.stages[s]) {
        if (auto op = finder.find(name)) named_stage[op->index()] = s;
      }
    }
  }
  const ir::Graph& g = state.graph;
  const std::vector<std::size_t> op_stage = stages_of(g).second;
  const GraphRoles roles = graph_roles(g);
  const ir::OperationId new_seed = *find_operation(g, seed_name);
  // The backward pass: what depends on the seed, and what is ordered into it — a recomputed
  // copy (recompute.h) and what reads it run when the backward pass needs them.
  std::vector<char> backward = detail::descendants(g, new_seed);
  for (ir::OperationId op : g.operations()) {
    if (ir::after(g, op).empty()) continue;
    backward[op.index()] = 1;
    const std::vector<char> below = detail::descendants(g, op);
    for (std::size_t i = 0; i < below.size(); ++i) backward[i] |= below[i];
  }

  PipelineState out{.stages = stages, .microbatches = m, .schedule = pipe.schedule};
  std::vector<std::size_t> count(stages, 0), cut(stages, 0);
  for (const OperationRoles& r : roles.operations) {
    const std::size_t s = op_stage[r.id.index()];
    ++count[s];
    OpPlan& entry = state.plan.ops[r.name];
    if (is_placed(entry)) {
      fail(
          fmt::format("operation {} has a placement in the plan (place, mesh or colocate); a "
                      "pipeline places each stage's operations on the stage's device",
                      r.name));
    }
    entry.place = stage_devices(pipe, s);
    const auto group = static_cast<std::int64_t>(entry.place.size());
    std::optional<std::size_t> d = r.batch_dim();
    if (!d) d = r.batch_reduction_dim();
    PipelineState::Op& info = out.ops[r.name];
    info.stage = s;
    if (!d || m * group == 1) continue;
    const std::string& dim = r.dims[*d];
    if (r.extents[*d] % m != 0) {
      fail(
          fmt::format("{} microbatches do not divide the batch of {} ({} = {}): a pipeline cuts "
                      "the batch into equal microbatches",
                      m, r.name, dim, r.extents[*d]));
    }
    if (r.extents[*d] % (m * group) != 0) {
      fail(
          fmt::format("{} microbatches × {} devices of stage {} do not divide the batch of {} "
                      "({} = {}): a stage on a group of devices cuts each microbatch into one "
                      "equal piece per device",
                      m, group, s, r.name, dim, r.extents[*d]));
    }
    if (const auto it = entry.split.find(dim); it != entry.split.end() && it->second != 1) {
      fail(
          fmt::format("the plan splits the batch of {} ({} = {}) already; a pipeline's "
                      "microbatches are that split (data parallelism within a stage: a group "
                      "of devices, \"devices\": [[\"#0\", \"#1\"], …])",
                      r.name, dim, it->second));
    }
    entry.split[dim] = m * group;  // shard i: microbatch i / group on device i mod group
    info.microbatched = true;
    info.backward = backward[r.id.index()] != 0;
    ++cut[s];
  }
  for (ir::TensorId t : g.tensors()) {
    const std::vector<bool>& dims = roles.batch_dims(t);
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (!dims[d]) continue;
      out.batched.emplace(std::string(g.key(t)), std::pair(d, g.tensor(t).range().shape()[d]));
      break;
    }
  }
  state.pipeline = std::move(out);
  std::vector<std::string> parts;
  for (std::size_t s = 0; s < stages; ++s) {
    const std::vector<std::string> group = stage_devices(pipe, s);
    parts.push_back(fmt::format(
        "stage {} on {}{}: {} operations ({} cut into microbatches{})", s, fmt::join(group, ", "),
        group.size() > 1 ? fmt::format(" (data parallel ×{})", group.size()) : std::string(),
        count[s], cut[s],
        group.size() > 1 ? fmt::format(", each microbatch ×{}", group.size()) : std::string()));
  }
  log.push_back({std::string(kPipeline), seed_name, seed_name, true,
                 fmt::format("{}; {} microbatches, {}; the seed reads {} instead of {}",
                             fmt::join(parts, "; "), m, pipe.schedule, shape_name, loss_name)});
}

void write_pipeline_schedule(RewriteState& state) {
  if (!state.pipeline) return;
  const PipelineState& pipe = *state.pipeline;
  const std::int64_t m = pipe.microbatches;
  ir::Graph& g = state.graph;
  // A stage on a group of G devices cuts each microbatch into G pieces, piece j on the group's
  // device j (pipeline_operations): each device runs the schedule over its own pieces, so the
  // edges join the applications of one piece slot, never two devices.
  std::vector<std::int64_t> group_size(pipe.stages, 1);  // per stage: its devices
  if (state.plan.pipeline) {
    for (std::size_t s = 0; s < pipe.stages; ++s)
      group_size[s] = static_cast<std::int64_t>(stage_devices(*state.plan.pipeline, s).size());
  }
  // (stage, backward, microbatch, piece slot) → its applications.
  std::map<std::tuple<std::size_t, bool, std::int64_t, std::int64_t>,
           std::vector<ir::ApplicationId>>
      groups;
  // application index → (microbatch, piece slot)
  std::unordered_map<std::uint32_t, std::pair<std::int64_t, std::int64_t>> microbatch_of;
  // A large step (64-way cuts of 24 layers) has hundreds of thousands of applications, so a
  // search's deadline is checked along the way (support/cancel.h; lower's state is abandoned
  // whole).
  std::size_t seen = 0;
  for (ir::ApplicationId app : g.applications()) {
    if (++seen % 1024 == 0) support::check_cancelled();
    const ir::ApplicationView view = g.application(app);
    const std::string name = operation_name(g, view.operation());
    auto info = pipe.ops.find(name);
    if (info == pipe.ops.end()) info = pipe.ops.find(state.origin(name));
    if (info == pipe.ops.end() || !info->second.microbatched) continue;
    const std::int64_t group = group_size[info->second.stage];
    // The microbatch piece: the rows of a cut tensor it touches, when they lie in one piece.
    std::optional<std::int64_t> k;
    bool mixed = false;
    const auto look = [&](const ir::SelectionMap& map) {
      for (const auto& e : map.entries()) {
        const auto b = pipe.batched.find(g.key(e.value.tensor));
        if (b == pipe.batched.end() || e.value.range.is_empty()) continue;
        const auto [dim, extent] = b->second;
        const std::int64_t rows = extent / (m * group);
        const std::int64_t first =
            (e.value.range.start()[dim] - g.tensor(e.value.tensor).range().start()[dim]) / rows;
        const std::int64_t last =
            (e.value.range.end()[dim] - 1 - g.tensor(e.value.tensor).range().start()[dim]) / rows;
        if (first != last || (k && *k != first)) mixed = true;
        k = first;
      }
    };
    look(view.outputs());
    look(view.inputs());
    if (!k || mixed) continue;
    const std::pair piece(*k / group, *k % group);
    groups[{info->second.stage, info->second.backward, piece.first, piece.second}].push_back(app);
    microbatch_of[app.index()] = piece;
  }
  // "Every application of group B starts after every one of group A" needs only the edges from
  // B's sources to A's sinks: the applications of one group run on one device, and inside a
  // group the data edges (an application reading a box another one writes) order the rest — an
  // application of A precedes one of A's sinks, and one of B follows one of B's sources. The
  // start times and the program's order (a topological order taking the least id first, which
  // depends only on what precedes what) are those of the full edges, which join every
  // application of one group to every one of another: millions on a large step.
  struct Ends {
    std::vector<ir::ApplicationId> sources, sinks;
  };
  std::map<std::tuple<std::size_t, bool, std::int64_t, std::int64_t>, Ends> ends;
  for (const auto& [key, members] : groups) {
    support::check_cancelled();
    // What each member writes, by tensor; then who reads a box another member writes.
    std::unordered_map<std::uint32_t, std::vector<std::pair<std::size_t, zspace::Range>>> written;
    for (std::size_t i = 0; i < members.size(); ++i) {
      for (const auto& e : g.application(members[i]).outputs().entries())
        written[e.value.tensor.index()].emplace_back(i, e.value.range);
    }
    std::vector<char> has_before(members.size(), 0), has_after(members.size(), 0);
    for (std::size_t i = 0; i < members.size(); ++i) {
      for (const auto& e : g.application(members[i]).inputs().entries()) {
        const auto w = written.find(e.value.tensor.index());
        if (w == written.end()) continue;
        for (const auto& [j, box] : w->second) {
          if (j == i || !box.overlaps(e.value.range)) continue;
          has_before[i] = 1;
          has_after[j] = 1;
        }
      }
    }
    Ends& mine = ends[key];
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (!has_before[i]) mine.sources.push_back(members[i]);
      if (!has_after[i]) mine.sinks.push_back(members[i]);
    }
  }
  std::int64_t slot = 0;  // the piece slot the schedule below orders
  const Ends none;
  const auto apps = [&](std::size_t s, bool b, std::int64_t k) -> const Ends& {
    auto it = ends.find({s, b, k, slot});
    return it == ends.end() ? none : it->second;
  };
  std::map<std::uint32_t, std::vector<ir::ApplicationId>> after;
  const auto order = [&](const Ends& later, const Ends& earlier) {
    support::check_cancelled();
    for (ir::ApplicationId a : later.sources) {
      std::vector<ir::ApplicationId>& list = after[a.index()];
      list.insert(list.end(), earlier.sinks.begin(), earlier.sinks.end());
    }
  };
  for (std::size_t s = 0; s < pipe.stages; ++s) {
    for (slot = 0; slot < group_size[s]; ++slot) {
      if (pipe.schedule == "gpipe") {
        for (std::int64_t k = 0; k < m; ++k) order(apps(s, true, k), apps(s, false, m - 1));
        continue;
      }
      const std::int64_t w =
          std::min(static_cast<std::int64_t>(pipe.stages - s - 1), m - 1);  // warm-up forwards
      for (std::int64_t k = w + 1; k < m; ++k) order(apps(s, false, k), apps(s, true, k - w - 1));
      for (std::int64_t j = 0; j < m; ++j)
        order(apps(s, true, j), apps(s, false, std::min(j + w, m - 1)));
    }
  }
  // An operation's own ordering edges (a recomputed copy, a re-gather: ir/ordering.h) wait for
  // every writer of a tensor — every microbatch's, which the schedule may order after this very
  // microbatch. Each of its applications waits instead for the writers of its own microbatch
  // piece (an application of no microbatch, as a re-gather: of the first), as application edges.
  for (ir::OperationId op : g.operations()) {
    const std::vector<ir::TensorId> tensors = ir::after(g, op);
    if (tensors.empty()) continue;
    support::check_cancelled();
    for (ir::ApplicationId app : g.applications_of(op)) {
      const auto mine = microbatch_of.find(app.index());
      const std::pair<std::int64_t, std::int64_t> k =
          mine == microbatch_of.end() ? std::pair<std::int64_t, std::int64_t>(0, 0) : mine->second;
      std::vector<ir::ApplicationId>& list = after[app.index()];
      for (ir::TensorId t : tensors) {
        for (ir::OperationId writer : g.producers(t)) {
          for (ir::ApplicationId w : g.applications_of(writer)) {
            const auto theirs = microbatch_of.find(w.index());
            if (theirs == microbatch_of.end() || theirs->second == k) list.push_back(w);
          }
        }
      }
    }
    ir::set_after(g, op, {});
  }
  for (const auto& [index, list] : after) {
    support::check_cancelled();
    const ir::ApplicationId app{ir::NodeId(index)};
    ir::set_application_after(g, app, list);
  }
}

}  // namespace tapestry::rewrite
