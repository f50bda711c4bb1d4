// Incremental rewrites (rewrite/incremental.h) against fresh ones, and the partition they rely
// on (pattern.h, OperationPattern::may_act_across), on random graphs and plans (random_graphs.h,
// random_plans.h) and walks of mutations of them.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "rewrite/random_graphs.h"
#include "rewrite/random_plans.h"
#include "rewrite/rewrite_testing.h"
#include "tapestry/rewrite/graph_copy.h"
#include "tapestry/rewrite/incremental.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {
namespace {

constexpr int kMaxOperations = 12;

std::string reproducer(const std::string& tap, const std::vector<std::string>& plans,
                       const std::string& what) {
  std::string out = fmt::format("reproducer:\n--- graph.tap\n{}", tap);
  for (std::size_t i = 0; i < plans.size(); ++i)
    out += fmt::format("--- plan {}\n{}\n", i, plans[i]);
  return out + "--- " + what + "\n";
}

// A random plan: fusion none, "auto" or groups (random_plans.h).
nlohmann::json random_plan_json(const ir::Graph& g) {
  return nlohmann::json::parse(testing::random_plan(g));
}

// One mutation of `plan`: an operation's entry replaced by another random plan's (or dropped),
// and now and then "fuse" switched.
nlohmann::json mutate(const ir::Graph& g, nlohmann::json plan) {
  const nlohmann::json other = random_plan_json(g);
  std::vector<std::string> names;
  for (ir::OperationId op : g.operations()) names.push_back(operation_name(g, op));
  const int changes = static_cast<int>(testing::pick(1, 2));
  for (int i = 0; i < changes; ++i) {
    const std::string& name = testing::pick_of(names);
    if (other["ops"].contains(name)) {
      plan["ops"][name] = other["ops"][name];
    } else {
      plan["ops"].erase(name);
    }
  }
  if (testing::chance(20)) {  // "fuse" switched, or another plan's groups
    if (other.contains("fuse")) {
      plan["fuse"] = other["fuse"];
    } else {
      plan.erase("fuse");
    }
  } else if (testing::chance(20) && plan.contains("fuse") && plan["fuse"].is_array() &&
             !plan["fuse"].empty()) {  // a group dropped
    plan["fuse"].erase(static_cast<std::size_t>(testing::pick(0, plan["fuse"].size() - 1)));
  }
  return plan;
}

// What must be equal: every node (kind, label, body, index and signature; the key of a node the
// input had — an added node's key follows the order the rewrites ran in, incremental.h), the plan,
// the origins, the derived operations and the log (as sets: their order follows that order too).
std::string differences(const RewriteState& a, const std::vector<RewriteEvent>& a_log,
                        const RewriteState& b, const std::vector<RewriteEvent>& b_log,
                        const std::vector<std::int64_t>& input) {
  if (a.graph.size() != b.graph.size())
    return fmt::format("{} nodes, fresh {}", a.graph.size(), b.graph.size());
  const std::vector<ir::NodeId> ids = a.graph.node_ids();
  for (ir::NodeId id : ids) {
    const ir::NodeView x = a.graph.node(id), y = b.graph.node(id);
    if (x.kind() != y.kind() || x.label() != y.label())
      return fmt::format("node {}: {} vs fresh {}", id.index(), x.label(), y.label());
    if (id.index() < input.size() && input[id.index()] >= 0 && x.key() != y.key())
      return fmt::format("node {} ({}): key {} vs fresh {}", id.index(), x.label(), x.key(),
                         y.key());
    if (x.ipf_index() != y.ipf_index()) return fmt::format("node {}: index", x.label());
    if (auto t = a.graph.as_tensor(id)) {
      if (!(a.graph.tensor(*t).body() == b.graph.tensor(*t).body()))
        return fmt::format("tensor {}: body", x.label());
    }
    if (auto op = a.graph.as_operation(id)) {
      if (!(a.graph.operation(*op).body() == b.graph.operation(*op).body()))
        return fmt::format("operation {}: body", x.label());
      const ir::IpfSignature* s = a.graph.operation(*op).ipf_signature();
      const ir::IpfSignature* t = b.graph.operation(*op).ipf_signature();
      if ((s == nullptr) != (t == nullptr) || (s != nullptr && !(*s == *t)))
        return fmt::format("operation {}: signature", x.label());
    }
  }
  if (!(a.plan == b.plan))
    return fmt::format("plan {} vs fresh {}", a.plan.to_json().dump(), b.plan.to_json().dump());
  if (a.origins != b.origins) return "origins";
  const auto names = [](const std::vector<DerivedOperation>& d) {
    std::vector<std::string> out;
    for (const DerivedOperation& x : d) out.push_back(x.name + " " + x.origin + " " + x.pattern);
    std::sort(out.begin(), out.end());
    return out;
  };
  if (names(a.derived) != names(b.derived)) return "derived operations";
  // The applied rewrites and the refusals of split-reduction and decompose-linear (what the cost
  // model reads of a log: cost::Evaluator): a fuse-elementwise refusal names the reader it found,
  // which another component may have rewritten by then or not — its text follows the order.
  const auto lines = [](const std::vector<RewriteEvent>& log) {
    std::vector<std::string> out;
    for (const RewriteEvent& e : log) {
      if (e.applied || e.pattern != "fuse-elementwise") out.push_back(e.to_string());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  if (lines(a_log) != lines(b_log)) {
    std::string text = "log:";
    for (const std::string& l : lines(a_log)) text += "\n  " + l;
    text += "\nfresh:";
    for (const std::string& l : lines(b_log)) text += "\n  " + l;
    return text;
  }
  return {};
}

// A walk of mutations rewritten incrementally, each step from the last, equals fresh rewrites of
// every plan of it.
RC_GTEST_PROP(IncrementalProperties, AWalkRewrittenIncrementallyEqualsFreshRewrites, ()) {
  const std::string tap = *testing::gen_tap_program(kMaxOperations);
  std::optional<ir::Graph> built = testing::try_build(tap);
  if (!built) RC_FAIL("the generator made a program that does not build:\n" + tap);
  const auto g = std::make_shared<const ir::Graph>(std::move(*built));
  const int steps = *rc::gen::inRange(2, 12);
  const std::vector<std::string> plans = *rc::gen::exec([g, steps] {
    std::vector<std::string> out;
    nlohmann::json plan = random_plan_json(*g);
    for (int i = 0; i < steps; ++i) {
      out.push_back(plan.dump());
      plan = mutate(*g, plan);
    }
    return out;
  });
  const testing::PrintOnCrash on_crash(reproducer(tap, plans, "crash"));
  IncrementalRewrites rewrites(*g, {});
  RC_CLASSIFY(rewrites.components().count > 1, "several components");
  std::unique_ptr<RewriteRecord> base;
  ir::Graph base_graph;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Plan plan = parse_plan(plans[i]);
    std::vector<RewriteEvent> fresh_log, log;
    std::optional<RewriteState> fresh, state;
    std::string fresh_error, error;
    try {
      fresh = rewrite_operations(*g, plan, {}, fresh_log);
    } catch (const Error& e) {
      fresh_error = e.what();
    }
    auto record = std::make_unique<RewriteRecord>();
    try {
      state = rewrites.rewrite(plan, log, *record, base.get(), base ? &base_graph : nullptr);
    } catch (const Error& e) {
      error = e.what();
    }
    if (error != fresh_error)
      RC_FAIL(reproducer(tap, plans,
                         fmt::format("step {}: '{}' vs fresh '{}'", i, error, fresh_error)));
    if (!state) {
      base.reset();
      continue;
    }
    const std::string diff = differences(*state, log, *fresh, fresh_log, record->trace.input);
    if (!diff.empty()) RC_FAIL(reproducer(tap, plans, fmt::format("step {}: {}", i, diff)));
    if (record->reusable) {
      base = std::move(record);
      base_graph = std::move(state->graph);
    }
  }
  RC_CLASSIFY(rewrites.stats().incremental > 0, "incremental");
  RC_CLASSIFY(rewrites.stats().components_reused > 0, "components reused");
}

// The partition: a pattern wrapped to check that every node its apply removes descends from an
// operation of the component of the operation it rewrites (the driver's roots, tracked here).
class Confined final : public OperationPattern {
 public:
  struct Roots {
    const RewriteComponents* components = nullptr;
    std::vector<std::uint32_t> root;  // by node index
    std::string fault;
  };
  Confined(const OperationPattern& inner, Roots& roots) : inner_(inner), roots_(roots) {}
  [[nodiscard]] std::string_view name() const override { return inner_.name(); }
  [[nodiscard]] MatchResult match(const RewriteState& state, ir::OperationId op) const override {
    return inner_.match(state, op);
  }
  std::string apply(RewriteState& state, ir::OperationId op) const override {
    std::vector<ir::NodeId> before = state.graph.node_ids();
    std::string summary = inner_.apply(state, op);
    const std::uint32_t root = roots_.root[op.index()];
    const std::uint32_t component = roots_.components->of[root];
    for (ir::NodeId id : before) {
      if (!state.graph.is_removed(id) ||
          roots_.components->of[roots_.root[id.index()]] == component)
        continue;
      // An input tensor without a producer has no component: it must not be removed either.
      roots_.fault = fmt::format("{} on {} removed {}, of another component", inner_.name(),
                                 operation_name(state.graph, op), id.index());
    }
    roots_.root.resize(state.graph.size(), root);
    return summary;
  }
  [[nodiscard]] bool may_act_across(const ir::Graph& graph, ir::OperationId producer,
                                    ir::TensorId t, ir::OperationId consumer) const override {
    return inner_.may_act_across(graph, producer, t, consumer);
  }

 private:
  const OperationPattern& inner_;
  Roots& roots_;
};

RC_GTEST_PROP(IncrementalProperties, EveryRewriteStaysInItsComponent, ()) {
  const std::string tap = *testing::gen_tap_program(kMaxOperations);
  std::optional<ir::Graph> built = testing::try_build(tap);
  if (!built) RC_FAIL("the generator made a program that does not build:\n" + tap);
  const auto g = std::make_shared<const ir::Graph>(std::move(*built));
  const std::string plan_text = *rc::gen::exec([g] { return testing::random_plan(*g); });
  const testing::PrintOnCrash on_crash(reproducer(tap, {plan_text}, "crash"));
  RewriteState state{.graph = copy_graph(*g).graph,
                     .plan = resolve_plan_names(parse_plan(plan_text), *g)};
  const RewriteComponents components = rewrite_components(state.graph, default_patterns());
  Confined::Roots roots{.components = &components, .root = {}, .fault = {}};
  for (std::uint32_t i = 0; i < state.graph.size(); ++i) {
    // A tensor's root: its producer (none: itself, of no component).
    roots.root.push_back(i);
  }
  for (ir::TensorId t : state.graph.tensors()) {
    const auto producers = state.graph.producers(t);
    if (!producers.empty()) roots.root[t.index()] = producers[0].index();
  }
  std::vector<std::unique_ptr<Confined>> wrapped;
  std::vector<const OperationPattern*> patterns;
  for (const OperationPattern* p : default_patterns()) {
    wrapped.push_back(std::make_unique<Confined>(*p, roots));
    patterns.push_back(wrapped.back().get());
  }
  try {
    const std::vector<RewriteEvent> log = run_patterns(state, patterns, {});
    RC_CLASSIFY(
        std::any_of(log.begin(), log.end(), [](const RewriteEvent& e) { return e.applied; }),
        "rewritten");
  } catch (const Error& e) {
    RC_DISCARD(e.what());
  }
  RC_CLASSIFY(components.count > 1, "several components");
  if (!roots.fault.empty()) RC_FAIL(reproducer(tap, {plan_text}, roots.fault));
}

}  // namespace
}  // namespace tapestry::rewrite
