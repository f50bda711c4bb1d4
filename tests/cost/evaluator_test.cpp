// Evaluator (cost/evaluator.h): the same Placement and CostVector as lower → place → simulate, on
// every example plan and on random graphs and plans; memoised rewrites reused across counts;
// errors exactly the reference path's.
#include "tapestry/cost/evaluator.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "cost/cost_testing.h"
#include "rewrite/random_plans.h"
#include "tapestry/cost/simulate.h"

namespace tapestry::cost {
namespace {

namespace fs = std::filesystem;
using testing::toy_target;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

rewrite::LowerOptions no_validation() {
  rewrite::LowerOptions options;
  options.validate = false;
  return options;
}

Placement reference_placement(const ir::Graph& g, const rewrite::Plan& plan, const Target& t) {
  const rewrite::LowerResult r = rewrite::lower(g, plan, no_validation());
  return place(r.graph, r.plan, t);
}

// The first difference between two placements, or "" when they are equal field by field.
std::string difference(const Placement& a, const Placement& b) {
  if (a.operations.size() != b.operations.size()) return "operation count";
  for (std::size_t i = 0; i < a.operations.size(); ++i) {
    const PlacedOperation &x = a.operations[i], &y = b.operations[i];
    if (x.id != y.id || x.name != y.name || x.kernel != y.kernel ||
        x.applications != y.applications || x.grid != y.grid || x.mesh_axis != y.mesh_axis) {
      return fmt::format("operation {} ({} vs {})", i, x.name, y.name);
    }
  }
  if (a.applications.size() != b.applications.size()) return "application count";
  for (std::size_t i = 0; i < a.applications.size(); ++i) {
    const PlacedApplication &x = a.applications[i], &y = b.applications[i];
    if (x.id != y.id || x.operation != y.operation || x.device != y.device ||
        x.work.flops != y.work.flops || x.work.bytes_read != y.work.bytes_read ||
        x.work.bytes_written != y.work.bytes_written || x.work.dtype != y.work.dtype ||
        x.local_producers != y.local_producers ||
        x.ordering_predecessors != y.ordering_predecessors || x.incoming != y.incoming ||
        x.writes_output != y.writes_output || x.pinned != y.pinned) {
      return fmt::format("application {}", i);
    }
  }
  if (a.transfers.size() != b.transfers.size())
    return fmt::format("transfer count ({} vs {})", a.transfers.size(), b.transfers.size());
  for (std::size_t i = 0; i < a.transfers.size(); ++i) {
    const Transfer &x = a.transfers[i], &y = b.transfers[i];
    if (x.tensor != y.tensor || x.box != y.box || x.bytes != y.bytes || x.from != y.from ||
        x.to != y.to || x.producer != y.producer || x.consumers != y.consumers ||
        x.collective != y.collective || x.replicates_output != y.replicates_output) {
      return fmt::format(
          "transfer {} (tensor {} vs {}, {}→{} vs {}→{}, producer {} vs {}, {} vs {} "
          "consumers, replicates {} vs {})",
          i, x.tensor.index(), y.tensor.index(), x.from, x.to, y.from, y.to, x.producer, y.producer,
          x.consumers.size(), y.consumers.size(), x.replicates_output, y.replicates_output);
    }
  }
  if (a.collectives != b.collectives) return "collectives";
  if (a.resident_input_bytes != b.resident_input_bytes) return "resident input bytes";
  if (a.shared_buffers.size() != b.shared_buffers.size()) return "shared buffer count";
  for (std::size_t i = 0; i < a.shared_buffers.size(); ++i) {
    const SharedBuffer &x = a.shared_buffers[i], &y = b.shared_buffers[i];
    if (x.tensor != y.tensor || x.device != y.device || x.writers != y.writers ||
        x.bytes != y.bytes) {
      return fmt::format("shared buffer {}", i);
    }
  }
  return "";
}

bool same_cost(const CostVector& a, const CostVector& b) {
  return to_json(a) == to_json(b) && a.makespan_s == b.makespan_s && a.energy_j == b.energy_j;
}

// The message of the Error `f` throws, or "" when it returns.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const ir::Graph& transformer() {
  static const ir::Graph g =
      rewrite::testing::build(read_text(fs::path(TAPESTRY_EXAMPLES) / "transformer_block.tap"));
  return g;
}

TEST(Evaluator, MatchesLowerPlaceSimulateOnEveryExamplePlan) {
  int checked = 0;
  for (const char* name : {"linear_relu", "mlp", "convnet", "transformer_block"}) {
    const ir::Graph g = rewrite::testing::build(
        read_text(fs::path(TAPESTRY_EXAMPLES) / (std::string(name) + ".tap")));
    std::vector<std::string> plans = {"{}", R"({"fuse": "auto"})"};
    for (const auto& entry : fs::directory_iterator(fs::path(TAPESTRY_EXAMPLES) / "plans")) {
      if (entry.path().filename().string().starts_with(std::string(name) + "-")) {
        plans.push_back(read_text(entry.path()));
      }
    }
    for (const std::string target_name : {"h100x8", "h100x64", "a100x8", "cpu-local"}) {
      const Target target = *preset_target(target_name);
      Evaluator ev(g, target);
      std::size_t rewrites = 0;
      for (int round = 0; round < 2; ++round) {  // the second round: every rewrite memoised
        for (const std::string& text : plans) {
          const rewrite::Plan plan = rewrite::parse_plan(text);
          const Placement expected = reference_placement(g, plan, target);
          SCOPED_TRACE(fmt::format("{} on {}: {}", name, target_name, text));
          EXPECT_EQ(difference(ev.place(plan), expected), "");
          EXPECT_TRUE(same_cost(ev.evaluate(plan), simulate(expected, target)));
          ++checked;
        }
        if (round == 0) rewrites = ev.stats().rewrites_run;
      }
      EXPECT_EQ(ev.stats().reference, 0u) << name << " on " << target_name;
      EXPECT_LE(rewrites, plans.size()) << name << " on " << target_name;
      EXPECT_EQ(ev.stats().rewrites_run, rewrites) << name << " on " << target_name;
    }
  }
  EXPECT_GE(checked, 80);
}

// Plans whose transfers form collectives of every kind the plans of these graphs reach: the
// Evaluator recognises them exactly as place() does, and prices them the same.
TEST(Evaluator, MatchesTheReferenceOnPlansWithCollectives) {
  constexpr std::string_view partials =
      "H: f32[8, 256, 64]\nW: f32[8, 64, 128]\nW3: f32[128, 128]\nb3: f32[128]\n"
      "P = matmul(H, W)\nY = reduce(P)\nO = linear(Y, W3, b3)\noutput O\n";
  const ir::Graph g = rewrite::testing::build(partials);
  const std::vector<std::string> plans = {
      // reduce-scatter + all-gather (an all-reduce)
      R"({"ops": {"P": {"split": {"batch": 8}}, "Y": {"split": {"d0": 8}}, "O": {"split": {"out": 8}}}})",
      // the same on 4 devices, the combine unsplit: a reduce onto gpu:0, then a broadcast
      R"({"ops": {"P": {"split": {"batch": 4}}, "O": {"split": {"out": 4}}}})",
      // two groups: P's blocks on gpu:0–3 and gpu:4–7 by m; Y cut by rows on both groups
      R"({"ops": {"P": {"split": {"batch": 4, "m": 2}, "place": ["gpu:0", "gpu:4", "gpu:1",
          "gpu:5", "gpu:2", "gpu:6", "gpu:3", "gpu:7"]}, "Y": {"split": {"d0": 8}}}})",
      // rows to columns: an all-to-all
      R"({"ops": {"Y": {"split": {"d0": 4}}, "O": {"split": {"batch": 2, "out": 2}}}})",
  };
  int collectives = 0;
  for (const std::string target_name : {"h100x8", "h100x64", "a100x8", "cpu-local"}) {
    const Target target = *preset_target(target_name);
    Evaluator ev(g, target);
    for (const std::string& text : plans) {
      if (target_name == "cpu-local" && text.find("gpu:") != std::string::npos) continue;
      const rewrite::Plan plan = rewrite::parse_plan(text);
      const Placement expected = reference_placement(g, plan, target);
      SCOPED_TRACE(fmt::format("{}: {}", target_name, text));
      EXPECT_EQ(difference(ev.place(plan), expected), "");
      EXPECT_TRUE(same_cost(ev.evaluate(plan), simulate(expected, target)));
      collectives += static_cast<int>(expected.collectives.size());
    }
    EXPECT_EQ(ev.stats().reference, 0u) << target_name;
  }
  EXPECT_GE(collectives, 20);
}

// The combine of a split reduction planned by default (colocated with its blocks, whose counts
// and place lists the rewrites see as symbols and markers), named by the plan, and outputs
// replicated: the Evaluator places them exactly as place() does.
TEST(Evaluator, MatchesTheReferenceOnCombinesAndReplicatedOutputs) {
  const ir::Graph g = rewrite::testing::build(
      "X: f32[512, 256]\nW1: f32[1024, 256]\nb1: f32[1024]\nW2: f32[256, 1024]\nb2: f32[256]\n"
      "H = relu(linear(X, W1, b1))\nY = linear(H, W2, b2)\noutput Y\n");
  const std::vector<std::string> plans = {
      R"({"ops": {"Y": {"split": {"in": 4}}}})",
      R"({"ops": {"Y": {"split": {"in": 4, "batch": 2}}}, "fuse": "auto"})",
      R"({"ops": {"Y": {"split": {"in": 4, "batch": 3}}}, "fuse": "auto"})",  // same key, other
                                                                              // count
      R"({"ops": {"Y": {"split": {"in": 4}, "place": ["gpu:7", "gpu:5", "gpu:3", "gpu:1"]}}})",
      R"({"ops": {"Y": {"split": {"in": 4}, "place": ["gpu:2", "gpu:0", "gpu:6", "gpu:4"]}}})",
      R"({"ops": {"Y": {"split": {"in": 4}}, "Y/matmul/reduce": {"split": {"d1": 2}}}})",
      R"({"ops": {"H/linear": {"split": {"out": 8}}, "H": {"split": {"d1": 8}},
                  "Y": {"split": {"in": 8}}}, "fuse": "auto", "outputs": {"Y": {"replicate": "all"}}})",
      R"({"ops": {"Y": {"split": {"in": 2, "batch": 4}}}, "outputs": {"Y": {"replicate": "all"}}})",
  };
  // On h100x64's dp × tp mesh: the combine on the blocks' axes, Y replicated along one axis.
  const std::vector<std::string> mesh_plans = {
      R"({"ops": {"Y": {"split": {"in": 8, "batch": 8}, "mesh": {"in": "tp", "batch": "dp"}}},
          "outputs": {"Y": {"replicate": "tp"}}})",
      R"({"ops": {"Y": {"split": {"in": 8, "batch": 4}, "mesh": {"in": "tp", "batch": "dp"}}},
          "outputs": {"Y": {"replicate": "dp"}}, "fuse": "auto"})",
  };
  int replicated = 0;
  for (const std::string target_name : {"h100x8", "h100x64"}) {
    const Target target = *preset_target(target_name);
    Evaluator ev(g, target);
    std::vector<std::string> all = plans;
    if (target_name == "h100x64") all.insert(all.end(), mesh_plans.begin(), mesh_plans.end());
    for (int round = 0; round < 2; ++round) {
      for (const std::string& text : all) {
        const rewrite::Plan plan = rewrite::parse_plan(text);
        const Placement expected = reference_placement(g, plan, target);
        SCOPED_TRACE(fmt::format("{}: {}", target_name, text));
        EXPECT_EQ(difference(ev.place(plan), expected), "");
        EXPECT_TRUE(same_cost(ev.evaluate(plan), simulate(expected, target)));
        for (const Transfer& t : expected.transfers) replicated += t.replicates_output ? 1 : 0;
      }
    }
    EXPECT_EQ(ev.stats().reference, 0u) << target_name;
  }
  EXPECT_GE(replicated, 100);
}

// Prices each of `plans` twice on h100x8 with one Evaluator (the second time from its memo),
// expecting the reference placement and cost and no reference path; returns how many of the
// reference placements' operations are named `name`.
int matches_reference(const ir::Graph& g, const std::vector<std::string>& plans,
                      std::string_view name) {
  const Target target = *preset_target("h100x8");
  Evaluator ev(g, target);
  int named = 0;
  for (int round = 0; round < 2; ++round) {
    for (const std::string& text : plans) {
      const rewrite::Plan plan = rewrite::parse_plan(text);
      const Placement expected = reference_placement(g, plan, target);
      SCOPED_TRACE(text);
      EXPECT_EQ(difference(ev.place(plan), expected), "");
      EXPECT_TRUE(same_cost(ev.evaluate(plan), simulate(expected, target)));
      for (const PlacedOperation& op : expected.operations) named += op.name == name ? 1 : 0;
    }
  }
  EXPECT_EQ(ev.stats().reference, 0u);
  return named;
}

// Recomputed training steps (rewrite/recompute.h): the copies' ordering edges become local
// producers on their device in both paths, and plans differing only in what they recompute do
// not share a rewritten graph.
TEST(Evaluator, MatchesTheReferenceOnRecomputedPlans) {
  const ir::Graph g = testing::example("mlp_grad");
  const std::vector<std::string> plans = {
      R"({"recompute": ["H/linear", "H"]})",
      R"({"recompute": ["H"]})",
      R"({"recompute": ["H/linear", "H"], "fuse": "auto"})",
      R"({"ops": {"H/linear": {"split": {"batch": 2}}, "dW1": {"split": {"batch": 2}},
                  "dW1/relu_grad": {"split": {"d0": 2}}}, "recompute": ["H/linear", "H"]})",
      R"({"ops": {"H/linear": {"split": {"batch": 4}}, "dW1": {"split": {"batch": 4}},
                  "dW1/relu_grad": {"split": {"d0": 4}}}, "recompute": ["H/linear", "H"],
          "fuse": "auto"})",
      R"({"ops": {"H/linear": {"split": {"batch": 2}, "place": ["gpu:1", "gpu:0"]}},
          "recompute": ["H/linear", "H"]})",
      R"({"recompute": ["E", "Y"]})",
      R"({"recompute": ["E"]})",
  };
  EXPECT_EQ(matches_reference(g, plans, "H/linear/recompute"),
            10);  // the five plans recomputing H/linear, twice
}

// Sharded parameters (rewrite/zero.h): the updates' slices, the gathers and the re-gathers'
// ordering edges, and the replicated new values (stages 1–2) or their absence (stage 3) match the
// reference placement, on a plan of a key met before with other counts too.
TEST(Evaluator, MatchesTheReferenceOnZeroPlans) {
  const ir::Graph g = rewrite::testing::build(
      tapestry::read_file(std::string(TAPESTRY_TEST_DATA) + "/training/zero_mlp_adam.tap"));
  const std::string dp =
      R"("H1/linear": {"split": {"batch": 2}}, "H2/linear": {"split": {"batch": 2}},
         "Y": {"split": {"batch": 2}}, "dW1": {"split": {"batch": 2}},
         "dW2": {"split": {"batch": 2}}, "dW3": {"split": {"batch": 2}})";
  const std::vector<std::string> plans = {
      R"({"zero": {"stage": 3, "params": ["W*", "b*"], "shards": 2}})",
      R"({"zero": {"stage": 2, "params": ["W*", "b*"], "shards": 2}})",
      R"({"zero": {"stage": 1, "params": ["W2"], "shards": 4}})",
      "{\"ops\": {" + dp + R"(}, "zero": {"stage": 3, "params": ["W*", "b*"], "shards": 2}})",
      "{\"ops\": {" + dp + R"(}, "zero": {"stage": 3, "params": ["W*", "b*"], "shards": 4}})",
      "{\"ops\": {" + dp + R"(}, "zero": {"stage": 2, "params": ["W1", "W2"], "shards": 2}})",
      "{\"ops\": {" + dp +
          R"(}, "fuse": "auto", "zero": {"stage": 3, "params": ["W*"], "shards": 2}})",
      "{\"ops\": {" + dp + R"(}, "outputs": {"W1n.result": {"replicate": "all"}},
          "zero": {"stage": 3, "params": ["W*"], "shards": 2}})",
  };
  EXPECT_EQ(matches_reference(g, plans, "W2/regather"), 10);  // five stage-3 plans, twice
}

// Plans that differ in non-reduction counts (keeping which are 1 and which are equal) and in
// place lists share one rewritten graph; a different reduction count or equality does not.
TEST(Evaluator, ReusesTheRewritesAcrossCountsAndPlaceLists) {
  const Target target = *preset_target("h100x8");
  Evaluator ev(transformer(), target);
  const auto plan = [](std::int64_t out, std::int64_t gelu, std::string_view place) {
    return rewrite::parse_plan(fmt::format(
        R"({{"ops": {{"M/linear": {{"split": {{"out": {}}}{}}}, "M/gelu": {{"split": {{"d1": {}}}}},
           "M": {{"split": {{"in": 2}}}}}}, "fuse": "auto"}})",
        out, place, gelu));
  };
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::string, std::size_t>> cases = {
      {4, 4, "", 1},                                  // a miss
      {8, 8, "", 1},                                  // equal counts stay equal: a hit
      {3, 3, "", 1},                                  // again
      {8, 8, R"(, "place": ["gpu:7", "gpu:6"])", 2},  // placing is in the key: a miss
      {4, 4, R"(, "place": ["gpu:1"])", 2},           // another list: a hit
      {4, 8, "", 3},                                  // no longer equal: fusion refuses
      {2, 8, "", 4},                                  // 2 equals M's reduction count: a miss
      {8, 2, "", 5},                                  // mirrored: a miss
  };
  for (const auto& [out, gelu, place, rewrites] : cases) {
    const rewrite::Plan p = plan(out, gelu, place);
    SCOPED_TRACE(fmt::format("out {} gelu {} {}", out, gelu, place));
    EXPECT_EQ(difference(ev.place(p), reference_placement(transformer(), p, target)), "");
    EXPECT_EQ(ev.stats().rewrites_run, rewrites);
  }
  EXPECT_EQ(ev.stats().reference, 0u);
}

// The memo is bounded in operations: with room for about two rewritten transformers, the least
// recently used one goes; an evicted structure is rewritten again, to the same placement.
TEST(Evaluator, BoundsItsMemoDroppingTheLeastRecentlyUsed) {
  const Target target = *preset_target("h100x8");
  const std::size_t ops = transformer().operations().size();
  Evaluator ev(transformer(), target, {}, 2 * ops + ops / 2);
  const auto plan = [](std::string_view ops_json, bool fuse) {
    return rewrite::parse_plan(
        fmt::format(R"({{"ops": {{{}}}, "fuse": {}}})", ops_json, fuse ? R"("auto")" : "[]"));
  };
  // Three rewrite structures (a reduction split, fusion on and off); each structure's graph
  // keeps roughly the transformer's operations.
  const rewrite::Plan a = plan(R"("M": {"split": {"in": 2}})", false);
  const rewrite::Plan b = plan(R"("M": {"split": {"in": 4}})", false);
  const rewrite::Plan c = plan(R"("M": {"split": {"in": 2}})", true);
  const auto check = [&](const rewrite::Plan& p, std::size_t rewrites, std::size_t evicted) {
    EXPECT_EQ(difference(ev.place(p), reference_placement(transformer(), p, target)), "");
    EXPECT_EQ(ev.stats().rewrites_run, rewrites);
    EXPECT_EQ(ev.stats().evicted, evicted);
  };
  check(a, 1, 0);
  check(b, 2, 0);
  check(a, 2, 0);  // a hit, and now the most recently used
  check(c, 3, 1);  // no room for three: b goes
  check(a, 3, 1);  // still there
  check(b, 4, 2);  // rewritten again (c goes)
  EXPECT_EQ(ev.stats().reference, 0u);
}

TEST(Evaluator, ReportsExactlyTheReferenceErrors) {
  const Target target = toy_target(1, 2);
  Evaluator ev(transformer(), target);
  const std::vector<std::string> bad = {
      R"({"ops": {"Nope": {"split": {"batch": 2}}}})",         // no such operation
      R"({"ops": {"Q/linear": {"split": {"nope": 2}}}})",      // no such dim
      R"({"ops": {"Q/linear": {"split": {"out": 100000}}}})",  // more shards than cells
      R"({"ops": {"Q/linear": {"place": ["gpu:9"]}}})",        // no such device
      R"({"ops": {"Q/linear": {"split": {"out": 2}, "mesh": {"out": "tp"}}}})",  // no mesh
  };
  for (const std::string& text : bad) {
    const rewrite::Plan plan = rewrite::parse_plan(text);
    const std::string expected = error_of([&] {
      const rewrite::LowerResult r = rewrite::lower(transformer(), plan, no_validation());
      (void)place(r.graph, r.plan, target);
    });
    ASSERT_NE(expected, "") << text;
    EXPECT_EQ(error_of([&] { (void)ev.evaluate(plan); }), expected) << text;
    EXPECT_EQ(error_of([&] { (void)ev.evaluate(plan); }), expected) << text;  // memoised
  }
}

// A cut shard-grid refuses after the rewrites (a reshape cut across the dims its output
// linearises) is refused by the fast path with lower's message — every refused operation, in
// graph order, whatever the plan's order — without rewriting again on the reference path. One
// Evaluator for every plan of a graph, each plan priced twice (memoised).
TEST(Evaluator, RefusesCutsWithLowersMessage) {
  const ir::Graph reshapes = rewrite::testing::build(R"(X: f32[8, 6, 4]
A = reshape(relu(X), shape=[48, 4])
B = reshape(exp(X), shape=[8, 24])
M = max(X, dim=2)
output A, B, M
)");
  struct Case {
    const ir::Graph* graph;
    std::string plan;
    std::size_t refused;  // operations named in the message
  };
  const std::vector<Case> cases = {
      {&transformer(), R"({"ops": {"Attn/reshape": {"split": {"d1": 2}}}})", 1},
      {&transformer(),
       R"({"ops": {"Attn/reshape": {"split": {"d3": 4, "d0": 2}}, "Q/linear": {"split": {"in": 2}}},
           "fuse": "auto"})",
       1},
      {&reshapes, R"({"ops": {"B": {"split": {"d2": 2}}, "A": {"split": {"d1": 3}}}})", 2},
      {&reshapes,
       R"({"ops": {"B": {"split": {"d2": 2}}, "A": {"split": {"d0": 2}}}, "fuse": "auto"})", 1},
      // A split reduction (split-reduction applies) beside the refused cut.
      {&reshapes, R"({"ops": {"M": {"split": {"reduced": 3}}, "A": {"split": {"d1": 2}}}})", 1},
  };
  const Target target = toy_target(1, 2);
  std::map<const ir::Graph*, std::unique_ptr<Evaluator>> evaluators;
  for (const Case& c : cases) {
    auto& ev = evaluators[c.graph];
    if (!ev) ev = std::make_unique<Evaluator>(*c.graph, target);
    const rewrite::Plan plan = rewrite::parse_plan(c.plan);
    const std::string expected = error_of([&] {
      const rewrite::LowerResult r = rewrite::lower(*c.graph, plan, no_validation());
      (void)place(r.graph, r.plan, target);
    });
    ASSERT_NE(expected, "") << c.plan;
    EXPECT_EQ(static_cast<std::size_t>(std::count(expected.begin(), expected.end(), '\n')),
              c.refused)
        << expected;
    for (int round = 0; round < 2; ++round) {
      EXPECT_EQ(error_of([&] { (void)ev->evaluate(plan); }), expected) << c.plan;
    }
    EXPECT_EQ(ev->stats().reference, 0u) << c.plan;
  }
}

// The Evaluator prices `plan` as simulate prices `expected` (the reference placement), or fails
// with simulate's message.
void priced_as_simulate(Evaluator& ev, const rewrite::Plan& plan, const Placement& expected,
                        const Target& target) {
  std::optional<CostVector> cost;
  const std::string cost_error = error_of([&] { cost = simulate(expected, target); });
  if (!cost_error.empty()) {
    RC_ASSERT(error_of([&] { (void)ev.evaluate(plan); }) == cost_error);
    return;
  }
  RC_ASSERT(same_cost(ev.evaluate(plan), *cost));
}

// A random graph of up to 4 operations (a case without one is discarded) and a toy target of
// 1–2 nodes of 1–3 devices, for the property tests below.
std::pair<std::shared_ptr<const ir::Graph>, Target> random_graph_and_target() {
  const std::string tap = *rewrite::testing::gen_tap_program(4);
  std::optional<ir::Graph> built = rewrite::testing::try_build(tap);
  RC_PRE(built.has_value());
  return {std::make_shared<const ir::Graph>(std::move(*built)),
          toy_target(*rc::gen::inRange<std::size_t>(1, 3), *rc::gen::inRange<std::size_t>(1, 4))};
}

// Random graphs and plans: the Evaluator equals the reference, including for a plan that reuses
// another's rewritten graph with other counts (each non-reduction count class moved to a fresh
// value).
RC_GTEST_PROP(EvaluatorProperties, EqualsLowerPlaceSimulate, ()) {
  const auto [g, target] = random_graph_and_target();
  Evaluator ev(*g, target);
  std::vector<rewrite::Plan> plans;
  for (int i = 0; i < 3; ++i) {
    const std::string text = *rc::gen::exec([g] { return rewrite::testing::random_plan(*g); });
    plans.push_back(rewrite::parse_plan(text));
  }
  // A variant of the first plan: one class of equal non-reduction counts (> 1) moved to a value
  // no count has, within every extent it is used on.
  {
    rewrite::Plan variant = plans[0];
    std::map<std::int64_t, std::int64_t> room;  // value → the smallest extent it splits
    std::set<std::int64_t> values;
    for (const auto& [name, op] : variant.ops) {
      const ir::OperationView view = g->operation(*rewrite::find_operation(*g, name));
      for (const auto& [dim, count] : op.split) {
        values.insert(count);
        const std::size_t d = *view.index_dim(dim);
        if (view.reduction(d) || count == 1) continue;
        auto [it, added] = room.emplace(count, view.ipf_index()->extent(d));
        if (!added) it->second = std::min(it->second, view.ipf_index()->extent(d));
      }
    }
    for (const auto& [value, extent] : room) {
      std::int64_t fresh = 2;
      while (values.contains(fresh)) ++fresh;
      if (fresh > extent) continue;
      for (auto& [name, op] : variant.ops) {
        for (auto& [dim, count] : op.split) {
          const ir::OperationView view = g->operation(*rewrite::find_operation(*g, name));
          if (count == value && !view.reduction(*view.index_dim(dim))) count = fresh;
        }
      }
      RC_TAG("a count class moved");
      break;
    }
    plans.push_back(std::move(variant));
  }
  std::size_t rewrites_before_variant = 0;
  for (const rewrite::Plan& plan : plans) {
    if (&plan == &plans.back()) rewrites_before_variant = ev.stats().rewrites_run;
    std::optional<Placement> expected;
    const std::string error = error_of([&] { expected = reference_placement(*g, plan, target); });
    if (!error.empty()) {
      RC_ASSERT(error_of([&] { (void)ev.place(plan); }) == error);
      continue;
    }
    const std::string diff = difference(ev.place(plan), *expected);
    RC_ASSERT(diff == "");
    priced_as_simulate(ev, plan, *expected, target);
  }
  RC_CLASSIFY(ev.stats().rewrites_run == rewrites_before_variant, "the variant reused a rewrite");
  RC_CLASSIFY(ev.stats().reference > 0, "reference path");
}

// Reuse across plans (evaluator.cpp, Fragment): one Evaluator walks a chain of small changes to
// a random plan — one operation's count along one dim, its devices, its substitution, or fusion
// on or off — and places every plan
// exactly as lower → place does, field by field (kernel shares and GEMM FLOPs too), and prices
// it as simulate does. The reused fragments are keyed on an operation's content, its counts and
// its producers' content, port and counts; a key without the producers' counts, or without the
// operation's own, fails within a few dozen cases.
RC_GTEST_PROP(EvaluatorProperties, ReusesOperationsAcrossPlansAsAFreshPlacementDoes, ()) {
  const auto [g, target] = random_graph_and_target();
  Evaluator ev(*g, target);
  rewrite::Plan plan =
      rewrite::parse_plan(*rc::gen::exec([g] { return rewrite::testing::random_plan(*g); }));
  std::vector<std::string> names;
  for (ir::OperationId op : g->operations()) names.push_back(rewrite::operation_name(*g, op));
  RC_PRE(!names.empty());
  for (int step = 0; step < 10; ++step) {
    const std::string& name = names[*rc::gen::inRange<std::size_t>(0, names.size())];
    const ir::OperationView view = g->operation(*rewrite::find_operation(*g, name));
    rewrite::OpPlan& entry = plan.ops[name];
    const int kind = *rc::gen::inRange(0, 8);
    if (kind == 0) {  // fusion on or off: other producers for the same readers
      plan.fuse_auto = !plan.fuse_auto;
      plan.fuse.clear();
    } else if (kind == 1 && view.kernel() == "linear") {  // a substitution on or off
      if (entry.substitute.empty()) {
        entry.substitute = {"decompose-linear"};
      } else {
        entry.substitute.clear();
      }
    } else if (kind < 6 && view.index_rank() > 0) {  // a count
      const std::size_t d = *rc::gen::inRange<std::size_t>(0, view.index_rank());
      const std::int64_t extent = std::max<std::int64_t>(view.ipf_index()->extent(d), 1);
      entry.split[view.index_name(d)] =
          *rc::gen::inRange<std::int64_t>(1, std::min<std::int64_t>(extent, 4) + 1);
    } else {  // devices
      entry.mesh.clear();
      entry.place.clear();
      const std::size_t n = *rc::gen::inRange<std::size_t>(0, 3);
      for (std::size_t k = 0; k < n; ++k) {
        entry.place.push_back(
            target.devices[*rc::gen::inRange<std::size_t>(0, target.devices.size())].name);
      }
    }
    std::optional<Placement> expected;
    const std::string error = error_of([&] { expected = reference_placement(*g, plan, target); });
    if (!error.empty()) {
      RC_ASSERT(error_of([&] { (void)ev.place(plan); }) == error);
      continue;
    }
    const Placement& placed = ev.place(plan);
    RC_ASSERT(difference(placed, *expected) == "");
    for (std::size_t i = 0; i < placed.operations.size(); ++i) {
      const std::vector<KernelShare>& a = placed.operations[i].kernels;
      const std::vector<KernelShare>& b = expected->operations[i].kernels;
      RC_ASSERT(a.size() == b.size());
      for (std::size_t k = 0; k < a.size(); ++k) {
        RC_ASSERT(a[k].kernel == b[k].kernel);
        RC_ASSERT(a[k].share == b[k].share);
      }
    }
    for (std::size_t a = 0; a < placed.applications.size(); ++a) {
      RC_ASSERT(placed.applications[a].work.gemm_flops ==
                expected->applications[a].work.gemm_flops);
    }
    priced_as_simulate(ev, plan, *expected, target);
  }
  RC_CLASSIFY(ev.stats().operations_reused > 0, "operations reused");
}

}  // namespace
}  // namespace tapestry::cost
