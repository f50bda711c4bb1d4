// Property: for random graphs built from the built-ins (random_graphs.h) and random plans
// (splits on every dim, reduction dims included, even and uneven; decompose-linear; random
// fusion groups or "auto"), lowering succeeds, the lowered graph validates in the application
// dialect and every operation agrees with its kernel (lower() checks both:
// operation-kernel-agreement, kernel_agreement.h), and the application executor computes what
// the naive executor computes — bitwise without a reduction split, with one within the bars
// `tapestry run --verify` holds it to (runtime::verify_outputs, bound mode: each cell within its
// own error bar). A plan may fail to lower only for a refusal docs/rewrites.md documents (uneven
// `min` split).
//
// A failure prints the .tap program and the plan JSON, shrunk by rapidcheck; an assertion
// failure or a crash prints the unshrunk case first. To replay one:
//   tapestry run graph.tap --plan plan.json --verify
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <memory>

#include "rewrite/random_graphs.h"
#include "rewrite/random_plans.h"
#include "rewrite/rewrite_testing.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {
namespace {

std::string reproducer(const std::string& tap, const std::string& plan, const std::string& what) {
  return fmt::format("reproducer:\n--- graph.tap\n{}--- plan.json\n{}\n--- {}\n", tap, plan, what);
}

/// Statements per graph (sugar such as conv2d's padding adds operations).
constexpr int kMaxOperations = 8;

// The property below for graphs of `dtype` ("" for the generator's mix).
void check_sharded_equals_naive(const std::string& dtype) {
  const std::string tap = *testing::gen_tap_program(kMaxOperations, testing::Scale::kSmall, dtype);
  std::string messages;
  std::optional<ir::Graph> built = testing::try_build(tap, &messages);
  if (!built) RC_FAIL("the generator made a program that does not build:\n" + tap + messages);
  // The plan generator outlives this call (rapidcheck re-runs it to shrink): it owns the graph.
  const auto g = std::make_shared<const ir::Graph>(std::move(*built));
  const std::string plan_text = *rc::gen::exec([g] { return testing::random_plan(*g); });
  const testing::PrintOnCrash on_crash(reproducer(tap, plan_text, "crash"));
  const Plan plan = parse_plan(plan_text);

  std::optional<LowerResult> r;
  try {
    r = lower(*g, plan);
  } catch (const Error& e) {
    if (testing::documented_refusal(e.what())) {
      RC_TAG("documented refusal");
      return;
    }
    RC_FAIL(reproducer(tap, plan_text, std::string("lowering failed\n") + e.what()));
  }
  // Rewrites never give two operations one name (plans address operations by name).
  std::set<std::string> names;
  for (ir::OperationId op : r->graph.operations()) {
    const std::string name = operation_name(r->graph, op);
    if (!names.insert(name).second)
      RC_FAIL(reproducer(tap, plan_text, "two operations are named " + name));
  }
  bool reduction_split = false;
  bool decomposed = false;
  for (const RewriteEvent& e : r->log) {
    reduction_split |= e.applied && e.pattern == "split-reduction";
    decomposed |= e.applied && e.pattern == "decompose-linear";
    RC_CLASSIFY(e.applied && e.pattern != "shard-grid", e.pattern);
  }
  RC_TAG(reduction_split ? "reduction split" : "bitwise");
  // In a 16-bit graph decompose-linear's product and a split's partial sums are float32
  // (rewrite/mixed_precision.h): decomposed alone it is bitwise, split within the bars.
  RC_CLASSIFY(decomposed, "decomposed");
  try {
    if (reduction_split) {
      const runtime::VerifyReport report =
          testing::within_documented_bound(*g, testing::run_lowered(*g, r->graph));
      if (!report.pass()) RC_FAIL(reproducer(tap, plan_text, "results differ\n" + report.text()));
    } else {
      const runtime::TensorsComparison cmp = testing::run_both(*g, r->graph);
      if (!cmp.all_bitwise_equal())
        RC_FAIL(reproducer(tap, plan_text, "results differ\n" + cmp.summary()));
    }
  } catch (const Error& e) {
    RC_FAIL(reproducer(tap, plan_text, std::string("execution failed\n") + e.what()));
  }
}

RC_GTEST_PROP(LowerProperties, ShardedEqualsNaive, ()) {
  check_sharded_equals_naive("");
}

// bf16 and f16 graphs: every kernel computes in float32 and rounds its outputs once, fused
// stages round every intermediate, so sharding and fusion keep the naive run's bits; the
// float32 intermediates of decompose-linear too, and a reduction split stays within the bars.
RC_GTEST_PROP(LowerProperties, ShardedEqualsNaiveInBfloat16, ()) {
  check_sharded_equals_naive("bf16");
}
RC_GTEST_PROP(LowerProperties, ShardedEqualsNaiveInFloat16, ()) {
  check_sharded_equals_naive("f16");
}

// A random graph (its .tap program and the graph built from it) and a random plan for it.
struct Drawn {
  std::string tap;
  std::shared_ptr<const ir::Graph> graph;
  std::string plan;
};
Drawn draw_graph_and_plan() {
  std::string tap = *testing::gen_tap_program(kMaxOperations);
  std::optional<ir::Graph> built = testing::try_build(tap);
  if (!built) RC_FAIL("the generator made a program that does not build:\n" + tap);
  auto g = std::make_shared<const ir::Graph>(std::move(*built));
  std::string plan = *rc::gen::exec([g] { return testing::random_plan(*g); });
  return {std::move(tap), std::move(g), std::move(plan)};
}

// The rewrite driver that re-matches only around each rewrite (DriverOptions::reuse_matches, the
// default) gives what the plain driver gives — every pass re-matching every operation: the same
// log, and the same lowered graph, byte for byte in loom JSON (keys, order and all).
RC_GTEST_PROP(LowerProperties, DriverReusingMatchesEqualsThePlainDriver, ()) {
  const auto [tap, g, plan_text] = draw_graph_and_plan();
  const testing::PrintOnCrash on_crash(reproducer(tap, plan_text, "crash"));
  const Plan plan = parse_plan(plan_text);
  const auto lowered = [&](bool reuse) -> std::string {
    LowerOptions options;
    options.driver.reuse_matches = reuse;
    try {
      const LowerResult r = lower(*g, plan, options);
      std::string out = ir::write_graph_json(r.graph);
      for (const RewriteEvent& e : r.log) out += "\n" + e.to_string();
      return out;
    } catch (const Error& e) {
      return std::string("error: ") + e.what();
    }
  };
  const std::string plain = lowered(false);
  RC_CLASSIFY(plain.starts_with("error: "), "refused");
  if (lowered(true) != plain) RC_FAIL(reproducer(tap, plan_text, "the two drivers differ"));
}

// The rewritten graph's canonical order (run_patterns, pattern.h), whatever order the rewrites
// ran in: the operations the input had and kept, in the input's order (one per origin:
// strictly increasing), then the added ones grouped by the operation of the input they come
// from (RewriteState::origin; a fusion's, its producer's), the groups in the input's order
// (non-decreasing). The order numbers the Applications and breaks the simulation's ties.
RC_GTEST_PROP(LowerProperties, RewrittenGraphIsInTheInputsOrder, ()) {
  const auto [tap, g, plan_text] = draw_graph_and_plan();
  const testing::PrintOnCrash on_crash(reproducer(tap, plan_text, "crash"));
  std::map<std::string, std::size_t, std::less<>> position;
  for (ir::OperationId op : g->operations()) {
    position.emplace(operation_name(*g, op), position.size());
  }
  std::vector<RewriteEvent> log;
  RewriteState state;
  try {
    state = rewrite_operations(*g, parse_plan(plan_text), {}, log);
  } catch (const Error& e) {
    RC_DISCARD(e.what());
  }
  RC_CLASSIFY(std::any_of(log.begin(), log.end(), [](const RewriteEvent& e) { return e.applied; }),
              "rewritten");
  std::vector<std::size_t> origins;
  std::string names;
  for (ir::OperationId op : state.graph.operations()) {
    const std::string name = operation_name(state.graph, op);
    const auto from = position.find(state.origin(name));
    if (from == position.end()) RC_FAIL(reproducer(tap, plan_text, "no origin for " + name));
    origins.push_back(from->second);
    names += fmt::format(" {} (from {})", name, state.origin(name));
  }
  // A split k with origins[0, k) strictly increasing and origins[k, n) non-decreasing: the
  // strictly increasing prefix reaches the non-decreasing suffix.
  if (origins.empty()) return;
  std::size_t increasing = 1, sorted_from = origins.size() - 1;
  while (increasing < origins.size() && origins[increasing - 1] < origins[increasing]) ++increasing;
  while (sorted_from > 0 && origins[sorted_from - 1] <= origins[sorted_from]) --sorted_from;
  if (sorted_from > increasing) {
    RC_FAIL(reproducer(tap, plan_text, "operations out of the input's order:" + names));
  }
}

}  // namespace
}  // namespace tapestry::rewrite
