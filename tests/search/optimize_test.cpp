// The optimizer: the exact front of small graphs reached, expert plans rediscovered, determinism
// across thread counts, checkpoints and resume, constraints, refusals.
#include "tapestry/search/optimize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "cost/cost_testing.h"
#include "search_testing.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/cost/standard_plans.h"
#include "tapestry/support/error.h"

namespace tapestry::search {
namespace {

using testing::h100x8;
using ::testing::HasSubstr;
using testing::test_graph;

// --- exactness --------------------------------------------------------------------------------

// Every plan of the space the exactness tests search: each dim of each operation cut 1 …
// min(extent, devices) ways (shards per operation at most 8 × devices, as the mutations keep), with
// and without "fuse": "auto", with and without decompose-linear on each linear.
std::vector<rewrite::Plan> enumerate(const PlanSpace& space) {
  std::vector<rewrite::Plan> plans = {rewrite::Plan{}};
  for (std::size_t op : space.representatives()) {
    const OperationInfo& info = space.operations()[op];
    for (const DimInfo& dim : info.dims) {
      std::vector<rewrite::Plan> next;
      for (const rewrite::Plan& p : plans) {
        for (std::int64_t c = 1; c <= std::min(dim.extent, space.device_count()); ++c) {
          rewrite::Plan q = p;
          if (c > 1) q.ops[info.name].split[dim.name] = c;
          std::int64_t shards = 1;
          for (const auto& [d, n] : q.ops[info.name].split) shards *= n;
          if (q.ops[info.name].split.empty()) q.ops.erase(info.name);
          if (shards <= 8 * space.device_count()) next.push_back(std::move(q));
        }
      }
      plans = std::move(next);
    }
    if (info.decomposable) {
      const std::size_t n = plans.size();
      for (std::size_t i = 0; i < n; ++i) {
        rewrite::Plan q = plans[i];
        q.ops[info.name].substitute = {"decompose-linear"};
        plans.push_back(std::move(q));
      }
    }
  }
  const std::size_t n = plans.size();
  for (std::size_t i = 0; i < n; ++i) {
    rewrite::Plan q = plans[i];
    q.fuse_auto = true;
    plans.push_back(std::move(q));
  }
  return plans;
}

std::vector<std::vector<double>> scores(const ParetoArchive& a) {
  std::vector<std::vector<double>> out;
  for (const ArchiveEntry& e : a.front()) out.push_back(e.score);
  return out;
}

struct ExactCase {
  const char* name;
  const char* tap;
  std::size_t devices;
  std::vector<Objective> objectives;
  bool seeds = true;  // false: from the unsharded plan by mutations alone
};

void expect_exact_front_reached(const ExactCase& c) {
  const ir::Graph g = rewrite::testing::build(c.tap);
  const cost::Target target = cost::testing::toy_target(1, c.devices, 1e-6);
  const PlanSpace space(g, target, false);
  ParetoArchive exact(c.objectives, {});
  cost::Evaluator ev(g, target);
  std::size_t priced = 0;
  for (const rewrite::Plan& p : enumerate(space)) {
    try {
      exact.offer(p, p, ev.evaluate(p), 0);
      ++priced;
    } catch (const Error&) {
    }
  }
  ASSERT_GT(exact.front().size(), 2u) << c.name << ": a front with trade-offs";
  std::vector<double> reference(c.objectives.size(), 0);
  for (const ArchiveEntry& e : exact.front()) {
    for (std::size_t k = 0; k < reference.size(); ++k) {
      reference[k] = std::max(reference[k], e.score[k] * 1.1);
    }
  }
  const double best = hypervolume(scores(exact), reference);

  // The search runs until its front reaches 99% of the exact hypervolume, or it has priced an
  // eighth of the space's plans (a budget of evaluations, not seconds: the same under a
  // sanitizer or a loaded machine — 2 s of ASan at load 9 once fell 0.1 s short).
  const std::uint64_t budget = priced / 8;
  double reached_s = -1;
  std::uint64_t reached_evals = 0;
  OptimizeOptions o{.objectives = c.objectives,
                    .seed = 1,
                    .max_evaluations = budget,
                    .use_seeds = c.seeds,
                    .mutations = kAllMutations & ~mutation_bit(Mutation::kMesh) &
                                 ~mutation_bit(Mutation::kPlace)};
  o.on_progress = [&](const Progress& p) {
    if (hypervolume(scores(*p.archive), reference) < 0.99 * best) return true;
    reached_s = p.seconds;
    reached_evals = p.evaluations;
    return false;
  };
  const OptimizeResult r = Optimizer(g, target, o).run();
  const double found = hypervolume(scores(r.archive), reference);
  EXPECT_GE(found, 0.99 * best) << c.name << ": " << r.progress.evaluations << " of " << priced
                                << " plans priced, stopped by " << r.stopped_by;
  EXPECT_GE(reached_s, 0) << c.name;
  EXPECT_LE(reached_evals, budget) << c.name;
  std::cerr << c.name << ": 99% of the exact hypervolume after " << r.progress.evaluations << " of "
            << priced << " plans, " << reached_s << " s\n";
  // Nothing the search found is outside the enumerated space: no point beats the exact front.
  for (const ArchiveEntry& e : r.archive.front()) {
    for (const ArchiveEntry& x : exact.front()) EXPECT_FALSE(dominates(e.score, x.score));
  }
}

TEST(Exactness, LinearReluOnFourDevicesFourObjectives) {
  expect_exact_front_reached(
      {"linear+relu, 4 devices",
       "X: f32[64, 32]\nW: f32[16, 32]\nb: f32[16]\n"
       "Y = relu(linear(X, W, b))\noutput Y\n",
       4,
       {Objective::kTime, Objective::kMemory, Objective::kDevices, Objective::kEnergy}});
}

TEST(Exactness, LinearReluByMutationsAlone) {
  expect_exact_front_reached(
      {"linear+relu, 4 devices, no seeds",
       "X: f32[64, 32]\nW: f32[16, 32]\nb: f32[16]\n"
       "Y = relu(linear(X, W, b))\noutput Y\n",
       4,
       {Objective::kTime, Objective::kMemory, Objective::kDevices, Objective::kEnergy},
       false});
}

TEST(Exactness, ThreeOperationMlpOnTwoDevices) {
  expect_exact_front_reached({"mlp, 2 devices",
                              "X: f32[64, 32]\nW1: f32[48, 32]\nb1: f32[48]\nW2: f32[16, 48]\n"
                              "b2: f32[16]\nH = relu(linear(X, W1, b1))\nY = linear(H, W2, b2)\n"
                              "output Y\n",
                              2,
                              {Objective::kTime, Objective::kMemory, Objective::kEnergy}});
}

// --- expert plans -----------------------------------------------------------------------------

constexpr const char* kMegatron =
    R"({"ops": {"H/linear": {"split": {"out": 8}}, "H": {"split": {"d1": 8}},
                "Y": {"split": {"in": 8}}}, "fuse": "auto"})";
constexpr const char* kDataParallel =
    R"({"ops": {"H/linear": {"split": {"batch": 8}}, "H": {"split": {"d0": 8}},
                "Y": {"split": {"batch": 8}}}, "fuse": "auto"})";

cost::CostVector price(const ir::Graph& g, const char* plan) {
  cost::Evaluator ev(g, h100x8());
  return ev.evaluate(rewrite::parse_plan(plan));
}

// Below the 304 MiB data parallelism needs with the replicated bf16 weights. Megatron fits: 256
// MiB per GPU, its float32 partial sums (rewrite/mixed_precision.h) reduce-scattered over the 8
// GPUs (192 MiB when the partials were bf16 and the cap 200 MiB).
constexpr std::int64_t kCap = 280 << 20;

TEST(ExpertPlans, MegatronMlpUnderAMemoryCap) {
  const ir::Graph g = test_graph("transformer_mlp_bf16.tap");
  const cost::CostVector megatron = price(g, kMegatron);
  const cost::CostVector dp = price(g, kDataParallel);
  ASSERT_GT(dp.peak_memory_bytes, kCap);  // the cap bites: data parallelism is out
  ASSERT_LE(megatron.peak_memory_bytes, kCap);
  Optimizer opt(g, h100x8(),
                {.objectives = {Objective::kTime, Objective::kMemory},
                 .constraints = {.max_memory_per_device = kCap},
                 .seed = 1,
                 .max_evaluations = 400});
  const OptimizeResult r = opt.run();
  const ArchiveEntry* fastest = r.archive.best(Objective::kTime);
  ASSERT_NE(fastest, nullptr);
  EXPECT_LE(fastest->cost.peak_memory_bytes, kCap);
  EXPECT_LE(fastest->cost.makespan_s, megatron.makespan_s) << fastest->plan.to_json().dump();
}

TEST(ExpertPlans, MlpFrontWithoutACapHoldsDataParallelAndMegatronBounds) {
  const ir::Graph g = test_graph("transformer_mlp_bf16.tap");
  const cost::CostVector megatron = price(g, kMegatron);
  const cost::CostVector dp = price(g, kDataParallel);
  Optimizer opt(
      g, h100x8(),
      {.objectives = {Objective::kTime, Objective::kMemory}, .seed = 1, .max_evaluations = 400});
  const OptimizeResult r = opt.run();
  EXPECT_LE(r.archive.best(Objective::kTime)->cost.makespan_s, dp.makespan_s);
  EXPECT_LE(r.archive.best(Objective::kMemory)->cost.peak_memory_bytes, megatron.peak_memory_bytes);
}

TEST(ExpertPlans, MutationsAloneFindAPlanAsFastAsMegatronUnderTheCap) {
  // No seeds: from the unsharded plan, by mutations only.
  const ir::Graph g = test_graph("transformer_mlp_bf16.tap");
  const cost::CostVector megatron = price(g, kMegatron);
  Optimizer opt(g, h100x8(),
                {.objectives = {Objective::kTime, Objective::kMemory},
                 .constraints = {.max_memory_per_device = kCap},
                 .seed = 2,
                 .max_evaluations = 400,
                 .use_seeds = false});
  const OptimizeResult r = opt.run();
  ASSERT_NE(r.archive.best(Objective::kTime), nullptr);
  EXPECT_LE(r.archive.best(Objective::kTime)->cost.makespan_s, megatron.makespan_s);
}

// --- the yardstick: standard plans -----------------------------------------------------------

// Every standard plan is priced whole, as `tapestry cost` prices the same plan; the
// search starts from them, so with untied layers its best is never worse than the best of them.
TEST(Yardstick, StandardPlansArePricedAsByHandAndTheFrontIsNeverWorse) {
  const ir::Graph g = test_graph("transformer_mlp_bf16.tap");
  for (std::int64_t cap : {std::int64_t{0}, kCap, std::int64_t{200} << 20}) {
    SCOPED_TRACE(cap);
    Optimizer opt(g, h100x8(),
                  {.objectives = {Objective::kTime, Objective::kMemory},
                   .constraints = {.max_memory_per_device = cap},
                   .seed = 1,
                   .max_evaluations = 200});
    const OptimizeResult r = opt.run();
    ASSERT_EQ(r.standard.size(), cost::standard_plan_names().size());
    for (std::size_t i = 0; i < r.standard.size(); ++i) {
      const StandardResult& s = r.standard[i];
      EXPECT_EQ(s.name, cost::standard_plan_names()[i]);
      if (!s.plan) {
        EXPECT_FALSE(s.reason.empty());
        continue;
      }
      ASSERT_TRUE(s.cost.has_value()) << s.name << ": " << s.reason;
      // The search's price is what `tapestry cost` gives for the same plan: lower, place, simulate
      // (not the evaluator's memoised symbolic path the search itself uses).
      const rewrite::LowerResult lowered = rewrite::lower(g, *s.plan);
      const cost::CostVector by_hand =
          cost::simulate(cost::place(lowered.graph, lowered.plan, h100x8()), h100x8());
      EXPECT_DOUBLE_EQ(s.cost->makespan_s, by_hand.makespan_s) << s.name;
      EXPECT_EQ(s.cost->peak_memory_bytes, by_hand.peak_memory_bytes) << s.name;
      // Feasible exactly when within the cap, with the cap named otherwise.
      const bool fits = cap == 0 || s.cost->peak_memory_bytes <= cap;
      EXPECT_EQ(s.feasible(), fits) << s.name << ": " << s.reason;
      if (!fits) EXPECT_THAT(s.reason, HasSubstr("cap"));
    }
    const StandardResult* best = best_standard(r.standard, Objective::kTime);
    for (const StandardResult& s : r.standard) {
      if (s.feasible()) {
        ASSERT_NE(best, nullptr);
        EXPECT_LE(best->cost->makespan_s, s.cost->makespan_s);
      }
    }
    if (best != nullptr) {
      ASSERT_NE(r.archive.best(Objective::kTime), nullptr);
      EXPECT_LE(r.archive.best(Objective::kTime)->cost.makespan_s, best->cost->makespan_s);
    }
    // The standard plans that apply are among the seeds (as genomes: every operation here).
    for (const StandardResult& s : r.standard) {
      if (!s.plan) continue;
      const bool seeded = std::any_of(r.seeds.begin(), r.seeds.end(), [&](const SeedPlan& seed) {
        rewrite::Plan plan = *s.plan;
        normalize(plan);
        return seed.genome == plan;
      });
      EXPECT_TRUE(seeded) << s.name;
    }
    const nlohmann::json json = front_json(r, "mlp", "h100x8");
    ASSERT_EQ(json["standard_plans"].size(), r.standard.size());
    EXPECT_EQ(json["standard_plans"][0]["name"], "data-parallel");
    EXPECT_EQ(json["standard_plans"][0]["feasible"], r.standard[0].feasible());
  }
}

TEST(Yardstick, NoStandardPlanFeasibleMeansNoYardstick) {
  std::vector<StandardResult> none = {{.name = "data-parallel", .reason = "does not apply"}};
  EXPECT_EQ(best_standard(none, Objective::kTime), nullptr);
  EXPECT_EQ(best_standard({}, Objective::kTime), nullptr);
}

// --- determinism, constraints, checkpoints ---------------------------------------------------

std::vector<std::string> front_text(const OptimizeResult& r) {
  std::vector<std::string> out;
  for (const ArchiveEntry& e : r.archive.front()) {
    out.push_back(e.plan.to_json().dump() + " " + cost::to_json(e.cost).dump());
  }
  return out;
}

OptimizeOptions small(std::uint64_t seed, std::uint64_t evals) {
  return {.objectives = {Objective::kTime, Objective::kMemory, Objective::kDevices},
          .seed = seed,
          .max_evaluations = evals};
}

TEST(Determinism, TheSameSeedGivesTheSameFrontOnOneOrTwoThreads) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  OptimizeOptions one = small(3, 300);
  one.threads = 1;
  OptimizeOptions two = small(3, 300);
  two.threads = 2;
  const OptimizeResult a = Optimizer(g, h100x8(), one).run();
  const OptimizeResult b = Optimizer(g, h100x8(), two).run();
  EXPECT_EQ(a.progress.evaluations, 300u);
  EXPECT_EQ(front_text(a), front_text(b));
  const OptimizeResult c = Optimizer(g, h100x8(), small(4, 300)).run();
  EXPECT_NE(front_text(a), front_text(c));  // the seed matters
}

TEST(Constraints, NoFrontMemberViolatesThem) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  OptimizeOptions o = small(5, 600);
  o.constraints = {.max_memory_per_device = 100 << 20, .max_devices = 4};
  const OptimizeResult r = Optimizer(g, h100x8(), o).run();
  ASSERT_FALSE(r.archive.front().empty());
  EXPECT_GT(r.progress.infeasible, 0u);  // the search met plans over them
  for (const ArchiveEntry& e : r.archive.front()) {
    EXPECT_LE(e.cost.peak_memory_bytes, 100 << 20);
    EXPECT_LE(e.cost.devices_used, 4);
  }
}

TEST(Constraints, AnImpossibleCapLeavesTheFrontEmpty) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  OptimizeOptions o = small(5, 300);
  o.constraints.max_memory_per_device = 1024;
  const OptimizeResult r = Optimizer(g, h100x8(), o).run();
  EXPECT_TRUE(r.archive.front().empty());
  EXPECT_EQ(r.progress.infeasible + r.progress.refused, r.progress.evaluations);
}

class Checkpoints : public testing::ScratchDirTest {};

TEST_F(Checkpoints, AResumedSearchReachesTheUninterruptedFront) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  const OptimizeResult whole = Optimizer(g, h100x8(), small(9, 1000)).run();
  OptimizeOptions first = small(9, 1000);
  first.checkpoint = dir_ / "search.json";
  first.on_progress = [](const Progress& p) { return p.generation < 7; };  // "killed" there
  const OptimizeResult part = Optimizer(g, h100x8(), first).run();
  ASSERT_TRUE(std::filesystem::exists(first.checkpoint));
  OptimizeOptions rest = small(9, 1000);
  rest.resume = first.checkpoint;
  const OptimizeResult resumed = Optimizer(g, h100x8(), rest).run();
  EXPECT_EQ(resumed.progress.evaluations, 1000u);
  EXPECT_EQ(front_text(resumed), front_text(whole));
  EXPECT_NE(front_text(part), front_text(whole));  // the resumed half did work
}

TEST_F(Checkpoints, ResumingWithOtherSettingsOrABadFileIsRefused) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  OptimizeOptions first = small(9, 100);
  first.checkpoint = dir_ / "search.json";
  Optimizer(g, h100x8(), first).run();
  const auto refused = [&](OptimizeOptions o, const ir::Graph& graph, const char* why) {
    o.resume = first.checkpoint;
    try {
      Optimizer(graph, h100x8(), o).run();
      ADD_FAILURE() << "resumed despite " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(small(10, 200), g, "--seed 9");
  OptimizeOptions objectives = small(9, 200);
  objectives.objectives = {Objective::kTime};
  refused(objectives, g, "other objectives");
  refused(small(9, 200), testing::example_graph("linear_relu.tap"), "another graph");
  for (const char* text : {"", "{}", "[1]", "{\"format\": \"tapestry-optimize-checkpoint\"}"}) {
    std::ofstream(dir_ / "bad.json") << text;
    OptimizeOptions o = small(9, 200);
    o.resume = dir_ / "bad.json";
    EXPECT_THROW(Optimizer(g, h100x8(), o).run(), Error) << text;
  }
  OptimizeOptions missing = small(9, 200);
  missing.resume = dir_ / "missing.json";
  EXPECT_THROW(Optimizer(g, h100x8(), missing).run(), Error);
}

TEST(Budget, ASearchWithoutABudgetIsRefused) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  EXPECT_THROW(Optimizer(g, h100x8(), {}).run(), Error);
}

TEST(TieLayers, DecisionsStayFlatAsDepthGrows) {
  std::string tap = "X: f32[256, 128]\n";
  std::string prev = "X";
  for (int l = 0; l < 12; ++l) {
    tap += fmt::format(
        "W{0}: f32[128, 128]\nb{0}: f32[128]\nL{0} = relu(linear({1}, W{0}, b{0}))\n", l, prev);
    prev = fmt::format("L{}", l);
  }
  tap += fmt::format("output {}\n", prev);
  const ir::Graph g = rewrite::testing::build(tap);
  OptimizeOptions o = small(1, 120);
  o.tie_layers = true;
  Optimizer opt(g, h100x8(), o);
  EXPECT_EQ(opt.space().representatives().size(), 2u);
  const OptimizeResult r = opt.run();
  // Every front member cuts all twelve layers alike.
  for (const ArchiveEntry& e : r.archive.front()) {
    for (int l = 1; l < 12; ++l) {
      const auto a = e.plan.ops.find("L0/linear");
      const auto b = e.plan.ops.find(fmt::format("L{}/linear", l));
      EXPECT_EQ(a == e.plan.ops.end(), b == e.plan.ops.end());
      if (a != e.plan.ops.end() && b != e.plan.ops.end()) {
        EXPECT_EQ(a->second, b->second);
      }
    }
  }
}

TEST(TieLayers, APrefixSearchSeedsADeepOne) {
  std::string tap = "X: f32[256, 128]\n";
  std::string prev = "X";
  for (int l = 0; l < 8; ++l) {
    tap += fmt::format(
        "W{0}: f32[128, 128]\nb{0}: f32[128]\nL{0} = relu(linear({1}, W{0}, b{0}))\n", l, prev);
    prev = fmt::format("L{}", l);
  }
  tap += fmt::format("output {}\n", prev);
  const ir::Graph g = rewrite::testing::build(tap);
  OptimizeOptions o = small(2, 100);
  o.tie_layers = true;
  const OptimizeResult with = Optimizer(g, h100x8(), o).run();
  EXPECT_EQ(with.progress.prefix_evaluations, 25u);  // 100 × prefix_share
  EXPECT_EQ(with.progress.evaluations, 100u);
  // Deterministic like the rest.
  EXPECT_EQ(front_text(with), front_text(Optimizer(g, h100x8(), o).run()));
  o.prefix_layers = 0;
  EXPECT_EQ(Optimizer(g, h100x8(), o).run().progress.prefix_evaluations, 0u);
  // Untied, no prefix either.
  o.prefix_layers = 2;
  o.tie_layers = false;
  EXPECT_EQ(Optimizer(g, h100x8(), o).run().progress.prefix_evaluations, 0u);
}

// Patience (OptimizeOptions::patience): a search stops, "converged", once `patience` plans in a
// row improved no objective's best — the first generation's end at or past the last
// improvement's generation + patience: on a one-objective front, the best's found_at F gives
// F + P <= evaluations < F + P + 2 batches.
TEST(Patience, ASearchStopsWhenItsBestStopsImproving) {
  const ir::Graph g = testing::example_graph("mlp.tap");
  OptimizeOptions o = small(1, 20000);
  o.objectives = {Objective::kTime};
  o.threads = 1;
  o.patience = 200;
  const OptimizeResult r = Optimizer(g, h100x8(), o).run();
  EXPECT_EQ(r.stopped_by, "converged");
  ASSERT_EQ(r.archive.front().size(), 1u);
  const std::uint64_t found = r.archive.front()[0].found_at;
  EXPECT_GE(r.progress.evaluations, found + 200);
  EXPECT_LT(r.progress.evaluations, found + 200 + 2 * o.batch);
  // Deterministic, like the rest; without patience it searches on.
  const OptimizeResult again = Optimizer(g, h100x8(), o).run();
  EXPECT_EQ(again.progress.evaluations, r.progress.evaluations);
  EXPECT_EQ(front_text(again), front_text(r));
  o.patience = 0;
  o.max_evaluations = r.progress.evaluations + 300;
  EXPECT_EQ(Optimizer(g, h100x8(), o).run().stopped_by, "max-evals");
}

// The prefix search of --tie-layers ends when it has converged (prefix_patience), not at its
// share, deterministically under max_evaluations; with no patience it runs to its share.
TEST(TieLayers, AConvergedPrefixEndsItsPhaseEarly) {
  const ir::Graph g = testing::relu_layers(4);
  OptimizeOptions o = small(2, 300);
  o.prefix_share = 2;  // at most 600 plans of the prefix (twice the whole graph's: a quick test)
  o.tie_layers = true;
  o.threads = 1;
  o.prefix_patience = 100;
  const OptimizeResult a = Optimizer(g, h100x8(), o).run();
  EXPECT_EQ(a.progress.prefix_stopped_by, "converged");
  EXPECT_GE(a.progress.prefix_evaluations, 100u);
  EXPECT_LT(a.progress.prefix_evaluations, 600u);
  EXPECT_FALSE(a.prefix_front.empty());
  const OptimizeResult b = Optimizer(g, h100x8(), o).run();
  EXPECT_EQ(b.progress.prefix_evaluations, a.progress.prefix_evaluations);
  EXPECT_TRUE(b.prefix_front == a.prefix_front);
  EXPECT_EQ(front_text(b), front_text(a));
  // A longer patience searches the prefix longer; none, to its share.
  o.prefix_patience = 400;
  EXPECT_GT(Optimizer(g, h100x8(), o).run().progress.prefix_evaluations,
            a.progress.prefix_evaluations);
  o.prefix_patience = 0;
  const OptimizeResult whole = Optimizer(g, h100x8(), o).run();
  EXPECT_EQ(whole.progress.prefix_evaluations, 600u);
  EXPECT_EQ(whole.progress.prefix_stopped_by, "max-evals");
}

}  // namespace
}  // namespace tapestry::search
