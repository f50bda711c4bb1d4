// Standard plans: data parallel, Megatron tensor parallel (with all-reduce or reduce-scatter), and
// 2-D data × tensor on the target's mesh, read off the graph's structure (standard_plans.h).
#include "tapestry/cost/standard_plans.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tapestry/cost/graph_roles.h"
#include "tapestry/cost/placement.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/rewrite/zero.h"
#include "tapestry/support/error.h"

namespace tapestry::cost {

namespace {

using rewrite::Plan;

// The largest divisor of `g` (>= 1) not above `n`.
std::int64_t largest_divisor(std::int64_t g, std::int64_t n) {
  for (std::int64_t p = std::min(g, n); p > 1; --p) {
    if (g % p == 0) return p;
  }
  return 1;
}

std::string count_text(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// ---- data parallel -------------------------------------------------------------------------

// The first index dim of `op` that is not a reduction and that `p` divides: where a training
// step's update (sgd, adam after the combined gradient) is cut, one slice per device.
std::optional<std::size_t> slice_dim(const OperationRoles& op, std::int64_t p) {
  for (std::size_t d = 0; d < op.dims.size(); ++d) {
    if (!op.reductions[d] && op.extents[d] % p == 0) return d;
  }
  return std::nullopt;
}

StandardPlan data_parallel(const ir::Graph& graph, const GraphRoles& roles, const Target& target) {
  StandardPlan s{.name = "data-parallel", .plan = std::nullopt, .summary = {}, .reason = {}};
  // The dim each operation cuts: its batch-like dim, else (a training step's weight gradients
  // and loss) the batch-like reduction it sums the samples over.
  const auto cut = [](const OperationRoles& op) {
    const std::optional<std::size_t> d = op.batch_dim();
    return d ? d : op.batch_reduction_dim();
  };
  std::int64_t g = 0;
  std::vector<std::string> whole;
  for (const OperationRoles& op : roles.operations) {
    if (auto d = cut(op)) {
      g = std::gcd(g, op.extents[*d]);
    } else {
      whole.push_back(op.name);
    }
  }
  if (g == 0) {
    s.reason =
        "no operation has a batch-like dim (no graph input's leading dim reaches an "
        "operation's result: graph_roles.h)";
    return s;
  }
  const auto devices = static_cast<std::int64_t>(target.devices.size());
  const std::int64_t p = largest_divisor(g, devices);
  if (p < 2) {
    s.reason = devices < 2 ? fmt::format("the target has one device")
                           : fmt::format(
                                 "no count from 2 to {} divides every batch-like dim "
                                 "(their greatest common divisor is {})",
                                 devices, g);
    return s;
  }
  Plan plan;
  for (const OperationRoles& op : roles.operations) {
    if (auto d = cut(op)) plan.ops[op.name].split[op.dims[*d]] = p;
  }
  // A training step: the operations past the batch that read it (the updates of the weights,
  // after their gradients' combine) are cut p ways along their first dim — each device updates
  // a slice, as ZeRO's optimizer step does — and the graph outputs they write are replicated on
  // every device, so the gradients' reduce-scatter and the new weights' all-gather together are
  // data parallelism's all-reduce, and every replica ends the step with the whole new weights.
  std::set<std::uint32_t> graph_outputs;
  for (ir::TensorId t : metakernel::graph_outputs(graph)) graph_outputs.insert(t.index());
  std::size_t sliced = 0;
  std::erase_if(whole, [&](const std::string& name) {
    const OperationRoles& op = roles.operations[*roles.find(name)];
    const bool past_batch = std::any_of(op.inputs.begin(), op.inputs.end(), [&](const auto& in) {
      return !roles.is_weight(in.tensor);
    });
    const std::optional<std::size_t> d = slice_dim(op, p);
    if (!past_batch || !d) return false;
    plan.ops[op.name].split[op.dims[*d]] = p;
    for (const PortRoles& port : op.outputs) {
      if (graph_outputs.contains(port.tensor.index())) {
        plan.outputs[rewrite::output_name(graph, port.tensor)].replicate =
            std::string(rewrite::kReplicateAll);
      }
    }
    ++sliced;
    return true;
  });
  plan.fuse_auto = true;
  s.plan = std::move(plan);
  s.summary = fmt::format("data parallel ×{}", p);
  if (sliced > 0) {
    s.summary += fmt::format(", {} past the batch sliced ×{} (ZeRO-style; outputs replicated)",
                             count_text(sliced, "operation", "operations"), p);
  }
  if (!whole.empty()) {
    s.summary += fmt::format(" ({} without a batch-like dim whole on {})",
                             count_text(whole.size(), "operation", "operations"),
                             target.devices.front().name);
  }
  return s;
}

// ---- tensor parallel: column → row pairs ----------------------------------------------------

// What the pairs cut, per operation (positions in GraphRoles::operations).
struct Pairs {
  std::vector<std::optional<std::size_t>> cut;  // the index dim a pair cuts
  std::vector<std::uint8_t> row_end;
  std::vector<std::optional<std::size_t>> between;  // the dim cut between layers
  std::int64_t gcd = 0;                             // of every pair-cut dim's extent
  std::size_t columns = 0, rows = 0;
  std::vector<std::string> dropped;  // column starts whose region was dropped, and why
};

// The `out` dim of a linear whose w is a weight: a column start candidate.
std::optional<std::size_t> column_dim(const GraphRoles& roles, const OperationRoles& op) {
  if (op.kernel != "linear") return std::nullopt;
  for (const PortRoles& port : op.inputs) {
    if (port.name == "w" && roles.is_weight(port.tensor) && !port.follows.empty() &&
        port.follows[0] && !op.reductions[*port.follows[0]]) {
      return port.follows[0];
    }
  }
  return std::nullopt;
}

bool is_row_kernel(std::string_view kernel) {
  return kernel == "linear" || kernel == "matmul" || kernel == "linear_nobias";
}

// One propagation of the cuts from the `active` column starts (step 2 of pairs_of).
struct Propagation {
  std::vector<std::optional<std::size_t>> cut;
  std::vector<std::uint8_t> row_end;
  std::vector<std::uint8_t> started;  // a column start this round
  std::vector<std::uint8_t> bad;      // by start: its region cannot be cut
  std::vector<std::uint8_t> reaches;  // by start: its region reaches a row end
  std::vector<std::string> why;       // by start: why it is bad
};

Propagation propagate(const ir::Graph& graph, const GraphRoles& roles,
                      const std::vector<std::uint8_t>& active) {
  const std::size_t n = roles.operations.size();
  Propagation r{.cut = std::vector<std::optional<std::size_t>>(n),
                .row_end = std::vector<std::uint8_t>(n, 0),
                .started = std::vector<std::uint8_t>(n, 0),
                .bad = std::vector<std::uint8_t>(n, 0),
                .reaches = std::vector<std::uint8_t>(n, 0),
                .why = std::vector<std::string>(n)};
  // By tensor node index: the cut tensor dim and the starts whose cut reaches it.
  std::vector<std::optional<std::size_t>> tensor_cut(graph.size());
  std::vector<std::set<std::size_t>> origins(graph.size());
  const auto mark_bad = [&](const std::set<std::size_t>& from, const std::string& why) {
    for (std::size_t s : from) {
      if (r.bad[s] == 0) r.why[s] = why;
      r.bad[s] = 1;
    }
  };
  for (std::size_t i = 0; i < n; ++i) {
    const OperationRoles& op = roles.operations[i];
    std::set<std::size_t> from;
    std::set<std::optional<std::size_t>> dims;
    for (const PortRoles& port : op.inputs) {
      const std::size_t t = port.tensor.index();
      if (!tensor_cut[t]) continue;
      from.insert(origins[t].begin(), origins[t].end());
      dims.insert(*tensor_cut[t] < port.follows.size() ? port.follows[*tensor_cut[t]]
                                                       : std::nullopt);
    }
    std::optional<std::size_t> d;
    if (from.empty()) {
      if (active[i] == 0) continue;
      d = column_dim(roles, op);
      from = {i};
      r.started[i] = 1;
    } else if (dims.size() != 1 || !*dims.begin()) {
      mark_bad(from, fmt::format("'{}' would be cut along two dims, or along none", op.name));
      continue;
    } else {
      d = *dims.begin();
      if (op.reductions[*d]) {
        if (*op.reductions[*d] == ir::Monoid::kSum && is_row_kernel(op.kernel)) {
          r.cut[i] = d;
          r.row_end[i] = 1;
          for (std::size_t s : from) r.reaches[s] = 1;
        } else {
          mark_bad(from, fmt::format("'{}' ({}) would split its reduction '{}'", op.name, op.kernel,
                                     op.dims[*d]));
        }
        continue;
      }
    }
    r.cut[i] = d;
    for (const PortRoles& port : op.outputs) {
      for (std::size_t row = 0; row < port.follows.size(); ++row) {
        if (port.follows[row] != d) continue;
        tensor_cut[port.tensor.index()] = row;
        origins[port.tensor.index()] = from;
        break;
      }
    }
  }
  return r;
}

// The operations downstream of a row end outside every pair (step 3 of pairs_of).
std::vector<std::uint8_t> downstream_of_rows(const ir::Graph& graph, const GraphRoles& roles,
                                             const Propagation& r) {
  const std::size_t n = roles.operations.size();
  std::vector<std::uint8_t> below(n, 0);
  std::vector<std::uint8_t> tensor_below(graph.size(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    const OperationRoles& op = roles.operations[i];
    bool reads = false;
    for (const PortRoles& port : op.inputs) reads = reads || tensor_below[port.tensor.index()] != 0;
    const bool in_pair = r.cut[i].has_value();
    if (reads && !in_pair) below[i] = 1;
    if (r.row_end[i] != 0 || below[i] != 0) {
      for (const PortRoles& port : op.outputs) tensor_below[port.tensor.index()] = 1;
    }
  }
  return below;
}

// The dim an operation between layers is cut along: the index dim its first output's last dim
// (hidden) or dim 0 (rows) follows, if that is not a reduction; the other one when it is.
std::optional<std::size_t> between_dim(const OperationRoles& op, bool rows) {
  if (op.outputs.empty() || op.outputs[0].follows.empty()) return std::nullopt;
  const auto& follows = op.outputs[0].follows;
  for (const auto& d : rows ? std::vector{follows.front(), follows.back()}
                            : std::vector{follows.back(), follows.front()}) {
    if (d && !op.reductions[*d]) return d;
  }
  return std::nullopt;
}

// 1. Every linear whose w is a weight is a candidate column start. 2. Cuts propagate from the
// active starts; a start whose region reaches no row end, or cannot be cut, is dropped, and the
// propagation runs again until every region stands. 3. The operations between layers.
Pairs pairs_of(const ir::Graph& graph, const GraphRoles& roles, bool rows_between) {
  const std::size_t n = roles.operations.size();
  std::vector<std::uint8_t> active(n, 0);
  for (std::size_t i = 0; i < n; ++i) active[i] = column_dim(roles, roles.operations[i]) ? 1 : 0;
  Pairs pairs;
  Propagation r;
  for (;;) {
    r = propagate(graph, roles, active);
    bool dropped = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (r.started[i] == 0) continue;
      if (r.bad[i] == 0 && r.reaches[i] != 0) continue;
      pairs.dropped.push_back(
          fmt::format("{}: {}", roles.operations[i].name,
                      r.bad[i] != 0 ? r.why[i] : "its cut reaches no row-parallel linear"));
      active[i] = 0;
      dropped = true;
    }
    if (!dropped) break;
  }
  pairs.cut = r.cut;
  pairs.row_end = r.row_end;
  for (std::size_t i = 0; i < n; ++i) {
    if (!r.cut[i]) continue;
    pairs.gcd = std::gcd(pairs.gcd, roles.operations[i].extents[*r.cut[i]]);
    pairs.rows += r.row_end[i];
    pairs.columns += r.started[i];
  }
  pairs.between.assign(n, std::nullopt);
  const std::vector<std::uint8_t> below = downstream_of_rows(graph, roles, r);
  for (std::size_t i = 0; i < n; ++i) {
    if (below[i] != 0) pairs.between[i] = between_dim(roles.operations[i], rows_between);
  }
  return pairs;
}

std::string no_pairs_reason(const Pairs& pairs) {
  if (pairs.dropped.empty()) {
    return "the graph has no column → row pair (no linear with a weight whose cut output reaches "
           "another linear's reduction dim)";
  }
  return fmt::format("no column → row pair stands ({})", fmt::join(pairs.dropped, "; "));
}

// The mesh axes 2d uses: {data, tensor}.
std::optional<std::pair<MeshAxis, MeshAxis>> data_tensor_axes(const Target& target,
                                                              std::string& reason) {
  const std::vector<MeshAxis> axes = target.mesh_axes();
  const auto named = [&](std::string_view name) -> std::optional<MeshAxis> {
    for (const MeshAxis& a : axes) {
      if (a.name == name) return a;
    }
    return std::nullopt;
  };
  if (auto dp = named("dp"), tp = named("tp"); dp && tp) return std::pair{*dp, *tp};
  if (axes.size() == 2) return std::pair{axes[0], axes[1]};
  std::vector<std::string> shown;
  for (const MeshAxis& a : axes) shown.push_back(fmt::format("{}={}", a.name, a.size));
  reason = fmt::format(
      "the target's mesh has {} ({}); 2d needs two axes, named dp and tp or in that order (a "
      "target with \"mesh\": {{\"dp\": 2, \"tp\": 4}})",
      count_text(axes.size(), "axis", "axes"), fmt::join(shown, " × "));
  return std::nullopt;
}

// Megatron (both forms) and 2d: the pairs cut `p` ways, on the tensor axis for 2d, with the
// batch-like dims on the data axis.
StandardPlan tensor_parallel(const ir::Graph& graph, const GraphRoles& roles, const Target& target,
                             std::string_view name) {
  StandardPlan s{.name = std::string(name), .plan = std::nullopt, .summary = {}, .reason = {}};
  const bool two_d = name == "2d";
  const bool rows_between = name == "megatron-rs";
  std::optional<std::pair<MeshAxis, MeshAxis>> axes;
  if (two_d) {
    axes = data_tensor_axes(target, s.reason);
    if (!axes) return s;
  }
  const Pairs pairs = pairs_of(graph, roles, rows_between);
  if (pairs.rows == 0) {
    s.reason = no_pairs_reason(pairs);
    return s;
  }
  const auto devices = static_cast<std::int64_t>(target.devices.size());
  const std::int64_t limit = two_d ? axes->second.size : devices;
  const std::int64_t p = two_d ? limit : largest_divisor(pairs.gcd, limit);
  if (p < 2 || pairs.gcd % p != 0) {
    s.reason = fmt::format(
        "no tensor-parallel count {} divides every dim the pairs cut (their greatest common "
        "divisor is {})",
        two_d ? fmt::format("{} (the {} axis)", p, axes->second.name)
              : fmt::format("from 2 to {}", limit),
        pairs.gcd);
    return s;
  }
  std::int64_t dp = 1;
  if (two_d) {
    dp = axes->first.size;
    std::int64_t g = 0;
    for (std::size_t i = 0; i < roles.operations.size(); ++i) {
      const OperationRoles& op = roles.operations[i];
      if (auto d = op.batch_dim(); d && d != pairs.cut[i]) g = std::gcd(g, op.extents[*d]);
    }
    if (g == 0 || g % dp != 0) {
      s.reason = fmt::format("the data axis {}={} does not divide every batch-like dim ({})",
                             axes->first.name, dp,
                             g == 0 ? "the graph has none" : fmt::format("their gcd is {}", g));
      return s;
    }
  }
  Plan plan;
  for (std::size_t i = 0; i < roles.operations.size(); ++i) {
    const OperationRoles& op = roles.operations[i];
    const std::optional<std::size_t> cut = pairs.cut[i] ? pairs.cut[i] : pairs.between[i];
    if (cut && op.extents[*cut] >= p) {
      rewrite::OpPlan& entry = plan.ops[op.name];
      entry.split[op.dims[*cut]] = p;
      if (two_d) entry.mesh[op.dims[*cut]] = axes->second.name;
    }
    if (!two_d) continue;
    if (auto d = op.batch_dim(); d && d != cut) {
      rewrite::OpPlan& entry = plan.ops[op.name];
      entry.split[op.dims[*d]] = dp;
      entry.mesh[op.dims[*d]] = axes->first.name;
    }
  }
  // megatron and 2d leave every graph output whole on each device of its tensor group, as
  // Megatron-LM's all-reduce does: replicated (an all-gather after the combine's reduce-scatter:
  // together the all-reduce); megatron-rs leaves them cut by rows (sequence parallelism).
  if (!rows_between) {
    std::set<std::uint32_t> graph_outputs;
    for (ir::TensorId t : metakernel::graph_outputs(graph)) graph_outputs.insert(t.index());
    for (const OperationRoles& op : roles.operations) {
      if (!plan.ops.contains(op.name)) continue;
      for (const PortRoles& port : op.outputs) {
        if (!graph_outputs.contains(port.tensor.index())) continue;
        plan.outputs[rewrite::output_name(graph, port.tensor)].replicate =
            two_d ? axes->second.name : std::string(rewrite::kReplicateAll);
      }
    }
  }
  plan.fuse_auto = true;
  s.plan = std::move(plan);
  const std::string pairs_text = count_text(pairs.rows, "column → row pair", "column → row pairs");
  if (two_d) {
    s.summary = fmt::format("2-D: data {} × tensor {} (mesh axes {} × {}), {}", dp, p,
                            axes->first.name, axes->second.name, pairs_text);
  } else {
    const bool between = std::any_of(pairs.between.begin(), pairs.between.end(),
                                     [](const auto& d) { return d.has_value(); });
    s.summary = fmt::format("tensor parallel ×{} (Megatron{}), {}{}", p,
                            rows_between && between ? " with sequence parallelism" : "", pairs_text,
                            rows_between && !between
                                ? ", nothing between layers to cut by rows (the megatron cuts)"
                                : "");
  }
  return s;
}

// ---- training steps: ZeRO-3 and Megatron with recomputation ---------------------------------

bool is_update(const OperationRoles& op) {
  return rewrite::is_optimizer_kernel(op.kernel);
}

// The parameter an optimizer update reads (its `param` port).
std::optional<ir::TensorId> param_of(const OperationRoles& op) {
  for (const PortRoles& port : op.inputs) {
    if (port.name == "param") return port.tensor;
  }
  return std::nullopt;
}

TrainingRoles training_roles_of(const ir::Graph& graph, const GraphRoles& roles) {
  TrainingRoles t;
  // The gradient seed: ones_like of a computed scalar.
  std::optional<ir::TensorId> loss;
  for (const OperationRoles& op : roles.operations) {
    if (op.kernel != "ones_like" || op.inputs.size() != 1) continue;
    const ir::TensorId x = op.inputs[0].tensor;
    if (graph.tensor(x).range().rank() == 0 && !graph.producers(x).empty()) {
      loss = x;
      break;
    }
  }
  if (!loss) return t;
  t.loss = rewrite::output_name(graph, *loss);
  for (const OperationRoles& op : roles.operations) {
    if (!is_update(op)) continue;
    if (std::optional<ir::TensorId> p = param_of(op); p && graph.producers(*p).empty()) {
      t.parameters.push_back(rewrite::output_name(graph, *p));
      const zspace::Range range = graph.tensor(*p).range();
      t.parameter_rows.push_back(range.rank() > 0 ? range.extent(0) : 1);
    }
  }
  if (t.parameters.empty()) return t;
  // The forward pass: what the loss depends on.
  const std::size_t n = roles.operations.size();
  std::vector<std::uint8_t> forward(n, 0);
  std::vector<ir::TensorId> todo = {*loss};
  std::set<std::uint32_t> visited;
  while (!todo.empty()) {
    const ir::TensorId x = todo.back();
    todo.pop_back();
    if (!visited.insert(x.index()).second) continue;
    for (ir::OperationId p : graph.producers(x)) {
      const std::optional<std::size_t> at = roles.position(p);
      if (!at || forward[*at] != 0) continue;
      forward[*at] = 1;
      for (const PortRoles& port : roles.operations[*at].inputs) todo.push_back(port.tensor);
    }
  }
  // Checkpoints: with the forward operations in topological order, a result is a cut when every
  // activation written before it (the data inputs included) has its last forward reader at or
  // before its writer.
  std::vector<std::size_t> order;                    // positions of the forward operations
  std::map<std::uint32_t, std::size_t> last_reader;  // tensor → its last forward reader's step
  std::map<std::uint32_t, std::size_t> first_reader;
  std::set<std::uint32_t> data_inputs;
  for (std::size_t i = 0; i < n; ++i) {
    if (forward[i] == 0) continue;
    for (const PortRoles& port : roles.operations[i].inputs) {
      if (roles.is_weight(port.tensor)) continue;
      last_reader[port.tensor.index()] = order.size();
      first_reader.emplace(port.tensor.index(), order.size());
      if (roles.is_activation(port.tensor)) data_inputs.insert(port.tensor.index());
    }
    order.push_back(i);
  }
  // A data input counts from its first forward reader on (the target of a loss is read last).
  std::map<std::size_t, std::size_t> data_open;  // first reader's step → latest last reader
  for (std::uint32_t tensor : data_inputs) {
    std::size_t& at = data_open[first_reader.at(tensor)];
    at = std::max(at, last_reader.at(tensor));
  }
  std::size_t open = 0;  // the latest last reader of what was written (or read) before this step
  for (std::size_t step = 0; step < order.size(); ++step) {
    const OperationRoles& op = roles.operations[order[step]];
    if (auto d = data_open.find(step); d != data_open.end()) open = std::max(open, d->second);
    const bool reads_activation =
        std::any_of(op.inputs.begin(), op.inputs.end(),
                    [&](const auto& p) { return !roles.is_weight(p.tensor); });
    const bool cut = open <= step && op.outputs.size() == 1;
    for (const PortRoles& port : op.outputs) {
      if (auto r = last_reader.find(port.tensor.index()); r != last_reader.end()) {
        open = std::max(open, r->second);
      }
    }
    if (cut && reads_activation) {
      t.checkpoints.push_back(op.name);
    }
    t.forward.push_back(op.name);
    const bool loss_op = std::any_of(op.outputs.begin(), op.outputs.end(),
                                     [&](const auto& p) { return p.tensor == *loss; });
    if (reads_activation && !loss_op && !(cut && reads_activation)) t.full.push_back(op.name);
  }
  // Selective: each forward softmax and the chain before it writing its input's shape.
  std::set<std::string> selective;
  for (std::size_t i : order) {
    const OperationRoles& op = roles.operations[i];
    if (op.kernel != "softmax" || op.inputs.empty()) continue;
    const zspace::Range shape = graph.tensor(op.inputs[0].tensor).range();
    selective.insert(op.name);
    std::vector<ir::TensorId> up = {op.inputs[0].tensor};
    while (!up.empty()) {
      const ir::TensorId x = up.back();
      up.pop_back();
      for (ir::OperationId p : graph.producers(x)) {
        const std::optional<std::size_t> at = roles.position(p);
        if (!at || forward[*at] == 0 || roles.is_weight(x)) continue;
        const OperationRoles& producer = roles.operations[*at];
        if (!selective.insert(producer.name).second) continue;
        for (const PortRoles& port : producer.inputs) {
          const zspace::Range r = graph.tensor(port.tensor).range();
          if (r.shape() == shape.shape()) up.push_back(port.tensor);
        }
      }
    }
  }
  for (std::size_t i : order) {
    if (selective.contains(roles.operations[i].name))
      t.selective.push_back(roles.operations[i].name);
  }
  return t;
}

std::string not_training(const TrainingRoles& t) {
  return t.loss.empty() ? "not a training step (no gradient seed: ones_like of a scalar loss, "
                          "`tapestry grad`)"
                        : "not a training step (no parameter an optimizer kernel updates: sgd, "
                          "sgd_momentum, adam)";
}

// ZeRO-3 data parallel: data-parallel's cuts of the forward and backward passes, the updates
// and their outputs left to the zero rewrite, every parameter sharded p ways.
StandardPlan zero3(const ir::Graph& graph, const GraphRoles& roles, const Target& target) {
  StandardPlan s{.name = "zero3", .plan = std::nullopt, .summary = {}, .reason = {}};
  const TrainingRoles t = training_roles_of(graph, roles);
  if (t.parameters.empty()) {
    s.reason = not_training(t);
    return s;
  }
  StandardPlan dp = data_parallel(graph, roles, target);
  if (!dp.plan) {
    s.reason = "data-parallel does not apply: " + dp.reason;
    return s;
  }
  std::int64_t p = 0;
  for (const auto& [name, entry] : dp.plan->ops) {
    for (const auto& [dim, count] : entry.split) p = std::max(p, count);
  }
  std::int64_t rows = 0;
  for (std::int64_t r : t.parameter_rows) rows = std::gcd(rows, r);
  const std::int64_t shards = largest_divisor(std::gcd(rows, p), p);
  if (shards < 2) {
    s.reason = fmt::format(
        "no shard count from 2 to {} divides every parameter's dim 0 (their gcd is {})", p, rows);
    return s;
  }
  Plan plan = std::move(*dp.plan);
  std::set<std::string> outputs;
  for (const OperationRoles& op : roles.operations) {
    if (!is_update(op)) continue;
    plan.ops.erase(op.name);
    for (const PortRoles& port : op.outputs)
      outputs.insert(rewrite::output_name(graph, port.tensor));
  }
  std::erase_if(plan.outputs, [&](const auto& o) { return outputs.contains(o.first); });
  plan.zero = rewrite::ZeroPlan{.stage = 3, .params = t.parameters, .shards = shards, .axis = {}};
  s.plan = std::move(plan);
  s.summary = fmt::format(
      "ZeRO-3 (FSDP) data parallel ×{}: {} parameters, their gradients and "
      "optimizer state sharded ×{}",
      p, t.parameters.size(), shards);
  return s;
}

StandardPlan tensor_parallel(const ir::Graph& graph, const GraphRoles& roles, const Target& target,
                             std::string_view name);

// What megatron_training_cuts did, for the summary.
struct TrainingCuts {
  std::size_t gradients = 0;     // batch sums (weight gradients, the loss) cut on the data axis
  std::size_t weight_side = 0;   // weight-derived operations (transpose(W)) cut with their layer
  std::size_t updates = 0;       // optimizer updates sharded with their weight's layer
  std::size_t data_sharded = 0;  // of those, also sharded over the data axis
};

// The index dim of `op` the plan cuts on the tensor axis (`tp_axis`; empty: megatron's one axis,
// any split dim), if any.
std::optional<std::size_t> tensor_cut(const Plan& plan, const OperationRoles& op,
                                      const std::string& tp_axis) {
  const auto entry = plan.ops.find(op.name);
  if (entry == plan.ops.end()) return std::nullopt;
  for (std::size_t d = 0; d < op.dims.size(); ++d) {
    if (!entry->second.split.contains(op.dims[d])) continue;
    const auto axis = entry->second.mesh.find(op.dims[d]);
    if (tp_axis.empty() ? axis == entry->second.mesh.end()
                        : axis != entry->second.mesh.end() && axis->second == tp_axis)
      return d;
  }
  return std::nullopt;
}

// Megatron-LM's training step on top of the 2d (or megatron) cuts, so that nothing but the
// scalar seed runs whole on one device:
//   * every batch sum the data axis does not cut yet (a weight gradient's `batch`, a bias
//     gradient's rows, the loss) is cut `dp` ways on the data axis: partial sums per data
//     group, combined across it (data parallelism's gradient all-reduce);
//   * an operation on weights alone (the backward pass's transpose(W)) is cut like the
//     operation that reads it (the tensor dim its reader's tensor-parallel cut reads), and `dp`
//     ways along another dim on the data axis: each device transposes its block of its layer's
//     shard, the data group gathers it;
//   * each optimizer update is cut on the tensor axis as its weight's other readers read it (a
//     column layer's W by rows, a row layer's by columns), and `dp` ways along another dim on the
//     data axis when one divides: Megatron-LM's distributed optimizer — the weight, its gradient
//     and its Adam moments sharded with the tensor-parallel layer, the moments also over the data
//     axis; the new weight is all-gathered over the data axis (every replica holds its tensor
//     shard for the next step), the moments stay sharded; nothing is gathered over the tensor
//     axis.
TrainingCuts megatron_training_cuts(const ir::Graph& graph, const GraphRoles& roles, Plan& plan,
                                    std::int64_t tp, const std::string& tp_axis, std::int64_t dp,
                                    const std::string& dp_axis) {
  TrainingCuts done;
  const auto cut = [&](const OperationRoles& op, std::size_t d, std::int64_t count,
                       const std::string& axis) {
    rewrite::OpPlan& entry = plan.ops[op.name];
    entry.split[op.dims[d]] = count;
    if (!axis.empty()) entry.mesh[op.dims[d]] = axis;
  };
  // Another index dim than `not_this` that is no reduction, no split yet and `count` divides.
  const auto free_dim = [&](const OperationRoles& op, std::optional<std::size_t> not_this,
                            std::int64_t count) -> std::optional<std::size_t> {
    const auto entry = plan.ops.find(op.name);
    for (std::size_t d = 0; d < op.dims.size(); ++d) {
      if (d == not_this || op.reductions[d] || op.extents[d] % count != 0) continue;
      if (entry != plan.ops.end() && entry->second.split.contains(op.dims[d])) continue;
      return d;
    }
    return std::nullopt;
  };
  // The readers of each tensor: (operation position, input port).
  std::map<std::uint32_t, std::vector<std::pair<std::size_t, std::size_t>>> readers;
  for (std::size_t i = 0; i < roles.operations.size(); ++i) {
    const OperationRoles& op = roles.operations[i];
    for (std::size_t k = 0; k < op.inputs.size(); ++k)
      readers[op.inputs[k].tensor.index()].emplace_back(i, k);
  }
  // The tensor dim of `t` a tensor-parallel reader (other than `skip`) cuts, if any.
  const auto read_cut = [&](ir::TensorId t, std::size_t skip) -> std::optional<std::size_t> {
    const auto found = readers.find(t.index());
    if (found == readers.end()) return std::nullopt;
    for (const auto& [i, k] : found->second) {
      if (i == skip) continue;
      const std::optional<std::size_t> c = tensor_cut(plan, roles.operations[i], tp_axis);
      if (!c) continue;
      const auto& follows = roles.operations[i].inputs[k].follows;
      for (std::size_t r = 0; r < follows.size(); ++r) {
        if (follows[r] == c) return r;
      }
    }
    return std::nullopt;
  };
  // The index dim of `op` that tensor dim `r` of its port `port` follows, if a tp cut fits it.
  const auto follows_dim = [&](const OperationRoles& op, const PortRoles& port,
                               std::size_t r) -> std::optional<std::size_t> {
    if (r >= port.follows.size() || !port.follows[r]) return std::nullopt;
    const std::size_t d = *port.follows[r];
    if (op.reductions[d] || op.extents[d] % tp != 0) return std::nullopt;
    return d;
  };
  // 1. The batch sums on the data axis.
  if (dp > 1) {
    for (const OperationRoles& op : roles.operations) {
      if (op.batch_dim() || is_update(op)) continue;
      const std::optional<std::size_t> d = op.batch_reduction_dim();
      if (!d || op.extents[*d] % dp != 0) continue;
      const auto entry = plan.ops.find(op.name);
      if (entry != plan.ops.end() && entry->second.split.contains(op.dims[*d])) continue;
      cut(op, *d, dp, dp_axis);
      ++done.gradients;
    }
  }
  // 2. What weights alone make, from the last to the first (a chain takes its reader's cut).
  for (std::size_t i = roles.operations.size(); i-- > 0;) {
    const OperationRoles& op = roles.operations[i];
    if (is_update(op) || tensor_cut(plan, op, tp_axis) || op.outputs.size() != 1) continue;
    const bool weight_only =
        !op.inputs.empty() && std::all_of(op.inputs.begin(), op.inputs.end(), [&](const auto& in) {
          return roles.is_weight(in.tensor);
        });
    if (!weight_only) continue;
    const std::optional<std::size_t> r = read_cut(op.outputs[0].tensor, i);
    const std::optional<std::size_t> d = r ? follows_dim(op, op.outputs[0], *r) : std::nullopt;
    if (!d) continue;
    cut(op, *d, tp, tp_axis);
    if (dp > 1) {
      if (auto e = free_dim(op, d, dp)) cut(op, *e, dp, dp_axis);
    }
    ++done.weight_side;
  }
  // 3. The updates, with their weight's layer; their outputs stay sharded on the tensor axis.
  std::set<std::uint32_t> graph_outputs;
  for (ir::TensorId t : metakernel::graph_outputs(graph)) graph_outputs.insert(t.index());
  for (std::size_t i = 0; i < roles.operations.size(); ++i) {
    const OperationRoles& op = roles.operations[i];
    if (!is_update(op)) continue;
    std::optional<std::size_t> d = tensor_cut(plan, op, tp_axis);
    if (!d) {
      for (const PortRoles& port : op.inputs) {
        if (port.name != "param") continue;
        if (auto r = read_cut(port.tensor, i)) d = follows_dim(op, port, *r);
      }
      if (d) cut(op, *d, tp, tp_axis);
    }
    if (!d) continue;
    ++done.updates;
    std::optional<std::size_t> e;
    if (dp > 1) {
      e = free_dim(op, d, dp);
      if (e) {
        cut(op, *e, dp, dp_axis);
        ++done.data_sharded;
      }
    }
    for (const PortRoles& port : op.outputs) {
      if (!graph_outputs.contains(port.tensor.index())) continue;
      const std::string out = rewrite::output_name(graph, port.tensor);
      if (port.name == "result" && e) {
        plan.outputs[out].replicate = dp_axis;
      } else {
        plan.outputs.erase(out);
      }
    }
  }
  return done;
}

// Megatron TP × PP × DP with full or selective recomputation: the 2d plan (megatron when the
// target's mesh has no data and tensor axes) made a training step's (megatron_training_cuts),
// pipeline degree 1, and the recompute list.
StandardPlan megatron_3d(const ir::Graph& graph, const GraphRoles& roles, const Target& target,
                         std::string_view name) {
  StandardPlan s{.name = std::string(name), .plan = std::nullopt, .summary = {}, .reason = {}};
  const TrainingRoles t = training_roles_of(graph, roles);
  if (t.parameters.empty()) {
    s.reason = not_training(t);
    return s;
  }
  const bool full = name == "megatron-3d-full";
  const std::vector<std::string>& recompute = full ? t.full : t.selective;
  if (recompute.empty()) {
    s.reason = full ? "no forward operation to recompute (every one writes a checkpoint)"
                    : "no attention to recompute (no softmax in the forward pass)";
    return s;
  }
  StandardPlan base = tensor_parallel(graph, roles, target, "2d");
  if (!base.plan) {
    const std::string why_2d = base.reason;
    base = tensor_parallel(graph, roles, target, "megatron");
    if (!base.plan) {
      s.reason = fmt::format("neither 2d ({}) nor megatron ({}) applies", why_2d, base.reason);
      return s;
    }
  }
  s.plan = std::move(base.plan);
  // The axes and counts the base plan cut along.
  std::int64_t tp = 0, dp = 1;
  std::string tp_axis, dp_axis;
  if (std::string why; base.name == "2d") {
    const auto axes = data_tensor_axes(target, why);
    dp = axes->first.size;
    dp_axis = axes->first.name;
    tp = axes->second.size;
    tp_axis = axes->second.name;
  } else {
    for (const auto& [op, entry] : s.plan->ops) {
      for (const auto& [dim, count] : entry.split) tp = std::max(tp, count);
    }
  }
  const TrainingCuts cuts = megatron_training_cuts(graph, roles, *s.plan, tp, tp_axis, dp, dp_axis);
  s.plan->recompute = recompute;
  std::string training = fmt::format("{} sharded with their tensor-parallel layer",
                                     count_text(cuts.updates, "update", "updates"));
  if (cuts.data_sharded > 0) {
    training +=
        fmt::format(" ({} also over {}: the distributed optimizer)", cuts.data_sharded, dp_axis);
  }
  if (cuts.weight_side > 0) {
    training += fmt::format(", {} with their layer's shard",
                            count_text(cuts.weight_side, "weight transpose", "weight transposes"));
  }
  if (cuts.gradients > 0) {
    training += fmt::format(", {} cut over {}",
                            count_text(cuts.gradients, "batch sum", "batch sums"), dp_axis);
  }
  s.summary = fmt::format(
      "{}; {}; pipeline ×1 (tensor parallelism inside a stage is not built); "
      "{} recomputation of {}",
      base.summary, training, full ? "full" : "selective",
      count_text(recompute.size(), "forward operation", "forward operations"));
  return s;
}
}  // namespace

const std::vector<std::string>& standard_plan_names() {
  static const std::vector<std::string> kNames = {
      "data-parallel", "megatron",         "megatron-rs",          "2d",
      "zero3",         "megatron-3d-full", "megatron-3d-selective"};
  return kNames;
}

StandardPlan standard_plan(const ir::Graph& graph, const Target& target, std::string_view name) {
  const std::vector<std::string>& names = standard_plan_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw Error(fmt::format("unknown standard plan '{}' (expected one of {})", name,
                            fmt::join(names, ", ")));
  }
  const GraphRoles roles = graph_roles(graph);
  if (name == "data-parallel") return data_parallel(graph, roles, target);
  if (name == "zero3") return zero3(graph, roles, target);
  if (name.starts_with("megatron-3d")) return megatron_3d(graph, roles, target, name);
  return tensor_parallel(graph, roles, target, name);
}

std::vector<StandardPlan> standard_plans(const ir::Graph& graph, const Target& target) {
  const GraphRoles roles = graph_roles(graph);
  std::vector<StandardPlan> plans = {data_parallel(graph, roles, target)};
  for (std::size_t i = 1; i < 4; ++i) {
    plans.push_back(tensor_parallel(graph, roles, target, standard_plan_names()[i]));
  }
  plans.push_back(zero3(graph, roles, target));
  plans.push_back(megatron_3d(graph, roles, target, "megatron-3d-full"));
  plans.push_back(megatron_3d(graph, roles, target, "megatron-3d-selective"));
  return plans;
}

TrainingRoles training_roles(const ir::Graph& graph) {
  return training_roles_of(graph, graph_roles(graph));
}

StandardPlan checked_standard_plan(const ir::Graph& graph, const Target& target,
                                   std::string_view name, const rewrite::LowerOptions& options) {
  StandardPlan s = standard_plan(graph, target, name);
  if (!s.plan) return s;
  try {
    const rewrite::LowerResult lowered = rewrite::lower(graph, *s.plan, options);
    (void)place(lowered.graph, lowered.plan, target);
  } catch (const Error& e) {
    s.reason = fmt::format("the rewrites or the placement refuse it: {}", e.what());
    s.plan.reset();
  }
  return s;
}

}  // namespace tapestry::cost
