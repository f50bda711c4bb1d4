// The search on a training step: the recompute, zero and pipeline plan members searched with the
// cuts (mutate.h), the training step's plan space (plan_space.h: TrainingSpace), the standard
// training plans as seeds and yardstick (cost/standard_plans.h), refusals counted by reason.
//
// The step: tests/data/search/gpt_train_tiny.tap, written by `search_bench --train-tap … --layers 2
// --d 64 --seq 8 --batch 4 --heads 4 --dtype f32` (bench/search_bench.cpp): two GPT-style layers,
// an mse loss, `grad` of every weight, Adam.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "search_testing.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/cost/standard_plans.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/search/mutate.h"
#include "tapestry/search/optimize.h"
#include "tapestry/search/plan_space.h"
#include "tapestry/support/error.h"

namespace tapestry::search {
namespace {

const ir::Graph& step() {
  static const ir::Graph g = testing::test_graph("gpt_train_tiny.tap");
  return g;
}

const cost::Target& h100x64() {
  static const cost::Target t = *cost::preset_target("h100x64");
  return t;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The oracle for a checkpoint: without the operation's result, the loss no longer depends on the
// layer stack's input X0 — found by a search of the graph's edges, not by the topological sweep
// cost::training_roles makes. (The target T, read by the loss alone, cuts nothing.)
bool loss_reaches_data_without(const ir::Graph& g, const std::string& loss,
                               const std::string& removed_op) {
  std::vector<ir::TensorId> todo;
  for (ir::TensorId t : g.tensors()) {
    if (rewrite::output_name(g, t) == loss) todo.push_back(t);
  }
  std::set<std::uint32_t> seen;
  while (!todo.empty()) {
    const ir::TensorId t = todo.back();
    todo.pop_back();
    if (!seen.insert(t.index()).second) continue;
    const std::string name = rewrite::output_name(g, t);
    if (name == "X0") return true;
    for (ir::OperationId p : g.producers(t)) {
      if (rewrite::operation_name(g, p) == removed_op) continue;
      for (const auto& entry : g.operation(p).inputs().entries())
        todo.push_back(entry.value.tensor);
    }
  }
  return false;
}

TEST(TrainingSpace, ReadsTheParametersLayersCheckpointsAndRecomputeSets) {
  const cost::TrainingRoles roles = cost::training_roles(step());
  EXPECT_EQ(roles.loss, "L");
  EXPECT_EQ(roles.parameters.size(), 24u);  // 12 weights × 2 layers
  EXPECT_TRUE(contains(roles.parameters, "Wq0") && contains(roles.parameters, "bb1"));
  EXPECT_FALSE(contains(roles.parameters, "Wq0_m"));  // optimizer state is not a parameter
  // Every checkpoint found is a cut of the forward pass; the residual stream is found.
  for (const std::string& c : roles.checkpoints) {
    EXPECT_FALSE(loss_reaches_data_without(step(), "L", c)) << c;
  }
  for (const char* c : {"R0", "X1", "R1", "X2"}) {
    EXPECT_TRUE(contains(roles.checkpoints, c)) << c;
  }
  // An operation off the residual stream is not a checkpoint (and the oracle agrees).
  EXPECT_FALSE(contains(roles.checkpoints, "P1"));
  EXPECT_TRUE(loss_reaches_data_without(step(), "L", "P1"));
  // Full recomputation: the rest of each layer; selective: the scores and the softmax.
  for (const char* op : {"P0", "S1", "M1", "A1"}) EXPECT_TRUE(contains(roles.full, op)) << op;
  EXPECT_FALSE(contains(roles.full, "X1"));
  EXPECT_FALSE(contains(roles.full, "L"));
  for (const std::string& op : roles.full) EXPECT_TRUE(contains(roles.forward, op)) << op;
  std::set<std::string> selective(roles.selective.begin(), roles.selective.end());
  EXPECT_EQ(selective, (std::set<std::string>{"S0", "S0/matmul", "P0", "S1", "S1/matmul", "P1"}));

  const PlanSpace tied(step(), h100x64(), true);
  const TrainingSpace& t = tied.training();
  ASSERT_TRUE(tied.is_training_step());
  ASSERT_EQ(t.layers.size(), 2u);
  for (const auto& layer : t.layers) EXPECT_EQ(layer.size(), t.layers[0].size());
  EXPECT_TRUE(contains(t.layers[1], "P1") && contains(t.layers[1], "X2"));
  EXPECT_EQ(t.selective, (std::vector<std::string>{"S0/matmul", "S0", "P0"}));  // representatives
  EXPECT_EQ(t.microbatches, (std::vector<std::int64_t>{2, 4}));                 // batch 4
  EXPECT_EQ(t.zero_shards, (std::vector<std::int64_t>{2, 4, 8, 16, 32, 64}));   // rows 64, 256

  // Not a training step: nothing of it.
  const PlanSpace forward(testing::example_graph("transformer_block.tap"), h100x64(), true);
  EXPECT_FALSE(forward.is_training_step());
  EXPECT_TRUE(forward.training().layers.empty());
}

TEST(TrainingSpace, ExpandRecomputesARepresentativesKindInEveryLayer) {
  const PlanSpace tied(step(), h100x64(), true);
  rewrite::Plan genome;
  genome.recompute = {"P0", "M0/linear"};
  const rewrite::Plan plan = tied.expand(genome);
  EXPECT_EQ(plan.recompute, (std::vector<std::string>{"P0", "M0/linear", "P1", "M1/linear"}));
}

// The prefix search of --tie-layers (layer_prefix) on a training step: the prefix drops the
// optimizer updates, so the step's `update` statements (which name their results) go too.
TEST(TrainingSpace, ThePrefixOfATrainingStepReads) {
  const PlanSpace tied(step(), h100x64(), true);
  std::optional<ir::Graph> prefix;
  ASSERT_NO_THROW(prefix = layer_prefix(step(), tied, 1));
  ASSERT_TRUE(prefix.has_value());
  EXPECT_LT(prefix->operations().size(), step().operations().size());
  EXPECT_TRUE(rewrite::find_operation(*prefix, "P0").has_value());
}

// The three kinds change the plan, and what they make prices the way lower → place → simulate
// does, or is refused with a reason; a refused plan names its rewrite.
TEST(TrainingMutations, EachKindChangesTheStepAndItsPlansPriceOrAreRefusedWithAReason) {
  const cost::Target& target = h100x64();
  const PlanSpace tied(step(), target, true);
  cost::Evaluator ev(step(), target);
  const std::vector<SeedPlan> seeds = seed_plans(tied);
  for (Mutation kind : {Mutation::kRecompute, Mutation::kZero, Mutation::kPipeline}) {
    int changed = 0, priced = 0;
    std::set<std::string> seen;
    for (std::uint64_t i = 0; i < 12; ++i) {
      Rng rng = Rng::for_slot(11, static_cast<std::uint64_t>(kind), i);
      rewrite::Plan genome = seeds[i % 2].genome;  // unsharded, data-parallel
      const rewrite::Plan before = genome;
      if (!mutate_once(tied, kind, genome, rng)) continue;
      ++changed;
      EXPECT_FALSE(genome == before);
      if (kind == Mutation::kRecompute) {
        EXPECT_NE(genome.recompute, before.recompute);
      } else if (kind == Mutation::kZero) {
        EXPECT_NE(genome.zero, before.zero);
      } else {
        EXPECT_NE(genome.pipeline, before.pipeline);
      }
      const rewrite::Plan plan = tied.expand(genome);
      seen.insert(genome.to_json().dump());
      try {
        const cost::CostVector c = ev.evaluate(plan);
        const rewrite::LowerResult lowered = rewrite::lower(step(), plan);
        const cost::CostVector reference =
            cost::simulate(cost::place(lowered.graph, lowered.plan, target), target);
        EXPECT_EQ(cost::to_json(c).dump(), cost::to_json(reference).dump());
        ++priced;
      } catch (const Error& e) {
        EXPECT_FALSE(std::string(e.what()).empty());
      }
    }
    SCOPED_TRACE(mutation_name(kind));
    EXPECT_GE(changed, 6);
    EXPECT_GE(seen.size(), 3u);  // not one move over and over
    EXPECT_GE(priced * 2, changed);
  }
}

// What each member does to the priced step: recomputation and ZeRO-3 lower the peak, a pipeline
// of k stages uses k devices.
TEST(TrainingMutations, TheMembersChangeWhatTheStepCosts) {
  const cost::Target& target = h100x64();
  const PlanSpace tied(step(), target, true);
  cost::Evaluator ev(step(), target);
  const rewrite::Plan dp = seed_plans(tied)[1].genome;
  ASSERT_EQ(seed_plans(tied)[1].name, "data-parallel");
  const cost::CostVector kept = ev.evaluate(tied.expand(dp));

  rewrite::Plan full = dp;
  full.recompute = tied.training().full;
  const cost::CostVector recomputed = ev.evaluate(tied.expand(full));
  EXPECT_LT(recomputed.peak_memory_bytes, kept.peak_memory_bytes);
  EXPECT_GT(recomputed.makespan_s, kept.makespan_s);

  rewrite::Plan sharded = dp;
  sharded.zero =
      rewrite::ZeroPlan{.stage = 3, .params = tied.training().parameters, .shards = 4, .axis = {}};
  EXPECT_LT(ev.evaluate(tied.expand(sharded)).peak_memory_bytes, kept.peak_memory_bytes);

  rewrite::Plan piped;
  piped.pipeline =
      rewrite::PipelinePlan{.stages = {}, .microbatches = 2, .schedule = "1f1b", .devices = {}};
  for (std::size_t l = 0; l < 2; ++l) {
    piped.pipeline->stages.push_back(tied.training().layers[l]);
  }
  EXPECT_EQ(ev.evaluate(tied.expand(piped)).devices_used, 2);
  // The pipeline refuses a batch cut (data parallelism inside a stage is not built): an error
  // naming the pipeline.
  rewrite::Plan both = dp;
  both.pipeline = piped.pipeline;
  try {
    (void)ev.evaluate(tied.expand(both));
    ADD_FAILURE() << "a pipeline over a batch cut priced";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline"), std::string::npos) << e.what();
  }
}

std::string front_text(const OptimizeResult& r) {
  std::string s;
  for (const ArchiveEntry& e : r.archive.front()) {
    s += e.genome.to_json().dump() + " " + cost::to_json(e.cost).dump() + "\n";
  }
  return s;
}

// The search with the training members only (and the cuts): deterministic for a seed and a
// budget on 1 thread or 2; refusals counted by reason and never on the front; every front plan
// under the memory cap; the members reach the front.
TEST(TrainingSearch, IsDeterministicCountsRefusalsAndKeepsTheCap) {
  const cost::Target& target = h100x64();
  OptimizeOptions o{.objectives = {Objective::kTime, Objective::kMemory},
                    .seed = 3,
                    .threads = 1,
                    .max_evaluations = 64,
                    .tie_layers = true};
  o.prefix_layers = 0;
  // Under the data-parallel plan's peak: the plain cuts alone do not reach it.
  cost::Evaluator ev(step(), target);
  const PlanSpace tied(step(), target, true);
  const std::int64_t dp_peak =
      ev.evaluate(tied.expand(seed_plans(tied)[1].genome)).peak_memory_bytes;
  o.constraints.max_memory_per_device = dp_peak * 3 / 4;
  const OptimizeResult a = Optimizer(step(), target, o).run();
  o.threads = 2;
  const OptimizeResult b = Optimizer(step(), target, o).run();
  EXPECT_EQ(a.progress.evaluations, 64u);
  EXPECT_EQ(front_text(a), front_text(b));
  EXPECT_EQ(a.progress.refusals, b.progress.refusals);
  std::uint64_t counted = 0;
  for (const auto& [why, n] : a.progress.refusals) {
    counted += n;
    EXPECT_EQ(why.find_first_of("0123456789"), std::string::npos) << why;  // numbers as '#'
  }
  EXPECT_EQ(counted, a.progress.refused);
  ASSERT_FALSE(a.archive.front().empty());
  bool members = false;
  for (const ArchiveEntry& e : a.archive.front()) {
    EXPECT_LE(e.cost.peak_memory_bytes, o.constraints.max_memory_per_device);
    EXPECT_NO_THROW((void)rewrite::lower(step(), e.plan));
    members = members || !e.plan.recompute.empty() || e.plan.zero || e.plan.pipeline;
  }
  EXPECT_TRUE(members) << front_text(a);
  // The standard training plans are the yardstick, priced under the same cap.
  std::map<std::string, const StandardResult*> standard;
  for (const StandardResult& s : a.standard) standard[s.name] = &s;
  ASSERT_TRUE(standard.contains("zero3") && standard.contains("megatron-3d-full"));
  EXPECT_TRUE(standard["zero3"]->plan.has_value()) << standard["zero3"]->reason;
  EXPECT_TRUE(standard["megatron-3d-selective"]->plan.has_value())
      << standard["megatron-3d-selective"]->reason;
}

// The yardstick's prices, taken from the seeds' pricing or priced with them, are what a fresh
// Evaluator says of each standard plan whole (the oracle: cost::standard_plans priced one by one),
// with tied layers (the standard plans' first layer differs from the seeds' expansion) and without.
TEST(TrainingSearch, TheYardstickPricesEachStandardPlanWhole) {
  const cost::Target& target = h100x64();
  for (const bool tie : {true, false}) {
    OptimizeOptions o{.objectives = {Objective::kTime},
                      .seed = 1,
                      .threads = 2,
                      .max_evaluations = 16,
                      .tie_layers = tie};
    o.prefix_layers = 0;
    const OptimizeResult r = Optimizer(step(), target, o).run();
    EXPECT_TRUE(r.progress.unpriced_seeds.empty());
    const std::vector<cost::StandardPlan> plans = cost::standard_plans(step(), target);
    ASSERT_EQ(r.standard.size(), plans.size());
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const StandardResult& s = r.standard[i];
      ASSERT_EQ(s.name, plans[i].name);
      if (!plans[i].plan) continue;
      ASSERT_TRUE(s.cost.has_value()) << s.name << ": " << s.reason;
      cost::Evaluator fresh(step(), target);
      const cost::CostVector want = fresh.evaluate(*plans[i].plan);
      EXPECT_EQ(s.cost->makespan_s, want.makespan_s) << s.name << (tie ? " tied" : "");
      EXPECT_EQ(s.cost->peak_memory_bytes, want.peak_memory_bytes) << s.name;
    }
  }
}

// A time budget bounds the seeds' pricing too: the ones whose turn comes after it are named (on a
// training step the training plans' turn comes first), and a standard plan left unpriced says so
// instead of being priced after the budget.
TEST(TrainingSearch, ATimeBudgetNamesTheSeedsItLeftUnpriced) {
  OptimizeOptions o{.objectives = {Objective::kTime}, .seed = 1, .threads = 1};
  o.time_budget_s = 1e-9;  // over before the first seed's turn
  o.prefix_layers = 0;
  const OptimizeResult r = Optimizer(step(), h100x64(), o).run();
  EXPECT_EQ(r.progress.evaluations, 0u);
  ASSERT_EQ(r.progress.unpriced_seeds.size(), r.seeds.size());
  EXPECT_EQ(r.progress.unpriced_seeds[0], "standard:zero3");
  EXPECT_EQ(r.progress.unpriced_seeds[1], "standard:megatron-3d-selective");
  EXPECT_EQ(r.progress.unpriced_seeds[2], "standard:megatron-3d-full");
  for (const SeedPlan& seed : r.seeds) {
    EXPECT_TRUE(contains(r.progress.unpriced_seeds, seed.name)) << seed.name;
  }
  for (const StandardResult& s : r.standard) {
    if (!s.plan) continue;
    EXPECT_FALSE(s.cost.has_value()) << s.name;
    EXPECT_EQ(s.reason.rfind("not priced: the time budget", 0), 0u) << s.name << ": " << s.reason;
  }
  // A forward graph's seeds keep their order.
  const ir::Graph g = testing::example_graph("mlp.tap");
  const OptimizeResult f = Optimizer(g, testing::h100x8(), o).run();
  std::vector<std::string> names;
  for (const SeedPlan& seed : f.seeds) names.push_back(seed.name);
  EXPECT_EQ(f.progress.unpriced_seeds, names);
}

// On a graph that is not a training step the new kinds never draw: the search makes the moves it
// made before they existed (the same front as the cut kinds alone).
TEST(TrainingSearch, AForwardGraphSearchesAsBefore) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  OptimizeOptions o{.objectives = {Objective::kTime, Objective::kMemory},
                    .seed = 5,
                    .threads = 1,
                    .max_evaluations = 200};
  const OptimizeResult all = Optimizer(g, testing::h100x8(), o).run();
  o.mutations = (1u << kCutMutationCount) - 1;
  const OptimizeResult cuts = Optimizer(g, testing::h100x8(), o).run();
  EXPECT_EQ(front_text(all), front_text(cuts));
}

}  // namespace
}  // namespace tapestry::search
