// Incremental rewrites (incremental.h): components, and the driver resumed on the changed ones.
#include "tapestry/rewrite/incremental.h"

#include <algorithm>
#include <numeric>

#include "tapestry/rewrite/graph_copy.h"
#include "tapestry/support/cancel.h"

namespace tapestry::rewrite {

namespace {

constexpr std::uint32_t kNone = RewriteComponents::kNone;

std::uint32_t find_root(std::vector<std::uint32_t>& parent, std::uint32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

void join(std::vector<std::uint32_t>& parent, std::uint32_t a, std::uint32_t b) {
  parent[find_root(parent, a)] = find_root(parent, b);
}

// The patterns lower runs (default_patterns() but the disabled ones).
std::vector<const OperationPattern*> enabled_patterns(const DriverOptions& options) {
  std::vector<const OperationPattern*> out;
  for (const OperationPattern* p : default_patterns()) {
    if (!options.disabled.contains(p->name())) out.push_back(p);
  }
  return out;
}

std::string_view name_of(const ir::Graph& g, ir::OperationId op) {
  const std::string& label = g.operation(op).label();
  return label.empty() ? g.key(op) : std::string_view(label);
}

// Plans the incremental path takes: no whole-graph pass (and no derived entry: checked by name).
bool takes(const Plan& plan) {
  return !plan.zero && plan.recompute.empty() && !plan.pipeline;
}

}  // namespace

RewriteComponents rewrite_components(const ir::Graph& graph,
                                     std::span<const OperationPattern* const> patterns) {
  const std::size_t n = graph.size();
  std::vector<std::uint32_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0U);
  RewriteComponents c;
  c.of.assign(n, kNone);
  c.neighbours.resize(n);
  for (ir::TensorId t : graph.tensors()) {
    const auto producers = graph.producers(t);
    // A tensor's writers stay together (a rewrite of one may remove the tensor).
    for (std::size_t i = 1; i < producers.size(); ++i)
      join(parent, producers[0].index(), producers[i].index());
    for (ir::OperationId consumer : graph.consumers(t)) {
      for (ir::OperationId producer : producers) {
        c.neighbours[producer.index()].push_back(consumer.index());
        c.neighbours[consumer.index()].push_back(producer.index());
        for (const OperationPattern* p : patterns) {
          if (p->may_act_across(graph, producer, t, consumer)) {
            join(parent, producer.index(), consumer.index());
            break;
          }
        }
      }
    }
  }
  std::vector<std::uint32_t> number(n, kNone);
  for (ir::OperationId op : graph.operations()) {
    const std::uint32_t r = find_root(parent, op.index());
    if (number[r] == kNone) number[r] = c.count++;
    c.of[op.index()] = number[r];
    std::vector<std::uint32_t>& next = c.neighbours[op.index()];
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
  }
  for (ir::TensorId t : graph.tensors()) {
    const auto producers = graph.producers(t);
    if (!producers.empty()) c.of[t.index()] = c.of[producers[0].index()];
  }
  return c;
}

IncrementalRewrites::IncrementalRewrites(const ir::Graph& graph, const LowerOptions& options)
    : source_(graph), input_(copy_graph(graph).graph), options_(options) {
  const std::vector<const OperationPattern*> patterns = enabled_patterns(options_.driver);
  components_ = rewrite_components(input_, patterns);
  for (ir::OperationId op : input_.operations()) {
    const ir::OperationView view = input_.operation(op);
    for (const std::string& name : {view.label(), std::string(view.key())}) {
      if (name.empty()) continue;
      input_names_.insert(name);
      auto [it, fresh] = op_by_name_.emplace(name, op.index());
      if (!fresh && it->second != op.index()) it->second = kNone;  // ambiguous
    }
  }
  for (ir::TensorId t : input_.tensors()) {
    if (!input_.tensor(t).label().empty()) input_names_.insert(input_.tensor(t).label());
  }
}

std::uint32_t IncrementalRewrites::op_of(const std::string& name) const {
  const auto found = op_by_name_.find(name);
  return found == op_by_name_.end() ? kNone : found->second;
}

// Fusion groups a later call can follow: every member an input operation, and no two groups
// ending in the same one. A fusion at a group's head drops the head (fuse-elementwise), so what
// is left of a group ends as it did: its last member names it among the base's groups.
bool IncrementalRewrites::groups_reusable(const Plan& plan) const {
  std::unordered_set<std::string_view> lasts;
  for (const std::vector<std::string>& group : plan.fuse) {
    if (group.empty()) return false;
    for (const std::string& name : group) {
      if (op_of(name) == kNone) return false;
    }
    if (!lasts.insert(group.back()).second) return false;
  }
  return true;
}

std::uint32_t IncrementalRewrites::component_of(const std::string& name) const {
  const std::uint32_t op = op_of(name);
  return op == kNone ? kNone : components_.of[op];
}

// Whether a fresh run could have handed out other names: every name taken was its base, none is
// a name of the input graph, and none was taken in two components (one may have taken it after
// the other's node was gone, which a fresh run's other order may not repeat).
bool IncrementalRewrites::names_reusable(const RewriteRecord& record) const {
  if (record.trace.name_root.size() != record.names.size()) return false;
  std::unordered_map<std::string_view, std::uint32_t> component;
  for (std::size_t i = 0; i < record.names.size(); ++i) {
    const RewriteState::TakenName& taken = record.names[i];
    if (taken.renamed || input_names_.contains(taken.name)) return false;
    const std::uint32_t root = record.trace.name_root[i];
    if (root >= components_.of.size()) return false;
    auto [it, fresh] = component.emplace(taken.name, components_.of[root]);
    if (!fresh && it->second != components_.of[root]) return false;
  }
  return true;
}

RewriteState IncrementalRewrites::whole(const Plan& plan, std::vector<RewriteEvent>& log,
                                        RewriteRecord& record) {
  ++stats_.whole;
  LowerOptions options = options_;
  record = RewriteRecord{};
  options.driver.trace = &record.trace;
  RewriteState state = rewrite_operations(source_, plan, options, log);
  record.reusable = false;
  if (!takes(plan) || !state.problems.empty() || record.trace.event_root.size() != log.size())
    return state;
  record.plan = resolve_plan_names(plan, source_);
  for (const auto& [name, entry] : record.plan.ops) {
    if (op_of(name) == kNone) return state;  // a derived entry
  }
  if (!groups_reusable(record.plan)) return state;
  record.written = state.plan;
  record.origins = state.origins;
  record.derived = state.derived;
  record.log = log;
  record.names = state.taken_names;
  record.reusable = names_reusable(record);
  return state;
}

RewriteState IncrementalRewrites::rewrite(const Plan& plan, std::vector<RewriteEvent>& log,
                                          RewriteRecord& record, const RewriteRecord* base,
                                          const ir::Graph* base_graph) {
  if (base == nullptr || base_graph == nullptr || !base->reusable || !takes(plan))
    return whole(plan, log, record);
  Plan resolved = resolve_plan_names(plan, source_);
  if (resolved.fuse_auto != base->plan.fuse_auto) return whole(plan, log, record);
  // The components whose operations' entries, or a neighbour's, differ from the base plan's.
  std::vector<char> changed(components_.count, 0);
  const auto mark = [&](const std::string& name) {
    const std::uint32_t op = op_of(name);
    if (op == kNone) return false;
    changed[components_.of[op]] = 1;
    for (std::uint32_t next : components_.neighbours[op]) changed[components_.of[next]] = 1;
    return true;
  };
  auto a = resolved.ops.begin();
  auto b = base->plan.ops.begin();
  while (a != resolved.ops.end() || b != base->plan.ops.end()) {
    bool known = true;
    if (b == base->plan.ops.end() || (a != resolved.ops.end() && a->first < b->first)) {
      known = mark(a->first);
      ++a;
    } else if (a == resolved.ops.end() || b->first < a->first) {
      known = mark(b->first);
      ++b;
    } else {
      if (!(a->second == b->second)) known = mark(a->first);
      ++a;
      ++b;
    }
    if (!known) return whole(plan, log, record);  // a derived entry
  }
  // A fusion group belongs to its head's component (its fusions happen there); a component whose
  // groups differ, in order, changed.
  if (!groups_reusable(resolved)) return whole(plan, log, record);
  std::unordered_map<std::uint32_t, std::vector<const std::vector<std::string>*>> groups;
  for (const std::vector<std::string>& group : resolved.fuse)
    groups[component_of(group.front())].push_back(&group);
  std::unordered_map<std::uint32_t, std::size_t> seen;
  for (const std::vector<std::string>& group : base->plan.fuse) {
    const std::uint32_t c = component_of(group.front());
    std::size_t& at = seen[c];
    const auto found = groups.find(c);
    if (found == groups.end() || at >= found->second.size() || *found->second[at] != group)
      changed[c] = 1;
    ++at;
  }
  for (const auto& [c, list] : groups) {
    if (seen[c] != list.size()) changed[c] = 1;
  }
  std::size_t count = 0, operations = 0;
  for (ir::OperationId op : input_.operations()) operations += changed[components_.of[op.index()]];
  for (char c : changed) count += c;
  // Most of the graph: a fresh run costs no more, and leaves a record as good.
  if (2 * operations > input_.operations().size()) return whole(plan, log, record);
  RewriteState state;
  record = RewriteRecord{};
  if (!resume(resolved, *base, *base_graph, changed, state, log, record))
    return whole(plan, log, record);
  ++stats_.incremental;
  stats_.components_rewritten += count;
  stats_.components_reused += components_.count - count;
  return state;
}

bool IncrementalRewrites::resume(const Plan& resolved, const RewriteRecord& base,
                                 const ir::Graph& base_graph, const std::vector<char>& changed,
                                 RewriteState& state, std::vector<RewriteEvent>& log,
                                 RewriteRecord& record) {
  const ir::Graph& in = input_;
  const std::vector<std::uint32_t>& of = components_.of;
  const auto reused = [&](std::uint32_t component) {
    return component == kNone || !changed[component];
  };
  const DriverTrace& trace = base.trace;
  if (trace.input.size() != base_graph.size() || trace.root.size() != base_graph.size())
    return false;
  // The input's nodes the base kept.
  std::vector<char> kept(in.size(), 0);
  for (std::int64_t i : trace.input) {
    if (i >= 0) kept[static_cast<std::size_t>(i)] = 1;
  }
  // The starting graph, in the canonical layout: the input's nodes of the changed components and
  // those the base kept of the others, in input order; then the base's added nodes of the other
  // components, in the base's order (so each root's group in the order its nodes were added);
  // non-operations before operations.
  DriverResume resume;
  GraphCopy s;
  s.graph.set_graph_key(in.graph_key());
  std::vector<ir::NodeId> in_map(in.size()), base_map(base_graph.size());
  const auto from_input = [&](ir::NodeId id) {
    s.map.swap(in_map);
    copy_node_into(in, id, s);
    s.map.swap(in_map);
    resume.input.push_back(id.index());
    resume.root.push_back(id.index());
    resume.settled.push_back(in.kind(id) == ir::NodeKind::kOperation && reused(of[id.index()]));
  };
  // A base node's tensors must all be in the new graph (an added node of a reused component
  // reading a changed component's added tensor would break the partition): false when not.
  const auto from_base = [&](ir::NodeId id) {
    if (auto op = base_graph.as_operation(id)) {
      const ir::OperationView view = base_graph.operation(*op);
      for (const ir::SelectionMap* selections : {&view.inputs(), &view.outputs()}) {
        for (const auto& e : selections->entries()) {
          if (!e.value.tensor.is_valid() || !base_map[e.value.tensor.index()].is_valid())
            return false;
        }
      }
    }
    s.map.swap(base_map);
    copy_node_into(base_graph, id, s);
    s.map.swap(base_map);
    resume.input.push_back(-1);
    resume.root.push_back(trace.root[id.index()]);
    resume.settled.push_back(base_graph.kind(id) == ir::NodeKind::kOperation);
    return true;
  };
  const auto present = [&](ir::NodeId id) {
    const std::uint32_t c = of[id.index()];
    return (c != kNone && changed[c]) || kept[id.index()];
  };
  const auto is_op = [](ir::NodeKind kind) { return kind == ir::NodeKind::kOperation; };
  const auto added_of_reused = [&](ir::NodeId id) {
    return trace.input[id.index()] < 0 && reused(of[trace.root[id.index()]]);
  };
  // Every input node is added, and those the base removed of the reused components removed
  // again (ir::Graph::remove): their keys stay taken, as in a fresh run, where every input node is
  // there when the first rewrite adds a node with a generated key.
  std::vector<ir::NodeId> absent;
  const std::vector<ir::NodeId> in_ids = in.node_ids();
  const std::vector<ir::NodeId> base_ids = base_graph.node_ids();
  for (ir::NodeId id : in_ids) {
    if (is_op(in.kind(id)) || in.kind(id) == ir::NodeKind::kApplication) continue;
    from_input(id);
    if (!present(id)) absent.push_back(in_map[id.index()]);
  }
  for (std::size_t i = 0; i < base_graph.size(); ++i) {  // the base's originals, mapped
    if (trace.input[i] >= 0) base_map[i] = in_map[static_cast<std::size_t>(trace.input[i])];
  }
  for (ir::NodeId id : base_ids) {
    if (!is_op(base_graph.kind(id)) && added_of_reused(id) && !from_base(id)) return false;
  }
  for (ir::OperationId op : in.operations()) {
    from_input(op);
    if (!present(op)) absent.push_back(in_map[op.index()]);
  }
  for (ir::OperationId op : base_graph.operations()) {
    if (added_of_reused(op) && !from_base(op)) return false;
  }
  s.graph.remove(absent);
  for (const ir::StateUpdate& u : in.updates()) {
    if (in_map[u.state.index()].is_valid() && in_map[u.next.index()].is_valid())
      s.graph.add_update(
          {ir::TensorId(in_map[u.state.index()]), ir::TensorId(in_map[u.next.index()])});
  }
  for (std::size_t i = 0; i < base.log.size(); ++i) {
    const RewriteEvent& e = base.log[i];
    if (!e.applied && reused(of[trace.event_root[i]])) resume.refused.emplace(e.pattern, e.target);
  }

  // The state: the changed components' entries as the plan gives them, the others' as the base's
  // rewrites left them (with the origins and derived operations they made).
  std::unordered_map<std::string_view, std::uint32_t> written;  // by the base's operation names
  for (ir::OperationId op : base_graph.operations())
    written.emplace(name_of(base_graph, op), of[trace.root[op.index()]]);
  state.graph = std::move(s.graph);
  state.signatures = options_.signatures;
  state.plan.fuse_auto = resolved.fuse_auto;
  // The groups: the plan's, those of a reused component as the base's rewrites left them (what is
  // left of a group ends as it did; a group fused to its end is gone).
  std::unordered_map<std::string_view, const std::vector<std::string>*> left;
  for (const std::vector<std::string>& group : base.written.fuse)
    left.emplace(group.back(), &group);
  for (const std::vector<std::string>& group : resolved.fuse) {
    if (!reused(component_of(group.front()))) {
      state.plan.fuse.push_back(group);
    } else if (const auto found = left.find(group.back()); found != left.end()) {
      state.plan.fuse.push_back(*found->second);
    }
  }
  state.plan.outputs = resolved.outputs;
  for (const auto& [name, entry] : resolved.ops) {
    if (!reused(component_of(name))) state.plan.ops.emplace(name, entry);
  }
  for (const auto& [name, entry] : base.written.ops) {
    std::uint32_t c = kNone;
    if (auto w = written.find(name); w != written.end()) {
      c = w->second;
    } else if (auto o = base.origins.find(name); o != base.origins.end()) {
      c = component_of(o->second);
    } else {
      c = component_of(name);
    }
    if (c == kNone) return false;
    if (reused(c) && !state.plan.ops.emplace(name, entry).second) return false;
  }
  for (const auto& [name, origin] : base.origins) {
    if (reused(component_of(origin))) state.origins.emplace(name, origin);
  }
  for (const DerivedOperation& d : base.derived) {
    if (reused(component_of(d.origin))) state.derived.push_back(d);
  }

  LowerOptions options = options_;
  options.driver.resume = &resume;
  options.driver.trace = &record.trace;
  support::check_cancelled();
  std::vector<RewriteEvent> fresh = run_patterns(state, default_patterns(), options.driver);
  support::check_cancelled();
  // Every rewrite and refusal of this run at a changed component (else a match outside them
  // changed: the partition does not hold here).
  if (record.trace.event_root.size() != fresh.size()) return false;
  for (std::uint32_t root : record.trace.event_root) {
    if (reused(of[root])) return false;
  }
  // The log, the names: the base's of the reused components, then this run's.
  std::vector<std::uint32_t> event_root, name_root;
  log.clear();
  for (std::size_t i = 0; i < base.log.size(); ++i) {
    if (!reused(of[trace.event_root[i]])) continue;
    log.push_back(base.log[i]);
    event_root.push_back(trace.event_root[i]);
  }
  for (std::size_t i = 0; i < base.names.size(); ++i) {
    if (!reused(of[trace.name_root[i]])) continue;
    record.names.push_back(base.names[i]);
    name_root.push_back(trace.name_root[i]);
  }
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    log.push_back(std::move(fresh[i]));
    event_root.push_back(record.trace.event_root[i]);
  }
  for (std::size_t i = 0; i < state.taken_names.size(); ++i) {
    record.names.push_back(state.taken_names[i]);
    name_root.push_back(record.trace.name_root[i]);
  }
  record.trace.event_root = std::move(event_root);
  record.trace.name_root = std::move(name_root);
  if (!names_reusable(record)) return false;
  record.plan = resolved;
  record.written = state.plan;
  record.origins = state.origins;
  record.derived = state.derived;
  record.log = log;
  record.reusable = true;
  return true;
}

}  // namespace tapestry::rewrite
