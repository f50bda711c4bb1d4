#include "tapestry/rewrite/pattern.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "tapestry/ir/issue.h"
#include "tapestry/rewrite/dim_aliases.h"
#include "tapestry/rewrite/graph_copy.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/json.h"

namespace tapestry::rewrite {

std::string RewriteEvent::to_string() const {
  const std::string on = origin.empty() || origin == target
                             ? target
                             : fmt::format("{} (from {} in the plan)", target, origin);
  return fmt::format("{:<8} {} on {}: {}", applied ? "applied" : "refused", pattern, on, detail);
}

std::string RewriteState::origin(std::string_view name) const {
  auto it = origins.find(name);
  return it == origins.end() ? std::string(name) : it->second;
}

void RewriteState::derive(const std::string& name, std::string_view from) {
  if (auto edges = after.find(from); edges != after.end() && name != from) {
    std::vector<std::string> keys = edges->second;  // copied: the insertion may move it
    std::vector<std::string>& to = after[name];
    for (std::string& key : keys) {
      if (std::find(to.begin(), to.end(), key) == to.end()) to.push_back(std::move(key));
    }
  }
  std::string root = origin(from);
  if (root == name) {
    origins.erase(name);
  } else {
    origins[name] = std::move(root);
  }
}

OpPlan RewriteState::plan_of_new(ir::OperationId op, std::string_view from,
                                 std::string_view pattern, OpPlan fallback) {
  const std::string name = operation_name(graph, op);
  derive(name, from);
  const ir::OperationView view = graph.operation(op);
  const std::optional<zspace::Range> index = view.ipf_index();
  DerivedOperation d{.name = name,
                     .kernel = view.kernel(),
                     .origin = origin(name),
                     .pattern = std::string(pattern),
                     .dims = view.index_names(),
                     .extents = {},
                     .reductions = {},
                     .aliases = index_dim_aliases(graph, op),
                     .plan = {},
                     .named = false};
  for (std::size_t k = 0; k < d.dims.size(); ++k) {
    d.extents.push_back(index ? index->extent(k) : 0);
    d.reductions.push_back(view.reduction(k));
  }
  OpPlan chosen = std::move(fallback);
  if (auto entry = derived_entries.find(name); entry != derived_entries.end()) {
    d.named = true;
    const std::string path = "/ops/" + zspace::json_pointer_token(name);
    std::vector<support::Diagnostic> found = check_entry(entry->second, name, path, graph, op);
    if (found.empty()) {
      chosen = resolve_entry(entry->second, graph, op);
    } else {
      for (support::Diagnostic& p : found) problems.push_back(std::move(p));
    }
    derived_entries.erase(entry);
  }
  d.plan = chosen;
  derived.push_back(std::move(d));
  return chosen;
}

namespace {

// operation_name without a copy.
std::string_view name_of(const ir::Graph& g, ir::OperationId op) {
  const std::string& label = g.operation(op).label();
  return label.empty() ? g.key(op) : std::string_view(label);
}

// The driver of run_patterns. One pass applies the first (pattern, operation) that matches, in
// pattern order then graph order, and the next pass starts over. Restarting from scratch made
// the driver quadratic — every pass re-matched every operation of the graph — so it remembers
// which operations a pattern did not match (`missed`, by node index) and forgets that only for
// the operations a rewrite may have changed the answer for (`forget_around`, under the locality
// contract in pattern.h). The rewrites edit the graph in place (ir::Graph::remove), and the
// driver copies it once at the end, in the order a copy after every rewrite would have left it.
class Driver {
 public:
  Driver(RewriteState& state, std::span<const OperationPattern* const> patterns,
         const DriverOptions& options)
      : state_(state),
        patterns_(patterns),
        options_(options),
        missed_(patterns.size()),
        times_(patterns.size()) {
    for (std::size_t p = 0; p < patterns.size(); ++p) {
      times_[p].pass = std::string(patterns[p]->name());
    }
  }

  std::vector<RewriteEvent> run() {
    for (ir::OperationId op : state_.graph.operations()) {
      by_name_.emplace(std::string(name_of(state_.graph, op)), op);
    }
    start_ = state_.graph.size();
    name_root_.assign(state_.taken_names.size(), std::numeric_limits<std::uint32_t>::max());
    if (const DriverResume* resume = options_.resume) {
      input_ = resume->input;
      root_ = resume->root;
      refused_ = resume->refused;
      for (std::vector<char>& missed : missed_) missed = resume->settled;
    } else {
      input_.resize(start_);
      root_.resize(start_);
      for (std::uint32_t i = 0; i < start_; ++i) input_[i] = root_[i] = i;
    }
    int applied = 0;
    while (true) {
      if (!apply_first_match()) break;
      if (++applied >= options_.max_rewrites) {
        throw Error(fmt::format("rewrite driver: more than {} rewrites; the last was {} on {}",
                                options_.max_rewrites, log_.back().pattern, log_.back().target));
      }
    }
    // Removed nodes leave; the rest take the canonical order (run_patterns). A resumed graph
    // holds removed nodes from the start (incremental.h), so it is copied whatever ran.
    const std::vector<ir::NodeId> order = canonical_order();
    if (applied > 0 || options_.resume != nullptr) {
      GraphCopy copy = copy_graph_nodes(state_.graph, order);
      state_.graph = std::move(copy.graph);
    }
    if (DriverTrace* trace = options_.trace) {
      trace->input.clear();
      trace->root.clear();
      for (ir::NodeId id : order) {
        trace->input.push_back(input_[id.index()]);
        trace->root.push_back(root_[id.index()]);
      }
      trace->event_root = std::move(event_root_);
      trace->name_root = std::move(name_root_);
    }
    if (options_.times != nullptr) {
      for (const PassTime& t : times_) {
        if (!options_.disabled.contains(t.pass)) options_.times->push_back(t);
      }
    }
    return std::move(log_);
  }

 private:
  // One pass: applies the first match found. False when nothing matched. Refusals are recorded
  // once per (pattern, operation name).
  bool apply_first_match() {
    for (std::size_t p = 0; p < patterns_.size(); ++p) {
      const OperationPattern* pattern = patterns_[p];
      if (options_.disabled.contains(pattern->name())) continue;
      std::vector<char>& missed = missed_[p];
      missed.resize(state_.graph.size(), 0);
      const Timer timer(times_[p]);
      for (ir::OperationId op : state_.graph.operations()) {
        if (missed[op.index()] && options_.reuse_matches) continue;
        MatchResult result = pattern->match(state_, op);
        const std::string target = operation_name(state_.graph, op);
        std::string origin = state_.origin(target);
        if (result) {
          const std::vector<ir::OperationId> before(state_.graph.operations().begin(),
                                                    state_.graph.operations().end());
          const std::size_t size = state_.graph.size();
          std::string summary = pattern->apply(state_, op);
          root_.resize(state_.graph.size(), root_[op.index()]);
          input_.resize(state_.graph.size(), -1);
          name_root_.resize(state_.taken_names.size(), root_[op.index()]);
          event_root_.push_back(root_[op.index()]);
          log_.push_back(
              {std::string(pattern->name()), target, std::move(origin), true, std::move(summary)});
          forget_around(before, size);
          ++times_[p].work;
          verify(log_.back());
          return true;
        }
        missed[op.index()] = 1;
        if (result.requested && refused_.emplace(std::string(pattern->name()), target).second) {
          event_root_.push_back(root_[op.index()]);
          log_.push_back({std::string(pattern->name()), target, std::move(origin), false,
                          std::move(result.reason)});
        }
      }
    }
    return false;
  }

  // The order run_patterns leaves the graph in: the non-operation nodes the driver started with
  // (not removed), in id order, then the added ones, then the operations it started with (not
  // removed), in id order, then the added ones; the added nodes grouped by the operation they
  // descend from (root_), the groups in id order, each in the order its nodes were added. So
  // what the rewrites added at an operation lies in that operation's place among the groups,
  // whatever other operations' rewrites did and in whichever order the driver met them.
  std::vector<ir::NodeId> canonical_order() const {
    const ir::Graph& g = state_.graph;
    std::vector<ir::NodeId> order, added;
    const auto by_input = [&](ir::NodeId a, ir::NodeId b) {
      return input_[a.index()] < input_[b.index()];
    };
    const auto by_root = [&](ir::NodeId a, ir::NodeId b) {
      return root_[a.index()] < root_[b.index()];
    };
    // The original nodes by input id (a fresh run has them in that order already; a resumed
    // one may not), then the added ones by root.
    const auto place = [&](std::vector<ir::NodeId>& originals) {
      if (options_.resume != nullptr) std::sort(originals.begin(), originals.end(), by_input);
      std::stable_sort(added.begin(), added.end(), by_root);
      originals.insert(originals.end(), added.begin(), added.end());
      added.clear();
    };
    for (ir::NodeId id : g.node_ids()) {
      const ir::NodeKind kind = g.kind(id);
      if (kind == ir::NodeKind::kOperation || kind == ir::NodeKind::kApplication) continue;
      (input_[id.index()] >= 0 ? order : added).push_back(id);
    }
    place(order);
    std::vector<ir::NodeId> ops;
    for (ir::OperationId op : g.operations()) (input_[op.index()] >= 0 ? ops : added).push_back(op);
    place(ops);
    order.insert(order.end(), ops.begin(), ops.end());
    return order;
  }

  // Adds the time from its construction to its destruction to a pass's.
  class Timer {
   public:
    explicit Timer(PassTime& time) : time_(time) {}
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;
    ~Timer() {
      time_.seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

   private:
    PassTime& time_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  };

  // DriverOptions::verify_each: the graph after `rewrite` is valid, or that rewrite has a bug.
  void verify(const RewriteEvent& rewrite) const {
    if (options_.verify_each == nullptr) return;
    const ir::ValidationReport report = ir::validate(state_.graph, *options_.verify_each);
    if (report.is_valid()) return;
    throw std::logic_error(fmt::format("{} on {} left the graph invalid:\n{}", rewrite.pattern,
                                       rewrite.target, ir::format_issues_text(report.issues)));
  }

  // After a rewrite that removed some of `before` and added the nodes from id `size` on: the
  // operations whose match may have changed are those next to a tensor the removed or added
  // operations read or write, and those sharing a name with one of them (their plan entries and
  // fusion groups are the ones a rewrite edits) together with the producers of their inputs.
  void forget_around(const std::vector<ir::OperationId>& before, std::size_t size) {
    const ir::Graph& g = state_.graph;
    std::vector<ir::OperationId> changed;
    for (ir::OperationId op : before) {
      if (g.is_removed(op)) changed.push_back(op);
    }
    for (std::size_t i = size; i < g.size(); ++i) {
      if (auto op = g.as_operation(ir::NodeId(static_cast<std::uint32_t>(i)))) {
        changed.push_back(*op);
      }
    }
    std::set<std::string_view> names;
    for (ir::OperationId op : changed) {
      names.insert(name_of(g, op));
      forget_next_to(g.operation(op));
    }
    // by_name_ follows the rewrite: the removed operations leave it, the added ones join it.
    for (ir::OperationId op : changed) {
      std::string name(name_of(g, op));
      if (!g.is_removed(op)) {
        by_name_.emplace(std::move(name), op);
        continue;
      }
      auto [first, last] = by_name_.equal_range(name);
      for (auto it = first; it != last; ++it) {
        if (it->second == op) {
          by_name_.erase(it);
          break;
        }
      }
    }
    for (std::string_view name : names) {
      auto [first, last] = by_name_.equal_range(std::string(name));
      for (auto it = first; it != last; ++it) {
        forget(it->second);
        forget_next_to(g.operation(it->second));
      }
    }
  }

  // The operations producing or consuming a tensor `view` reads or writes.
  void forget_next_to(const ir::OperationView& view) {
    const ir::Graph& g = state_.graph;
    for (const ir::SelectionMap* selections : {&view.inputs(), &view.outputs()}) {
      for (const auto& e : selections->entries()) {
        const ir::TensorId t = e.value.tensor;
        if (!t.is_valid() || g.is_removed(t)) continue;
        for (ir::OperationId op : g.producers(t)) forget(op);
        for (ir::OperationId op : g.consumers(t)) forget(op);
      }
    }
  }

  void forget(ir::OperationId op) {
    for (std::vector<char>& missed : missed_) {
      if (op.index() < missed.size()) missed[op.index()] = 0;
    }
  }

  RewriteState& state_;
  std::span<const OperationPattern* const> patterns_;
  const DriverOptions& options_;
  std::vector<std::vector<char>> missed_;  // per pattern, by node index: did not match
  std::vector<PassTime> times_;            // per pattern
  std::size_t start_ = 0;                  // the graph's size when the driver started
  /// By node index: the operation of the input graph that the node descends from (its node
  /// index; a rewrite's nodes descend from the operation it rewrote, a fusion's from the
  /// producer), for canonical_order; an original node's own index. A fresh run's input graph is
  /// the one it started with; a resumed run's, DriverResume's.
  std::vector<std::uint32_t> root_;
  /// By node index: the node's index in the input graph; -1 for a node a rewrite added.
  std::vector<std::int64_t> input_;
  std::vector<std::uint32_t> event_root_, name_root_;  // DriverTrace
  std::vector<RewriteEvent> log_;
  std::set<std::pair<std::string, std::string>> refused_;
  /// The graph's live operations by name (name_of, copied: its storage in the graph moves as
  /// the graph grows), for forget_around: a scan of every operation's name after every rewrite
  /// made the driver quadratic again (ViT-B/16's plans apply ~160 rewrites to ~550 operations).
  std::unordered_multimap<std::string, ir::OperationId> by_name_;
};

}  // namespace

std::vector<RewriteEvent> run_patterns(RewriteState& state,
                                       std::span<const OperationPattern* const> patterns,
                                       const DriverOptions& options) {
  return Driver(state, patterns, options).run();
}

}  // namespace tapestry::rewrite
