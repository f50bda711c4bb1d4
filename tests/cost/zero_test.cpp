// Sharded parameters and optimizer state (rewrite/zero.h) end to end: what the rewrite builds at
// each stage (sliced updates, replicated new values, gathers and re-gathers with their ordering
// edge), what it refuses, the plan's `zero` member and its errors; a sharded training step equals
// the plain data-parallel step bitwise on the block executor (reference and fast kernels); the
// cost model's per-device memory drops by the sharded state, and explain says so.
#include "tapestry/rewrite/zero.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "cost/cost_testing.h"
#include "cost/step_testing.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/cost/explain.h"
#include "tapestry/ir/ordering.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/support/file.h"

namespace tapestry::cost {
namespace {

using testing::contains;
using testing::expect_bitwise_equal;
using testing::reads;
using testing::run_block;
using testing::StepRun;
using testing::toy_target;

// tests/data/training/NAME (a 3-layer MLP step with SGD and momentum, or Adam), built.
ir::Graph step(std::string_view name) {
  return rewrite::testing::build(
      tapestry::read_file(fmt::format("{}/training/{}", TAPESTRY_TEST_DATA, name)));
}

rewrite::Plan plan_of(std::string_view json) {
  return rewrite::parse_plan(json);
}

// zero_mlp_dp.json with a `zero` member.
rewrite::Plan dp_plan(std::string_view zero = "") {
  nlohmann::json j = nlohmann::json::parse(
      tapestry::read_file(std::string(TAPESTRY_TEST_DATA) + "/training/zero_mlp_dp.json"));
  if (!zero.empty()) j["zero"] = nlohmann::json::parse(zero);
  return rewrite::parse_plan(j.dump());
}

std::vector<const rewrite::RewriteEvent*> zero_events(const rewrite::LowerResult& r) {
  std::vector<const rewrite::RewriteEvent*> events;
  for (const rewrite::RewriteEvent& e : r.log) {
    if (e.pattern == rewrite::kZero) events.push_back(&e);
  }
  return events;
}

// The operations of `g` reading tensor `name`, by name.
std::vector<std::string> readers(const ir::Graph& g, std::string_view name) {
  std::vector<std::string> out;
  const ir::Graph::Named t = g.find_named(ir::NodeKind::kTensor, name);
  EXPECT_TRUE(t.node.has_value()) << name;
  if (!t.node) return out;
  for (ir::OperationId op : g.consumers(ir::TensorId(*t.node))) {
    out.push_back(rewrite::operation_name(g, op));
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Zero, Stage3GathersBeforeTheUsesAndRegathersForTheBackwardPass) {
  const ir::Graph g = step("zero_mlp.tap");
  const rewrite::LowerResult r =
      rewrite::lower(g, dp_plan(R"({"stage": 3, "params": ["W*", "b*"], "shards": 2})"));
  const auto events = zero_events(r);
  ASSERT_EQ(events.size(), 6u);  // W1 b1 W2 b2 W3 b3, in graph order
  for (const rewrite::RewriteEvent* e : events) EXPECT_TRUE(e->applied) << e->to_string();
  EXPECT_EQ(events[2]->target, "W2");
  EXPECT_EQ(events[2]->detail.substr(0, 52),
            "stage 3: W2n split d0=2 (state W2_v); W2/gather for ");
  // Each parameter is read by its update and its gathers only; the forward pass reads the gather,
  // the backward pass (the transposed weight of dH = dY·W) the re-gather.
  EXPECT_EQ(readers(r.graph, "W2"), (std::vector<std::string>{"W2/gather", "W2/regather", "W2n"}));
  EXPECT_TRUE(contains(reads(r.graph, "H2/linear"), "W2/gather"));
  EXPECT_EQ(readers(r.graph, "W2/regather").size(), 1u);
  // W1's gradient with respect to X is never asked for: W1 has no backward reader.
  EXPECT_EQ(readers(r.graph, "W1"), (std::vector<std::string>{"W1/gather", "W1n"}));
  EXPECT_EQ(readers(r.graph, "b3"), (std::vector<std::string>{"b3/gather", "b3n"}));
  EXPECT_FALSE(rewrite::find_operation(r.graph, "b3/regather"));
  // The re-gather starts after what the backward pass computes before it needs W2.
  const auto regather = rewrite::find_operation(r.graph, "W2/regather");
  ASSERT_TRUE(regather);
  EXPECT_FALSE(ir::after(r.graph, *regather).empty());
  // The updates and the gathers are sliced along dim 0; the new values stay sharded.
  for (std::string_view op : {"W1n", "W3n"}) EXPECT_EQ(r.plan.split_of(op, "d0"), 2) << op;
  EXPECT_EQ(r.plan.split_of("b2n", "d"), 2);  // a vector's one dim is d
  for (std::string_view op : {"W1/gather", "W2/regather"}) {
    EXPECT_EQ(r.plan.split_of(op, "d0"), 2) << op;
    EXPECT_EQ(r.graph.applications_of(*rewrite::find_operation(r.graph, op)).size(), 2u) << op;
  }
  EXPECT_TRUE(r.plan.outputs.empty());
}

TEST(Zero, Stages1And2SliceTheUpdateAndReplicateTheNewValue) {
  const ir::Graph g = step("zero_mlp_adam.tap");
  for (int stage : {1, 2}) {
    SCOPED_TRACE(stage);
    const rewrite::LowerResult r = rewrite::lower(
        g, dp_plan(fmt::format(R"({{"stage": {}, "params": ["W1", "W2"], "shards": 2}})", stage)));
    const auto events = zero_events(r);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0]->to_string(),
              fmt::format("applied  zero on W1: stage {}: W1n split d0=2 (state W1_m, W1_v); "
                          "W1n.result replicated",
                          stage));
    EXPECT_EQ(r.plan.split_of("W2n", "d0"), 2);
    EXPECT_EQ(r.plan.split_of("b2n", "d"), 1);  // not named
    ASSERT_TRUE(r.plan.outputs.contains("W1n.result"));
    EXPECT_EQ(r.plan.outputs.at("W1n.result").replicate, "all");
    EXPECT_FALSE(r.plan.outputs.contains("b1n.result"));
    EXPECT_FALSE(rewrite::find_operation(r.graph, "W1/gather"));
    EXPECT_TRUE(contains(reads(r.graph, "H1/linear"), "W1"));
  }
  // Along a mesh axis: the updates' dim 0 on the axis, the new value replicated along it.
  const rewrite::LowerResult r =
      rewrite::lower(g, dp_plan(R"({"stage": 2, "params": ["W1"], "shards": 2, "axis": "dp"})"));
  EXPECT_EQ(r.plan.ops.at("W1n").mesh, (std::map<std::string, std::string>{{"d0", "dp"}}));
  EXPECT_EQ(r.plan.outputs.at("W1n.result").replicate, "dp");
}

TEST(Zero, RefusesWhatItCannotShardWithTheReason) {
  const ir::Graph g = step("zero_mlp.tap");
  const rewrite::LowerResult r =
      rewrite::lower(g, plan_of(R"({"zero": {"stage": 3, "params": ["X", "W3"], "shards": 2}})"));
  const auto events = zero_events(r);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_FALSE(events[0]->applied);
  EXPECT_EQ(events[0]->detail,
            "no optimizer update (sgd, sgd_momentum, adam) reads X as its param: nothing updates "
            "it shard by shard");
  EXPECT_TRUE(events[1]->applied);
  EXPECT_FALSE(rewrite::find_operation(r.graph, "X/gather"));
  EXPECT_TRUE(contains(reads(r.graph, "H1/linear"), "X"));
}

TEST(Zero, PlanMemberAndItsErrors) {
  const rewrite::Plan p =
      plan_of(R"({"zero": {"stage": 3, "params": ["W1", "L*/W"], "shards": 4, "axis": "dp"}})");
  ASSERT_TRUE(p.zero);
  EXPECT_EQ(p.zero->stage, 3);
  EXPECT_EQ(p.zero->params, (std::vector<std::string>{"W1", "L*/W"}));
  EXPECT_EQ(p.zero->shards, 4);
  EXPECT_EQ(p.zero->axis, "dp");
  EXPECT_EQ(rewrite::parse_plan(p.to_json().dump()), p);
  EXPECT_EQ(rewrite::without_placement(p).zero->axis, "");
  const auto error = [](std::string_view text) {
    try {
      (void)rewrite::parse_plan(text, "p.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(R"({"zero": {"stage": 4, "params": ["W"], "shards": 2}})")
                .find("/zero/stage: the ZeRO stage is 1, 2 or 3"),
            std::string::npos);
  EXPECT_NE(error(R"({"zero": {"stage": 0, "params": ["W"], "shards": 2}})").find("/zero/stage"),
            std::string::npos);
  EXPECT_NE(error(R"({"zero": {"stage": 3, "params": ["W"], "shards": 1}})")
                .find("/zero/shards: the shard count must be an integer >= 2, got 1"),
            std::string::npos);
  EXPECT_NE(error(R"({"zero": {"stage": 3, "params": ["W"]}})").find("missing \"shards\""),
            std::string::npos);
  EXPECT_NE(error(R"({"zero": {"stage": 3, "params": [], "shards": 2}})")
                .find("/zero/params: name at least one parameter"),
            std::string::npos);
  EXPECT_NE(error(R"({"zero": {"stage": 3, "params": ["W", "W"], "shards": 2}})")
                .find("/zero/params/1: names 'W' again"),
            std::string::npos);
  EXPECT_NE(error(R"({"zero": {"stage": 3, "params": ["W"], "shards": 2, "mesh": "dp"}})")
                .find("/zero/mesh: unknown member"),
            std::string::npos);
  const ir::Graph g = step("zero_mlp.tap");
  const auto problems = [&](std::string_view zero) {
    return rewrite::testing::formatted(
        rewrite::check_plan(plan_of(fmt::format(R"({{"zero": {}}})", zero)), g));
  };
  auto found = problems(R"({"stage": 3, "params": ["W1", "Q"], "shards": 2})");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("/zero/params/1: no graph input named 'Q' (graph inputs: X, T, W1, "),
            std::string::npos)
      << found[0];
  found = problems(R"({"stage": 3, "params": ["H1"], "shards": 2})");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("'H1': it is computed by the graph, not a parameter"), std::string::npos)
      << found[0];
  found = problems(R"({"stage": 3, "params": ["Q*"], "shards": 2})");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("/zero/params/0: no graph input matches 'Q*'"), std::string::npos);
  // A shard count that does not divide a parameter's rows: W3 and b3 (and their momenta, which
  // the patterns match too) have 16.
  found = problems(R"({"stage": 3, "params": ["W*", "b*"], "shards": 32})");
  ASSERT_EQ(found.size(), 4u);
  EXPECT_NE(found[0].find("/zero/shards: parameter 'W3' has 16 rows (dim 0), not a multiple of 32 "
                          "shards"),
            std::string::npos)
      << found[0];
  EXPECT_TRUE(problems(R"({"stage": 3, "params": ["W*", "b*"], "shards": 4})").empty());
}

TEST(Zero, EqualsThePlainDataParallelStepBitwise) {
  const ir::Graph g = step("zero_mlp.tap");
  const rewrite::Plan plain = dp_plan();
  const std::string all = R"("params": ["W*", "b*"], "shards": 2)";
  for (int threads : {1, 2}) {
    SCOPED_TRACE(fmt::format("fast kernels, {} threads", threads));
    const StepRun a = run_block(g, plain, runtime::fast_kernels(), threads);
    for (int stage : {2, 3}) {
      SCOPED_TRACE(stage);
      expect_bitwise_equal(g, a,
                           run_block(g, dp_plan(fmt::format(R"({{"stage": {}, {}}})", stage, all)),
                                     runtime::fast_kernels(), threads));
    }
  }
  const runtime::ExecutableKernels& reference = runtime::ExecutableKernels::reference();
  expect_bitwise_equal(
      g, run_block(g, plain, reference, 1),
      run_block(g, dp_plan(R"({"stage": 3, "params": ["W*", "b*"], "shards": 4})"), reference, 2));
  // The comparison can fail: another learning rate for W2 changes W2n.
  ir::Graph other = rewrite::testing::build([] {
    std::string text =
        tapestry::read_file(std::string(TAPESTRY_TEST_DATA) + "/training/zero_mlp.tap");
    const std::string from = "W2n = sgd_momentum(W2, dW2, W2_v, lr=0.1";
    text.replace(text.find(from), from.size(), "W2n = sgd_momentum(W2, dW2, W2_v, lr=0.1001");
    return text;
  }());
  const StepRun changed = run_block(other, dp_plan(), reference, 1);
  const StepRun original = run_block(g, plain, reference, 1);
  const std::vector<ir::TensorId> outputs = runtime::graph_outputs(g);
  const std::vector<ir::TensorId> other_outputs = runtime::graph_outputs(other);
  ASSERT_EQ(outputs.size(), other_outputs.size());
  std::vector<std::string> differ;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const runtime::Buffer& x = original.outputs.at(outputs[i]);
    const runtime::Buffer& y = changed.outputs.at(other_outputs[i]);
    if (std::memcmp(x.bytes(), y.bytes(), x.size_bytes()) != 0)
      differ.push_back(g.display_name(outputs[i]));
  }
  EXPECT_EQ(differ, (std::vector<std::string>{"W2n.result"}));
}

// The cost model: each device keeps one block of every sharded parameter and state, receives the
// rest of a parameter for its uses and frees it after; so its peak drops against the plain
// data-parallel step, by at least the state it no longer keeps whole.
TEST(Zero, ShardingLowersEachDevicesPeakAndExplainSaysSo) {
  const ir::Graph g = step("zero_mlp_adam.tap");
  const Target two = toy_target(1, 2);
  Evaluator evaluator(g, two);
  const CostVector plain = evaluator.evaluate(dp_plan());
  const rewrite::Plan plan = dp_plan(R"({"stage": 3, "params": ["W*", "b*"], "shards": 2})");
  const CostVector sharded = evaluator.evaluate(plan);
  // W1 W2 W3 and their biases: 26,784 floats, and as many of each moment.
  const std::int64_t state = 3 * 4 * (128 * 64 + 128 + 128 * 128 + 128 + 16 * 128 + 16);
  EXPECT_LT(sharded.peak_memory_bytes, plain.peak_memory_bytes - state / 4)
      << sharded.peak_memory_bytes << " vs " << plain.peak_memory_bytes;
  const CostVector stage2 =
      evaluator.evaluate(dp_plan(R"({"stage": 2, "params": ["W*", "b*"], "shards": 2})"));
  EXPECT_LT(stage2.peak_memory_bytes, plain.peak_memory_bytes);
  EXPECT_LT(sharded.peak_memory_bytes, stage2.peak_memory_bytes);
  // The gathers are all-gathers, the gradients' combines reduce-scatters.
  const rewrite::LowerResult lowered = rewrite::lower(g, plan);
  const Placement placement = place(lowered.graph, lowered.plan, two);
  int all_gathers = 0;
  for (const Collective& c : placement.collectives) {
    if (c.kind == CollectiveKind::kAllGather) ++all_gathers;
  }
  EXPECT_GE(all_gathers, 6);  // the six forward gathers at least
  const std::optional<ZeroSharding> z = zero_sharding_of(g, plan, lowered, two, sharded);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->params, (std::vector<std::string>{"W1", "b1", "W2", "b2", "W3", "b3"}));
  EXPECT_EQ(z->states.size(), 12u);
  EXPECT_EQ(z->regathered, (std::vector<std::string>{"W2", "W3"}));
  EXPECT_EQ(z->sharded_bytes, state);
  EXPECT_EQ(z->whole_peak_memory_bytes, plain.peak_memory_bytes);
  Explanation e;
  e.zero = z;
  const std::string text = to_text(e);
  EXPECT_NE(text.find("Sharded   ZeRO-3 over 2 shards: parameters W1, b1, W2, b2, W3, b3 (gathered "
                      "before their uses, W2, W3 re-gathered for the backward pass), their "
                      "gradients (reduce-scattered into the sliced updates) and optimizer state "
                      "W1_m, W1_v, "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("; peak memory "), std::string::npos) << text;
  EXPECT_NE(text.find(", saves "), std::string::npos) << text;
  rewrite::Plan whole = plan;
  whole.zero.reset();
  EXPECT_FALSE(zero_sharding_of(g, whole, rewrite::lower(g, whole), two, plain));
}

}  // namespace
}  // namespace tapestry::cost
