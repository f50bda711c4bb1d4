// workflow/price.h and workflow/mpi.h: pricing equals lower → place → simulate, and an MPI
// run's preparation places the plan on one device per rank, with the messages of its
// transfers between devices.
#include <gtest/gtest.h>

#include <set>

#include "tapestry/cost/evaluator.h"
#include "tapestry/support/error.h"
#include "tapestry/workflow/mpi.h"
#include "tapestry/workflow/price.h"
#include "tapestry/workflow/run.h"
#include "workflow_testing.h"

namespace tapestry::workflow {
namespace {

using workflow_testing::example;
using workflow_testing::example_plan;

TEST(Price, EqualsTheEvaluatorsPrice) {
  const ir::Graph graph = example("mlp.tap");
  const cost::Target target = cost::resolve_target("h100x8");
  cost::Evaluator evaluator(graph, target);
  for (const char* name : {"mlp-megatron.json", "mlp-data-parallel.json", "mlp-best.json"}) {
    SCOPED_TRACE(name);
    const rewrite::Plan plan = example_plan(name);
    const Priced p = price(graph, plan, target, {});
    const cost::CostVector expected = evaluator.evaluate(plan);
    EXPECT_EQ(p.cost.makespan_s, expected.makespan_s);
    EXPECT_EQ(p.cost.peak_memory_bytes, expected.peak_memory_bytes);
    EXPECT_EQ(p.cost.bytes_moved, expected.bytes_moved);
    EXPECT_EQ(p.placement.applications.size(), p.lowered.graph.applications().size());
    EXPECT_TRUE(p.gains.empty());
  }
  const Priced with = price(graph, example_plan("mlp-megatron.json"), target, {.baselines = true});
  EXPECT_FALSE(with.gains.empty());
}

TEST(Price, APlacementErrorNamesThePlan) {
  const ir::Graph graph = example("linear_relu.tap");
  rewrite::Plan plan;
  plan.ops["Y"].split = {{"batch", 2}};
  plan.ops["Y"].place = {"gpu:0", "gpu:99"};
  try {
    (void)price(graph, plan, cost::resolve_target("h100x8"), {.plan_source = "plan.json"});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plan.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gpu:99"), std::string::npos) << e.what();
  }
}

TEST(PrepareMpi, OneDevicePerRankAndAMessagePerTransferBetweenRanks) {
  const ir::Graph graph = example("mlp.tap");
  const rewrite::LowerResult lowered = lower_for_run(graph, example_plan("mlp-megatron.json"), {});
  const MpiPlan p = prepare_mpi(lowered, "", 2, "--split");
  ASSERT_EQ(p.target.devices.size(), 2U);
  EXPECT_EQ(p.target.devices[1].name, "rank:1");
  EXPECT_EQ(p.schedule.rank_names, (std::vector<std::string>{"rank:0", "rank:1"}));
  EXPECT_EQ(p.schedule.rank_of.size(), lowered.graph.applications().size());
  std::set<std::uint32_t> ranks;
  for (const auto& [app, rank] : p.schedule.rank_of) ranks.insert(rank);
  EXPECT_EQ(ranks, (std::set<std::uint32_t>{0, 1}));  // the plan's shards use both ranks
  ASSERT_FALSE(p.schedule.messages.empty());          // Y's partial sums meet on one rank
  for (const runtime::RankMessage& m : p.schedule.messages) {
    EXPECT_NE(m.from, m.to);
    EXPECT_EQ(p.schedule.rank_of.at(m.producer), m.from);
    for (ir::ApplicationId c : m.consumers) EXPECT_EQ(p.schedule.rank_of.at(c), m.to);
  }
}

TEST(PrepareMpi, ATargetOfAnotherSizeIsRefused) {
  const ir::Graph graph = example("mlp.tap");
  const rewrite::LowerResult lowered = lower_for_run(graph, {}, {});
  try {
    (void)prepare_mpi(lowered, "h100x8", 2, "--split");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--target h100x8 has 8 devices, so the job needs 8 ranks; it has 2 (mpirun -np 8)");
  }
}

}  // namespace
}  // namespace tapestry::workflow
