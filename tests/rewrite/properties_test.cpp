// Property: for random graphs built from the built-ins (random_graphs.h) and random plans
// (splits on every dim, reduction dims included, even and uneven; decompose-linear; random
// fusion groups or "auto"), lowering succeeds, the lowered graph validates in the application
// dialect and every operation agrees with its kernel (lower() checks both:
// operation-kernel-agreement, kernel_agreement.h), and the application executor computes what
// the naive executor computes — bitwise without a reduction split, within the documented bound
// with one. A plan may fail to lower only for a refusal docs/rewrites.md documents (uneven `min`
// split).
//
// A failure prints the .tap program and the plan JSON, shrunk by rapidcheck; an assertion
// failure or a crash prints the unshrunk case first. To replay one:
//   tapestry run graph.tap --plan plan.json --verify
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <fmt/core.h>

#include <map>
#include <set>

#include "rewrite/random_graphs.h"
#include "rewrite/rewrite_testing.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {
namespace {

using testing::chance;
using testing::pick;

/// Shards along a dim of extent `e`: 1, 2, 3, e or anything in between (capped at e).
std::int64_t split_count(std::int64_t e) {
  switch (pick(0, 4)) {
    case 0:
      return 1;
    case 1:
      return std::min<std::int64_t>(2, e);
    case 2:
      return std::min<std::int64_t>(3, e);
    case 3:
      return e;
    default:
      return pick(1, e);
  }
}

/// Producer → consumer pairs: `consumer` reads a tensor `producer` writes.
std::vector<std::pair<std::string, std::string>> edges(const ir::Graph& g) {
  std::vector<std::pair<std::string, std::string>> out;
  for (ir::OperationId op : g.operations()) {
    for (const auto& in : g.operation(op).inputs().entries()) {
      for (ir::OperationId producer : g.producers(in.value.tensor)) {
        out.emplace_back(operation_name(g, producer), operation_name(g, op));
      }
    }
  }
  return out;
}

/// Fusion groups: disjoint producer → consumer pairs, some extended to chains of three.
nlohmann::json fusion_groups(const ir::Graph& g) {
  const auto pairs = edges(g);
  std::set<std::string> used;
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [producer, consumer] : pairs) {
    if (used.contains(producer) || used.contains(consumer) || !chance(60)) continue;
    std::vector<std::string> group = {producer, consumer};
    for (const auto& [p, c] : pairs) {
      if (p == consumer && !used.contains(c) && c != producer && chance(40)) {
        group.push_back(c);
        break;
      }
    }
    used.insert(group.begin(), group.end());
    groups.push_back(group);
  }
  return groups;
}

/// A random plan for `g`: most operations split on every index dim (reductions included),
/// linear sometimes decomposed on request, fusion none / "auto" / explicit groups.
///
/// Half the plans are *aligned*: every operation cuts its k-th non-reduction dim from the end
/// the same way (capped by the extent). The index dims of most kernels are their result's dims
/// in order, so a producer and its elementwise consumer then agree and fuse-elementwise applies;
/// independent splits mostly make it refuse ("splits disagree").
std::string random_plan(const ir::Graph& g) {
  const bool aligned = chance(50);
  std::vector<std::int64_t> by_position(8);
  for (std::int64_t& n : by_position) n = split_count(4);
  nlohmann::json ops = nlohmann::json::object();
  for (ir::OperationId op : g.operations()) {
    const ir::OperationView view = g.operation(op);
    const std::string name = operation_name(g, op);
    if (!aligned && !chance(75)) continue;
    std::size_t position = 0;  // among the non-reduction dims, from the last
    for (std::size_t d = view.index_rank(); d-- > 0;) {
      const std::int64_t extent = view.ipf_index()->extent(d);
      const bool reduction = view.reduction(d).has_value();
      const std::int64_t n =
          aligned && !reduction
              ? std::min(by_position[std::min(position++, std::size_t{7})], extent)
              : split_count(extent);
      if (n > 1) ops[name]["split"][view.index_name(d)] = n;
    }
  }
  for (ir::OperationId op : g.operations()) {
    if (g.operation(op).kernel() == "linear" && chance(30))
      ops[operation_name(g, op)]["substitute"] = {"decompose-linear"};
  }
  nlohmann::json plan = {{"ops", ops}};
  const std::int64_t fuse = pick(0, 2);  // none, "auto", explicit groups
  if (fuse == 1) plan["fuse"] = "auto";
  if (fuse == 2) plan["fuse"] = fusion_groups(g);
  return plan.dump();
}

std::string reproducer(const std::string& tap, const std::string& plan, const std::string& what) {
  return fmt::format("reproducer:\n--- graph.tap\n{}--- plan.json\n{}\n--- {}\n", tap, plan, what);
}

/// Statements per graph (sugar such as conv2d's padding adds operations).
constexpr int kMaxOperations = 8;

RC_GTEST_PROP(LowerProperties, ShardedEqualsNaive, ()) {
  const std::string tap = *testing::gen_tap_program(kMaxOperations);
  std::string messages;
  std::optional<ir::Graph> built = testing::try_build(tap, &messages);
  if (!built) RC_FAIL("the generator made a program that does not build:\n" + tap + messages);
  // The plan generator outlives this call (rapidcheck re-runs it to shrink): it owns the graph.
  const auto g = std::make_shared<const ir::Graph>(std::move(*built));
  const std::string plan_text = *rc::gen::exec([g] { return random_plan(*g); });
  const testing::PrintOnCrash on_crash(reproducer(tap, plan_text, "crash"));
  const Plan plan = parse_plan(plan_text);

  std::optional<LowerResult> r;
  try {
    r = lower(*g, plan);
  } catch (const Error& e) {
    if (testing::documented_refusal(*g, plan, e.what())) {
      RC_TAG("documented refusal");
      return;
    }
    RC_FAIL(reproducer(tap, plan_text, std::string("lowering failed\n") + e.what()));
  }
  bool reduction_split = false;
  for (const RewriteEvent& e : r->log) {
    reduction_split |= e.applied && e.pattern == "split-reduction";
    RC_CLASSIFY(e.applied && e.pattern != "shard-grid", e.pattern);
  }
  RC_TAG(reduction_split ? "reduction split" : "bitwise");
  try {
    const runtime::TensorsComparison cmp = testing::run_both(*g, r->graph);
    const bool ok =
        reduction_split ? testing::within_documented_bound(*g, cmp) : cmp.all_bitwise_equal();
    if (!ok) RC_FAIL(reproducer(tap, plan_text, "results differ\n" + cmp.summary()));
  } catch (const Error& e) {
    RC_FAIL(reproducer(tap, plan_text, std::string("execution failed\n") + e.what()));
  }
}

}  // namespace
}  // namespace tapestry::rewrite
