// Activation recomputation (rewrite/recompute.h) end to end: the copies and rewired backward uses
// the rewrite builds, what it refuses, the plan's `recompute` member and its errors; a recomputed
// training step equals the kept one bitwise on the block executor (reference and fast kernels),
// its measured peak memory drops, and the cost model's peak is within 10% of the measured one,
// with and without recomputation.
#include "tapestry/rewrite/recompute.h"

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

namespace tapestry::cost {
namespace {

using testing::contains;
using testing::example;
using testing::expect_bitwise_equal;
using testing::reads;
using testing::run_block;
using testing::StepRun;
using testing::toy_target;

// A 4-layer MLP's training step (the brief's stand-in): 1024 rows, hidden 128, a squared error —
// activations (512 KiB each) outweigh the weights, as in the steps recomputation is for.
constexpr std::string_view kMlp4 = R"(X: f32[1024, 64]
T: f32[1024, 16]
W1: f32[128, 64]
b1: f32[128]
W2: f32[128, 128]
b2: f32[128]
W3: f32[128, 128]
b3: f32[128]
W4: f32[16, 128]
b4: f32[16]
H1 = relu(linear(X, W1, b1))
H2 = relu(linear(H1, W2, b2))
H3 = relu(linear(H2, W3, b3))
Y = linear(H3, W4, b4)
E = sub(Y, T)
L = sum(sum(mul(E, E)))
dW1, db1, dW2, db2, dW3, db3, dW4, db4 = grad(L, W1, b1, W2, b2, W3, b3, W4, b4)
output L, dW1, db1, dW2, db2, dW3, db3, dW4, db4
)";

ir::Graph mlp4() {
  return rewrite::testing::build(kMlp4);
}

rewrite::Plan plan_of(std::string_view json) {
  return rewrite::parse_plan(json);
}

std::vector<const rewrite::RewriteEvent*> recompute_events(const rewrite::LowerResult& r) {
  std::vector<const rewrite::RewriteEvent*> events;
  for (const rewrite::RewriteEvent& e : r.log) {
    if (e.pattern == rewrite::kRecompute) events.push_back(&e);
  }
  return events;
}

TEST(Recompute, CopiesTheSegmentForItsBackwardUses) {
  const ir::Graph g = example("mlp_grad");
  const rewrite::LowerResult r = rewrite::lower(g, plan_of(R"({"recompute": ["H/linear", "H"]})"));
  const auto events = recompute_events(r);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(events[0]->applied && events[1]->applied);
  EXPECT_EQ(events[0]->to_string(),
            "applied  recompute on H/linear: copy H/linear/recompute for dW1/relu_grad, H's copy; "
            "starts after dW1/add");
  EXPECT_EQ(events[1]->to_string(), "applied  recompute on H: copy H/recompute for dW2");
  // The forward pass reads the originals, the backward pass the copies.
  EXPECT_TRUE(contains(reads(r.graph, "Y"), "H"));
  EXPECT_TRUE(contains(reads(r.graph, "dW2"), "H/recompute"));
  EXPECT_FALSE(contains(reads(r.graph, "dW2"), "H"));
  EXPECT_TRUE(contains(reads(r.graph, "dW1/relu_grad"), "H/linear/recompute"));
  EXPECT_TRUE(contains(reads(r.graph, "H"), "H/linear"));
  EXPECT_TRUE(contains(reads(r.graph, "H/recompute"), "H/linear/recompute"));
  EXPECT_EQ(reads(r.graph, "H/linear/recompute"), reads(r.graph, "H/linear"));
  // The first copy waits for what dW2 (its first backward use, through H's copy) reads besides.
  const auto copy = rewrite::find_operation(r.graph, "H/linear/recompute");
  ASSERT_TRUE(copy);
  const std::vector<ir::TensorId> after = ir::after(r.graph, *copy);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(r.graph.display_name(after[0]), "dW1/add");
  EXPECT_TRUE(ir::after(r.graph, *rewrite::find_operation(r.graph, "H/recompute")).empty());
}

TEST(Recompute, TakesTheOriginalsPlanAndPatterns) {
  const ir::Graph g = mlp4();
  const rewrite::LowerResult r = rewrite::lower(
      g, plan_of(R"({"ops": {"H2/linear": {"split": {"batch": 2}}}, "recompute": ["H2*"]})"));
  for (std::string_view name : {"H2/linear/recompute", "H2/recompute"}) {
    EXPECT_TRUE(rewrite::find_operation(r.graph, name)) << name;
  }
  EXPECT_EQ(r.plan.split_of("H2/linear/recompute", "batch"), 2);
  EXPECT_EQ(
      r.graph.applications_of(*rewrite::find_operation(r.graph, "H2/linear/recompute")).size(), 2u);
  EXPECT_FALSE(rewrite::find_operation(r.graph, "H1/recompute"));
}

TEST(Recompute, RefusesWhatItCannotBuildWithTheReason) {
  const ir::Graph g = example("mlp_grad");
  const auto refusal = [&](std::string_view plan) {
    const rewrite::LowerResult r = rewrite::lower(g, plan_of(plan));
    const auto events = recompute_events(r);
    EXPECT_EQ(events.size(), 1u) << plan;
    EXPECT_FALSE(rewrite::find_operation(r.graph, "E/recompute"));
    return events.empty() || events[0]->applied ? std::string("applied") : events[0]->detail;
  };
  EXPECT_EQ(refusal(R"({"recompute": ["E"]})"),
            "its input Y is freed after the forward pass (no later use reads it): the copy would "
            "keep it alive; recompute Y too");
  EXPECT_EQ(refusal(R"({"recompute": ["L"]})"),
            "its result L is a graph output, kept to the end anyway");
  EXPECT_EQ(refusal(R"({"recompute": ["dW1/add"]})").substr(0, 47),
            "no later use: no reader of dW1/add depends on a");
  // Recomputing E's producer too makes E's copy possible.
  const rewrite::LowerResult both = rewrite::lower(g, plan_of(R"({"recompute": ["Y", "E"]})"));
  for (const rewrite::RewriteEvent* e : recompute_events(both)) EXPECT_TRUE(e->applied);
  EXPECT_TRUE(rewrite::find_operation(both.graph, "E/recompute"));
}

TEST(Recompute, PlanMemberAndItsErrors) {
  const rewrite::Plan p = plan_of(R"({"recompute": ["H/linear", "L2/*"]})");
  EXPECT_EQ(p.recompute, (std::vector<std::string>{"H/linear", "L2/*"}));
  EXPECT_EQ(rewrite::parse_plan(p.to_json().dump()), p);
  EXPECT_TRUE(rewrite::matches_name_pattern("L2/*", "L2/a/b"));
  EXPECT_FALSE(rewrite::matches_name_pattern("L2/*", "L20"));
  EXPECT_TRUE(rewrite::matches_name_pattern("*linear", "H1/linear"));
  EXPECT_TRUE(rewrite::matches_name_pattern("H*/l*r", "H1/linear"));
  EXPECT_FALSE(rewrite::matches_name_pattern("H", "H1"));
  const auto error = [](std::string_view text) {
    try {
      (void)rewrite::parse_plan(text, "p.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(R"({"recompute": "H"})").find("/recompute: expected an array"),
            std::string::npos);
  EXPECT_NE(error(R"({"recompute": ["H", "H"]})").find("/recompute/1: names 'H' again"),
            std::string::npos);
  EXPECT_NE(error(R"({"recompute": [""]})").find("/recompute/0: an operation name cannot be empty"),
            std::string::npos);
  const ir::Graph g = example("mlp_grad");
  const auto problems =
      rewrite::testing::formatted(rewrite::check_plan(plan_of(R"({"recompute": ["H", "Q*"]})"), g));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("/recompute/1: no operation matches 'Q*'"), std::string::npos);
}

TEST(Recompute, EqualsTheKeptStepBitwiseAndItsPeakDrops) {
  const ir::Graph g = mlp4();
  const rewrite::Plan kept = plan_of(R"({"fuse": "auto"})");
  const rewrite::Plan recomputed =
      plan_of(R"({"fuse": "auto", "recompute": ["H1/linear", "H2/linear", "H3/linear"]})");
  for (int threads : {1, 2}) {
    SCOPED_TRACE(fmt::format("fast kernels, {} threads", threads));
    const StepRun a = run_block(g, kept, runtime::fast_kernels(), threads);
    const StepRun b = run_block(g, recomputed, runtime::fast_kernels(), threads);
    expect_bitwise_equal(g, a, b);
    // The three pre-activations (512 KiB each) are gone between the forward pass and their
    // backward uses.
    EXPECT_LT(b.estimated_peak, a.estimated_peak);
    if (threads == 1) {
      EXPECT_LT(b.measured_peak, a.measured_peak);
    }
  }
  // A sharded plan too: the copies take the originals' batch splits.
  const rewrite::Plan split = plan_of(
      R"({"ops": {"H1/linear": {"split": {"batch": 2}}, "dW1": {"split": {"batch": 2}}},
          "recompute": ["H1/linear", "H1"]})");
  rewrite::Plan split_kept = split;
  split_kept.recompute.clear();
  expect_bitwise_equal(g, run_block(g, split_kept, runtime::fast_kernels(), 2),
                       run_block(g, split, runtime::fast_kernels(), 2));
  // The reference kernels, on the small step (they are slow).
  const ir::Graph small = example("mlp_grad");
  const runtime::ExecutableKernels& reference = runtime::ExecutableKernels::reference();
  expect_bitwise_equal(
      small, run_block(small, plan_of("{}"), reference, 1),
      run_block(small, plan_of(R"({"recompute": ["H/linear", "H"]})"), reference, 2));
}

// The brief's measure: the cost model's peak memory (one device) within 10% of the block
// executor's measured peak (one thread, which runs the applications one at a time as the device
// does), with and without recomputation, on both stand-ins.
TEST(Recompute, TheModelsPeakIsTheMeasuredPeakWithinTenPercent) {
  const Target one = toy_target(1, 1);
  const struct {
    ir::Graph graph;
    std::string plan;
  } cases[] = {
      {example("mlp_grad"), R"({})"},
      {example("mlp_grad"), R"({"recompute": ["H/linear"]})"},
      {example("mlp_grad"), R"({"fuse": "auto", "recompute": ["H*/linear"]})"},
      {mlp4(), R"({})"},
      {mlp4(), R"({"recompute": ["H1/linear", "H2/linear", "H3/linear"]})"},
      {mlp4(), R"({"fuse": "auto", "recompute": ["H*/linear"]})"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.plan);
    const rewrite::Plan plan = plan_of(c.plan);
    Evaluator evaluator(c.graph, one);
    const CostVector cost = evaluator.evaluate(plan);
    const StepRun run = run_block(c.graph, plan, runtime::fast_kernels(), 1);
    const double ratio =
        static_cast<double>(cost.peak_memory_bytes) / static_cast<double>(run.measured_peak);
    EXPECT_GT(ratio, 0.9) << cost.peak_memory_bytes << " vs " << run.measured_peak;
    EXPECT_LT(ratio, 1.1) << cost.peak_memory_bytes << " vs " << run.measured_peak;
  }
}

TEST(Recompute, ExplainSaysWhatItSavesAndCosts) {
  const ir::Graph g = mlp4();
  const Target one = toy_target(1, 1);
  const rewrite::Plan plan = plan_of(R"({"recompute": ["H1/linear", "H1", "H3", "E", "L"]})");
  const rewrite::LowerResult lowered = rewrite::lower(g, plan);
  Evaluator evaluator(g, one);
  const CostVector cost = evaluator.evaluate(plan);
  const std::optional<Recomputation> r = recomputation_of(g, plan, lowered, one, cost);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->segments, (std::vector<std::string>{"H1/linear → H1", "H3"}));
  EXPECT_EQ(r->operations, 3);
  ASSERT_EQ(r->refused.size(), 2u);
  EXPECT_EQ(r->refused[0].substr(0, 24), "E: its input Y is freed ");
  rewrite::Plan kept = plan;
  kept.recompute.clear();
  const CostVector without = evaluator.evaluate(kept);
  EXPECT_EQ(r->kept_peak_memory_bytes, without.peak_memory_bytes);
  EXPECT_EQ(r->kept_makespan_s, without.makespan_s);
  EXPECT_EQ(r->peak_memory_bytes, cost.peak_memory_bytes);
  EXPECT_GT(r->makespan_s, r->kept_makespan_s);  // the copies' FLOPs
  Explanation e;
  e.recomputation = r;
  const std::string text = to_text(e);
  EXPECT_NE(text.find("Recompute 2 segments: H1/linear → H1; H3 (3 operations); peak memory "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  refused L: its result L is a graph output"), std::string::npos) << text;
  EXPECT_FALSE(recomputation_of(g, kept, rewrite::lower(g, kept), one, without));
}

}  // namespace
}  // namespace tapestry::cost
