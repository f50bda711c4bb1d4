// The zero pass (zero.h): per parameter, its update sliced, its new value replicated (stages
// 1–2) or its readers moved onto gathered copies (stage 3), the backward readers onto a re-gather
// that starts late.
#include "tapestry/rewrite/zero.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "graph_walk.h"
#include "op_spec.h"
#include "tapestry/ir/dtype.h"
#include "tapestry/ir/ordering.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/signature.h"
#include "tapestry/rewrite/fresh_names.h"
#include "tapestry/rewrite/graph_copy.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/format.h"

namespace tapestry::rewrite {

namespace {

using detail::descendants;
using detail::names_of;
using detail::OpSpec;
using detail::Port;

const Port* port(const std::vector<Port>& ports, std::string_view name) {
  for (const Port& p : ports) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// Readers of the parameter (its update excluded) split into the forward's and the backward's:
// a reader is a backward one when every path from it to the graph's results meets an operation
// that depends on another reader (zero.h).
struct Readers {
  std::vector<ir::OperationId> early, late;  // graph order
};

Readers classify(const ir::Graph& g, std::span<const ir::OperationId> readers) {
  Readers out;
  std::vector<std::vector<char>> below;  // per reader, its descendants
  for (ir::OperationId r : readers) below.push_back(descendants(g, r));
  for (std::size_t i = 0; i < readers.size(); ++i) {
    // Dep: the operations depending on another reader (the other readers' descendants).
    const auto depends_on_other = [&](ir::OperationId op) {
      for (std::size_t j = 0; j < readers.size(); ++j) {
        if (j != i && (below[j][op.index()] != 0 || readers[j] == op)) return true;
      }
      return false;
    };
    bool late = readers.size() > 1;
    std::vector<char> seen(g.size(), 0);
    std::vector<ir::OperationId> stack = {readers[i]};
    while (late && !stack.empty()) {
      const ir::OperationId op = stack.back();
      stack.pop_back();
      if (op != readers[i] && depends_on_other(op)) continue;  // this path meets the other use
      if (op == readers[i] && depends_on_other(op)) break;     // it is itself after another
      bool leaf = true;
      for (const auto& o : g.operation(op).outputs().entries()) {
        if (metakernel::is_graph_output(g, o.value.tensor)) late = false;
        for (ir::OperationId next : g.consumers(o.value.tensor)) {
          leaf = false;
          if (seen[next.index()] == 0) {
            seen[next.index()] = 1;
            stack.push_back(next);
          }
        }
      }
      if (leaf) late = false;
    }
    (late ? out.late : out.early).push_back(readers[i]);
  }
  return out;
}

// What the re-gather for `late` (the backward readers, graph order) starts after: the computed
// inputs, not made downstream of a late reader, of the first operation (in graph order) among
// the late readers and their descendants that reads any.
std::vector<ir::TensorId> regather_after(const ir::Graph& g, std::span<const ir::OperationId> late,
                                         ir::TensorId param) {
  std::vector<char> downstream(g.size(), 0);  // the late readers and their descendants
  for (ir::OperationId r : late) {
    downstream[r.index()] = 1;
    const std::vector<char> below = descendants(g, r);
    for (std::size_t k = 0; k < below.size(); ++k) downstream[k] |= below[k];
  }
  for (ir::OperationId op : g.operations()) {
    if (downstream[op.index()] == 0) continue;
    std::vector<ir::TensorId> after;
    for (const auto& in : g.operation(op).inputs().entries()) {
      const ir::TensorId t = in.value.tensor;
      if (t == param) continue;
      const std::span<const ir::OperationId> producers = g.producers(t);
      if (producers.empty()) continue;  // a graph input: there from the start
      if (std::any_of(producers.begin(), producers.end(),
                      [&](ir::OperationId p) { return downstream[p.index()] != 0; }))
        continue;
      if (std::find(after.begin(), after.end(), t) == after.end()) after.push_back(t);
    }
    if (!after.empty()) return after;
  }
  return {};
}

// Adds `gather = cast(param, to=<its dtype>)`, split along its dim 0 like the update (on mesh
// axis `axis` when given).
ir::OperationId add_gather(RewriteState& state, ir::TensorId param, const std::string& name,
                           std::string_view from, std::int64_t shards, const std::string& axis) {
  ir::Graph& g = state.graph;
  const metakernel::TensorType type = metakernel::tensor_type(g, param);
  const metakernel::Argument args[] = {{name, type}};
  const metakernel::Signature sig = metakernel::evaluate_signature(
      state.signatures->get("cast"), args, {{"to", std::string(ir::dtype_short_name(type.dtype))}});
  metakernel::AddedOperation added = metakernel::add_operation(
      g, sig, std::span<const ir::TensorId>(&param, 1), name, {.add_application = false});
  const std::string dim0 = g.operation(added.operation).index_name(0);
  OpPlan plan{.split = {{dim0, shards}}};
  if (!axis.empty()) plan.mesh = {{dim0, axis}};
  const OpPlan chosen = state.plan_of_new(added.operation, from, kZero, plan);
  if (!is_empty(chosen)) state.plan.ops[name] = chosen;
  return added.operation;
}

}  // namespace

bool is_optimizer_kernel(std::string_view kernel) {
  return std::find(std::begin(kOptimizerKernels), std::end(kOptimizerKernels), kernel) !=
         std::end(kOptimizerKernels);
}

void shard_parameters(RewriteState& state, std::vector<RewriteEvent>& log) {
  if (!state.plan.zero) return;
  const ZeroPlan zero = *state.plan.zero;
  ir::Graph& g = state.graph;
  FreshNames names(g, state.plan);
  const std::vector<ir::OperationId> original_order(g.operations().begin(), g.operations().end());
  std::unordered_map<std::uint32_t, std::vector<ir::OperationId>> before;  // op → gathers first
  std::unordered_map<std::uint32_t, ir::OperationId> replaced;             // reader → its copy
  std::map<std::uint32_t, std::map<std::uint32_t, ir::TensorId>> rewire;  // reader → param → copy
  std::vector<std::pair<std::string, std::vector<std::string>>> edges;  // re-gather → tensor keys
  const auto refuse = [&](const std::string& param, std::string why) {
    log.push_back({std::string(kZero), param, param, false, std::move(why)});
  };
  for (const std::string& name : zero.params) {
    const ir::Graph::Named found = g.find_named(ir::NodeKind::kTensor, name);
    if (!found.node) continue;  // check_plan reports it
    const ir::TensorId param(*found.node);
    std::vector<ir::OperationId> updates, readers;
    for (ir::OperationId op : g.consumers(param)) {
      const ir::OperationView view = g.operation(op);
      bool as_param = false;
      if (is_optimizer_kernel(view.kernel()) && !detail::why_not_rewritable(g, op)) {
        const detail::OpSpec spec = detail::spec_of(g, op);  // `port` points into it
        const Port* p = port(spec.inputs, "param");
        as_param = p != nullptr && p->tensor == param;
      }
      (as_param ? updates : readers).push_back(op);
    }
    if (updates.empty()) {  // optimizer state (a pattern like "W*" matches W1_v too)?
      std::optional<ir::OperationId> owner;
      for (ir::OperationId op : readers) {
        if (is_optimizer_kernel(g.operation(op).kernel())) owner = op;
      }
      if (owner) {
        std::string of;
        if (!detail::why_not_rewritable(g, *owner)) {
          const detail::OpSpec spec = detail::spec_of(g, *owner);  // `port` points into it
          if (const Port* p = port(spec.inputs, "param")) of = g.display_name(p->tensor);
        }
        if (!of.empty() &&
            std::find(zero.params.begin(), zero.params.end(), of) != zero.params.end())
          continue;  // sharded with its parameter
        refuse(name, fmt::format("it is optimizer state of {}, sharded with its parameter{}",
                                 operation_name(g, *owner),
                                 of.empty() ? std::string() : fmt::format(": name {}", of)));
        continue;
      }
    }
    if (updates.size() != 1) {
      refuse(name, updates.empty()
                       ? fmt::format("no optimizer update ({}) reads {} as its param: nothing "
                                     "updates it shard by shard",
                                     fmt::join(kOptimizerKernels, ", "), name)
                       : fmt::format("{} optimizer updates read it ({}): ZeRO shards a parameter "
                                     "with the one update that owns its state",
                                     updates.size(), names_of(g, updates)));
      continue;
    }
    const zspace::Range& range = g.tensor(param).range();
    if (range.start() != zspace::Point::zeros(range.rank())) {
      refuse(name, fmt::format("it starts at {}, not the origin; its gathered copy would not",
                               g.tensor(param).range().start()));
      continue;
    }
    const ir::OperationId update = updates[0];
    const std::string update_name = operation_name(g, update);
    const OpSpec spec = detail::spec_of(g, update);
    const std::string& dim0 = spec.index_names.at(0);
    OpPlan& entry = state.plan.ops[update_name];
    entry.split = {{dim0, zero.shards}};
    if (!zero.axis.empty() && entry.place.empty() && !entry.colocate)
      entry.mesh = {{dim0, zero.axis}};
    std::vector<std::string> states;  // the update's other graph inputs: optimizer state
    for (const Port& in : spec.inputs) {
      if (in.name == "param" || in.name == "grad" || in.tensor == param ||
          !g.producers(in.tensor).empty() || g.tensor(in.tensor).range().rank() == 0)
        continue;
      states.push_back(g.display_name(in.tensor));
    }
    const Port* result = port(spec.outputs, "result");
    const std::string next = result ? g.display_name(result->tensor) : std::string();
    const bool next_is_output = result && metakernel::is_graph_output(g, result->tensor);
    std::vector<std::string> did = {fmt::format(
        "{} split {}={}{}", update_name, dim0, zero.shards,
        states.empty() ? std::string() : fmt::format(" (state {})", fmt::join(states, ", ")))};
    if (zero.stage < 3) {
      if (next_is_output && !state.plan.outputs.contains(next)) {
        state.plan.outputs[next] = {.replicate =
                                        zero.axis.empty() ? std::string(kReplicateAll) : zero.axis};
        did.push_back(fmt::format("{} replicated", next));
      }
      log.push_back({std::string(kZero), name, name, true,
                     fmt::format("stage {}: {}", zero.stage, fmt::join(did, "; "))});
      continue;
    }
    if (next_is_output && state.plan.outputs.erase(next) > 0)
      did.push_back(fmt::format("{} left sharded (its replicate dropped)", next));
    const Readers split = classify(g, readers);
    if (!split.early.empty()) {
      const std::string gname = names.take(name + "/gather");
      const ir::OperationId gop =
          add_gather(state, param, gname, update_name, zero.shards, zero.axis);
      const ir::TensorId copy = (*g.operation(gop).outputs().entries().begin()).value.tensor;
      before[split.early.front().index()].push_back(gop);
      for (ir::OperationId r : split.early) rewire[r.index()][param.index()] = copy;
      did.push_back(fmt::format("{} for {}", gname, names_of(g, split.early)));
    }
    if (!split.late.empty()) {
      const std::string rname = names.take(name + "/regather");
      const std::vector<ir::TensorId> after = regather_after(g, split.late, param);
      const ir::OperationId rop =
          add_gather(state, param, rname, update_name, zero.shards, zero.axis);
      const ir::TensorId copy = (*g.operation(rop).outputs().entries().begin()).value.tensor;
      before[split.late.front().index()].push_back(rop);
      for (ir::OperationId r : split.late) rewire[r.index()][param.index()] = copy;
      std::vector<std::string> after_names;
      for (ir::TensorId t : after) after_names.push_back(g.display_name(t));
      did.push_back(fmt::format(
          "{} for {}{}", rname, names_of(g, split.late),
          after.empty() ? std::string()
                        : fmt::format(", starts after {}", fmt::join(after_names, ", "))));
      std::vector<std::string> keys;
      for (ir::TensorId t : after) keys.emplace_back(g.key(t));
      if (!keys.empty()) edges.emplace_back(rname, std::move(keys));
    }
    log.push_back(
        {std::string(kZero), name, name, true, fmt::format("stage 3: {}", fmt::join(did, "; "))});
  }
  if (before.empty()) return;

  // The readers read the gathers: each is replaced by the same operation reading them.
  for (const auto& [index, copies] : rewire) {
    const ir::OperationId use{ir::NodeId(index)};
    OpSpec s = detail::spec_of(g, use);
    for (Port& in : s.inputs) {
      if (auto it = copies.find(in.tensor.index()); it != copies.end()) in.tensor = it->second;
    }
    const ir::NodeId removed[] = {use};
    g.remove(removed);
    replaced[index] = detail::add_op(g, s);
  }
  // The graph in its new order: each gather just before its first reader.
  state.graph = copy_graph_in_order(g, detail::reordered(original_order, before, replaced)).graph;
  ir::Graph& h = state.graph;
  std::vector<ir::OperationId> regathers;  // found first: set_after may move the labels the
  {                                        // finder indexes (find_operation scans per name)
    const OperationFinder finder(h);
    for (const auto& edge : edges) regathers.push_back(*finder.find(edge.first));
  }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const auto& [name, keys] = edges[i];
    std::vector<ir::TensorId> tensors;
    for (const std::string& key : keys) {
      state.ordering_tensors.emplace(key);
      tensors.push_back(*h.as_tensor(*h.find(key)));
    }
    state.after[name] = keys;
    ir::set_after(h, regathers[i], tensors);
  }
  if (const ir::TopologicalOrder topo = h.topological_order(); !topo.cycle.empty()) {
    throw Error(fmt::format(
        "zero: the re-gathers' ordering edges form a cycle through {} operations (each waits "
        "for what the first backward use of its parameter reads); shard fewer parameters at "
        "stage 3",
        topo.cycle.size()));
  }
}

}  // namespace tapestry::rewrite
