// The recompute pass (recompute.h): candidates checked to a fixed point, then the copies, the
// rewired later uses and the ordering edges.
#include "tapestry/rewrite/recompute.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "graph_walk.h"
#include "op_spec.h"
#include "tapestry/ir/ordering.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/rewrite/fresh_names.h"
#include "tapestry/rewrite/graph_copy.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {

namespace {

using detail::descendants;
using detail::names_of;
using detail::OpSpec;
using detail::Port;

// The readers of `t` that run after the forward pass is done with it (its later uses): those
// that depend on another reader of `t` (relu_grad(H/linear, dH) after H = relu(H/linear)), and
// those whose results only such operations read, on every path (the backward pass's
// transpose(P) that feeds matmul(transpose(P), dC) after C = matmul(P, V): it depends on P
// alone, but nothing reads it before the backward pass). `needs` are the operations that make
// them late (a direct later use is its own need); `via` the operations between a reader late by
// its results and its needs, the reader included.
struct LaterUses {
  std::vector<ir::OperationId> uses;  // in graph order
  std::vector<ir::OperationId> needs;
  std::vector<ir::OperationId> via;
};

LaterUses later_uses(const ir::Graph& g, ir::TensorId t) {
  const std::span<const ir::OperationId> readers = g.consumers(t);
  std::vector<std::vector<char>> below;  // per reader: what depends on it
  below.reserve(readers.size());
  for (ir::OperationId r : readers) below.push_back(descendants(g, r));
  // Whether `x` depends on a reader of `t` other than readers[i].
  const auto after_another = [&](ir::OperationId x, std::size_t i) {
    for (std::size_t j = 0; j < readers.size(); ++j) {
      if (j != i && readers[j] != x && below[j][x.index()] != 0) return true;
    }
    return false;
  };
  LaterUses out;
  for (std::size_t i = 0; i < readers.size(); ++i) {
    const ir::OperationId r = readers[i];
    if (after_another(r, i)) {
      out.uses.push_back(r);
      out.needs.push_back(r);
      continue;
    }
    // Late by its results: every reader of what r writes (and so on down, through operations
    // that are late the same way) depends on another reader of t; a graph output is never late.
    std::unordered_map<std::uint32_t, char> late;  // op index → its verdict
    std::vector<ir::OperationId> needs, via;
    const auto results_late = [&](const auto& self, ir::OperationId x) -> bool {
      bool read = false;
      for (const auto& o : g.operation(x).outputs().entries()) {
        if (metakernel::is_graph_output(g, o.value.tensor)) return false;
        for (ir::OperationId c : g.consumers(o.value.tensor)) {
          read = true;
          if (auto v = late.find(c.index()); v != late.end()) {
            if (v->second == 0) return false;
            continue;
          }
          late[c.index()] = 0;  // until shown late (a cycle cannot occur: the graph is a DAG)
          bool ok = false;
          if (after_another(c, i)) {
            ok = true;
            needs.push_back(c);
          } else if (self(self, c)) {
            ok = true;
            via.push_back(c);
          }
          late[c.index()] = ok ? 1 : 0;
          if (!ok) return false;
        }
      }
      return read;
    };
    if (!results_late(results_late, r)) continue;
    out.uses.push_back(r);
    out.via.push_back(r);
    out.needs.insert(out.needs.end(), needs.begin(), needs.end());
    out.via.insert(out.via.end(), via.begin(), via.end());
  }
  return out;
}

std::vector<ir::TensorId> input_tensors(const ir::Graph& g, ir::OperationId op) {
  std::vector<ir::TensorId> inputs;
  for (const auto& in : g.operation(op).inputs().entries()) {
    if (std::find(inputs.begin(), inputs.end(), in.value.tensor) == inputs.end())
      inputs.push_back(in.value.tensor);
  }
  return inputs;
}

struct Candidate {
  std::string name;
  ir::OperationId op;
  ir::TensorId output;
  std::vector<ir::OperationId> later;  // later uses of `output`
  std::vector<ir::OperationId> needs;  // what makes them late (LaterUses::needs)
  std::vector<ir::OperationId> via;    // LaterUses::via: never waited for (they read the copy)
  std::string refused;                 // why not; empty: accepted
  // Set by Checker::order for accepted candidates:
  ir::OperationId first_need;             // the first later use of it or of a copy reading it
  ir::OperationId first_late;             // the first need of it or of a copy reading it
  std::vector<ir::TensorId> after;        // what its copy starts after (empty: reads a copy)
  std::vector<std::size_t> copy_readers;  // accepted candidates reading `output`
};

class Checker {
 public:
  Checker(const ir::Graph& g, std::vector<Candidate>& cands) : g_(g), cands_(cands) {
    for (ir::OperationId op : g.operations()) position_[op.index()] = position_.size();
    for (std::size_t i = 0; i < cands.size(); ++i) by_op_[cands[i].op.index()] = i;
  }

  // Refuses candidates until every accepted one passes every check against the others.
  void run() {
    for (Candidate& c : cands_) first_checks(c);
    for (bool changed = true; changed;) {
      changed = false;
      order();
      for (Candidate& c : cands_) {
        if (!c.refused.empty()) continue;
        c.refused = why_not(c);
        changed |= !c.refused.empty();
      }
    }
  }

  [[nodiscard]] std::optional<std::size_t> accepted(ir::OperationId op) const {
    auto it = by_op_.find(op.index());
    if (it == by_op_.end() || !cands_[it->second].refused.empty()) return std::nullopt;
    return it->second;
  }

 private:
  void first_checks(Candidate& c) {
    if (auto why = detail::why_not_rewritable(g_, c.op)) {
      c.refused = *why;
      return;
    }
    const ir::OperationView view = g_.operation(c.op);
    if (view.outputs().size() != 1) {
      c.refused = fmt::format("it writes {} tensors; recompute copies an operation with one result",
                              view.outputs().size());
      return;
    }
    c.output = (*view.outputs().entries().begin()).value.tensor;
    if (metakernel::is_graph_output(g_, c.output)) {
      c.refused = fmt::format("its result {} is a graph output, kept to the end anyway",
                              g_.display_name(c.output));
      return;
    }
    LaterUses l = later_uses(g_, c.output);
    c.later = std::move(l.uses);
    c.needs = std::move(l.needs);
    c.via = std::move(l.via);
  }

  // Per accepted candidate, in reverse graph order: the accepted readers, the first need, and
  // (for a copy that reads no copy) the tensors its first need reads besides the recomputed ones.
  void order() {
    // The operations a later use late by its results reaches through (LaterUses::via): they read
    // a copy, so they are never waited for.
    std::unordered_set<std::uint32_t> via;
    for (const Candidate& o : cands_) {
      if (!o.refused.empty()) continue;
      for (ir::OperationId p : o.via) via.insert(p.index());
    }
    for (std::size_t i = cands_.size(); i-- > 0;) {
      Candidate& c = cands_[i];
      if (!c.refused.empty()) continue;
      c.copy_readers.clear();
      c.first_need = {};
      c.first_late = {};
      const auto earliest = [&](ir::OperationId& first, ir::OperationId op) {
        if (!first.is_valid() || position_.at(op.index()) < position_.at(first.index())) first = op;
      };
      for (ir::OperationId r : c.later) earliest(c.first_need, r);
      for (ir::OperationId r : c.needs) earliest(c.first_late, r);
      for (ir::OperationId r : g_.consumers(c.output)) {
        if (auto d = accepted(r)) {
          c.copy_readers.push_back(*d);
          if (cands_[*d].first_need.is_valid()) earliest(c.first_need, cands_[*d].first_need);
          if (cands_[*d].first_late.is_valid()) earliest(c.first_late, cands_[*d].first_late);
        }
      }
      c.after.clear();
      if (!c.first_need.is_valid() || !c.first_late.is_valid()) continue;
      bool reads_copy = false;
      for (ir::TensorId in : input_tensors(g_, c.op)) {
        for (ir::OperationId p : g_.producers(in)) reads_copy |= accepted(p).has_value();
      }
      if (reads_copy) continue;
      // The copy starts after what its first need reads, but for what the copy itself feeds: a
      // recomputed tensor, or one a later use late by its results writes (it reads the copy).
      const auto feeds_copy = [&](ir::OperationId p) {
        return accepted(p).has_value() || via.contains(p.index());
      };
      for (ir::TensorId in : input_tensors(g_, c.first_late)) {
        const std::span<const ir::OperationId> producers = g_.producers(in);
        if (producers.empty()) continue;  // a graph input: there from the start
        if (std::any_of(producers.begin(), producers.end(), feeds_copy)) continue;
        c.after.push_back(in);
      }
    }
  }

  std::string why_not(const Candidate& c) const {
    if (c.later.empty() && c.copy_readers.empty()) {
      return fmt::format(
          "no later use: no reader of {} depends on another of its readers ({}), as the backward "
          "pass's readers of a forward result do, and no recomputed operation reads it",
          g_.display_name(c.output), names_of(g_, g_.consumers(c.output)));
    }
    for (ir::TensorId in : input_tensors(g_, c.op)) {
      const std::span<const ir::OperationId> producers = g_.producers(in);
      if (producers.empty() || metakernel::is_graph_output(g_, in)) continue;
      if (std::any_of(producers.begin(), producers.end(),
                      [&](ir::OperationId p) { return accepted(p).has_value(); }))
        continue;
      bool kept = false;  // a later use that is not recomputed reads it anyway
      for (ir::OperationId r : later_uses(g_, in).uses) kept |= !accepted(r).has_value();
      if (kept) continue;
      return fmt::format(
          "its input {} is freed after the forward pass (no later use reads it): the copy would "
          "keep it alive; recompute {} too",
          g_.display_name(in), names_of(g_, producers));
    }
    if (!c.first_need.is_valid()) {  // read only by copies that no later use needs either
      return fmt::format(
          "no later use: its readers ({}) are recomputed, and no later use needs any of them",
          names_of(g_, g_.consumers(c.output)));
    }
    bool reads_accepted = false;
    for (ir::TensorId in : input_tensors(g_, c.op)) {
      for (ir::OperationId p : g_.producers(in)) reads_accepted |= accepted(p).has_value();
    }
    if (!reads_accepted && c.after.empty()) {
      return fmt::format(
          "nothing orders the copy late: its first later use {} reads no other computed tensor",
          operation_name(g_, c.first_late));
    }
    return {};
  }

  const ir::Graph& g_;
  std::vector<Candidate>& cands_;
  std::unordered_map<std::uint32_t, std::size_t> position_;  // op index → graph order
  std::unordered_map<std::uint32_t, std::size_t> by_op_;     // op index → candidate
};

}  // namespace

void recompute_operations(RewriteState& state, std::vector<RewriteEvent>& log) {
  if (state.plan.recompute.empty()) return;
  ir::Graph& g = state.graph;
  std::vector<Candidate> cands;
  const OperationFinder finder(g);  // find_operation scans every operation per name
  for (const std::string& name : state.plan.recompute) {
    const std::optional<ir::OperationId> op = finder.find(name);
    if (!op) continue;  // check_plan reports it
    cands.push_back({.name = name, .op = *op});
  }
  Checker checker(g, cands);
  checker.run();
  const std::vector<ir::OperationId> original_order(g.operations().begin(), g.operations().end());

  // The copies, in graph order, each reading the copies of recomputed inputs.
  FreshNames names(g, state.plan);
  std::unordered_map<std::uint32_t, ir::TensorId> copy_of;  // original tensor index → copy
  std::map<std::string, std::string> copy_name;             // original → copy
  std::vector<std::pair<std::string, std::vector<std::string>>> edges;  // copy → tensor keys
  // The operations in their new order: each copy just before its first need, in graph order.
  std::unordered_map<std::uint32_t, std::vector<ir::OperationId>> before;  // first need → copies
  for (const Candidate& c : cands) {
    if (!c.refused.empty()) {
      log.push_back({std::string(kRecompute), c.name, c.name, false, c.refused});
      continue;
    }
    OpSpec s = detail::spec_of(g, c.op);
    s.label = names.take(c.name + "/recompute");
    for (Port& in : s.inputs) {
      if (auto it = copy_of.find(in.tensor.index()); it != copy_of.end()) in.tensor = it->second;
    }
    s.outputs[0].tensor = g.add_tensor(g.tensor(c.output).body(), {.label = s.label});
    copy_of[c.output.index()] = s.outputs[0].tensor;
    copy_name[c.name] = s.label;
    const ir::OperationId copy = detail::add_op(g, s);
    before[c.first_need.index()].push_back(copy);
    const auto entry = state.plan.ops.find(c.name);
    const OpPlan plan = state.plan_of_new(copy, c.name, kRecompute,
                                          entry == state.plan.ops.end() ? OpPlan{} : entry->second);
    if (!is_empty(plan)) state.plan.ops[s.label] = plan;
    std::vector<std::string> after_names;
    if (!c.after.empty()) {
      std::vector<std::string>& keys = state.after[s.label];
      for (ir::TensorId t : c.after) {
        keys.emplace_back(g.key(t));
        state.ordering_tensors.emplace(g.key(t));
        after_names.push_back(g.display_name(t));
      }
      edges.emplace_back(s.label, keys);
    }
    std::vector<std::string> uses;  // its later uses, and the copies that read it
    for (ir::OperationId use : c.later) uses.push_back(operation_name(g, use));
    for (std::size_t d : c.copy_readers) uses.push_back(cands[d].name + "'s copy");
    log.push_back({std::string(kRecompute), c.name, c.name, true,
                   fmt::format("copy {} for {}{}", s.label, fmt::join(uses, ", "),
                               after_names.empty() ? std::string()
                                                   : fmt::format("; starts after {}",
                                                                 fmt::join(after_names, ", ")))});
  }
  if (copy_of.empty()) return;

  // The later uses read the copies: each is replaced by the same operation reading them.
  std::map<std::uint32_t, std::vector<std::uint32_t>> rewire;  // use → tensors it reads late
  for (const Candidate& c : cands) {
    if (!c.refused.empty()) continue;
    for (ir::OperationId use : c.later) rewire[use.index()].push_back(c.output.index());
  }
  std::unordered_map<std::uint32_t, ir::OperationId> replaced;  // use → its replacement
  for (const auto& [index, tensors] : rewire) {
    const ir::OperationId use{ir::NodeId(index)};
    OpSpec s = detail::spec_of(g, use);
    for (Port& in : s.inputs) {
      if (std::find(tensors.begin(), tensors.end(), in.tensor.index()) != tensors.end())
        in.tensor = copy_of.at(in.tensor.index());
    }
    const ir::NodeId removed[] = {use};
    g.remove(removed);
    replaced[index] = detail::add_op(g, s);
  }

  // A fusion group of recomputed operations: the same group of their copies.
  std::vector<std::vector<std::string>> groups;
  for (const auto& group : state.plan.fuse) {
    std::vector<std::string> copies;
    for (const std::string& name : group) {
      if (auto it = copy_name.find(name); it != copy_name.end()) copies.push_back(it->second);
    }
    if (copies.size() == group.size()) groups.push_back(std::move(copies));
  }
  state.plan.fuse.insert(state.plan.fuse.end(), groups.begin(), groups.end());

  // The graph in its new order: each copy just before its first need (reordered).
  state.graph = copy_graph_in_order(g, detail::reordered(original_order, before, replaced)).graph;
  ir::Graph& h = state.graph;
  std::vector<ir::OperationId> copies;  // found first: set_after may move the labels the finder
  {                                     // indexes (find_operation scans per name)
    const OperationFinder finder(h);
    for (const auto& edge : edges) copies.push_back(*finder.find(edge.first));
  }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    std::vector<ir::TensorId> tensors;
    for (const std::string& key : edges[i].second) tensors.push_back(*h.as_tensor(*h.find(key)));
    ir::set_after(h, copies[i], tensors);
  }
  if (const ir::TopologicalOrder topo = h.topological_order(); !topo.cycle.empty()) {
    throw Error(fmt::format(
        "recompute: the copies' ordering edges form a cycle through {} operations (each copy "
        "waits for what its first backward use reads); recompute fewer operations",
        topo.cycle.size()));
  }
}

void write_ordering_edges(RewriteState& state) {
  if (state.after.empty()) return;
  ir::Graph& g = state.graph;
  for (ir::OperationId op : g.operations()) {
    const auto found = state.after.find(operation_name(g, op));
    if (found == state.after.end()) continue;
    std::vector<ir::TensorId> tensors;
    for (const std::string& key : found->second) {
      const std::optional<ir::NodeId> node = g.find(key);
      const std::optional<ir::TensorId> t = node ? g.as_tensor(*node) : std::nullopt;
      if (t) tensors.push_back(*t);
    }
    ir::set_after(g, op, tensors);
  }
}

}  // namespace tapestry::rewrite
