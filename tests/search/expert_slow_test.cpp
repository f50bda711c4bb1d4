// Expert plans rediscovered on the attention block (slow: its plans price at ~500/s, the rewrites
// of 14 operations running for most of them): heads across devices, the output projection's
// reduction split.
#include <gtest/gtest.h>

#include "search_testing.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/search/optimize.h"

namespace tapestry::search {
namespace {

using testing::h100x8;
using testing::test_graph;

constexpr const char* kDataParallel = R"({"ops": {
  "Q/linear": {"split": {"batch": 8}}, "K/linear": {"split": {"batch": 8}},
  "V/linear": {"split": {"batch": 8}}, "Attn": {"split": {"batch": 8}}}, "fuse": "auto"})";

cost::CostVector price(const ir::Graph& g, const rewrite::Plan& plan) {
  cost::Evaluator ev(g, h100x8());
  return ev.evaluate(plan);
}

rewrite::Plan heads_plan() {
  return rewrite::read_plan_file(std::string(TAPESTRY_TEST_DATA) + "/search/attention_heads8.json");
}

// The four projection weights, replicated: 4 · 4096 · 4096 bf16 = 128 MiB.
constexpr std::int64_t kCap = 120 << 20;

TEST(ExpertPlansSlow, AttentionHeadsUnderAMemoryCap) {
  const ir::Graph g = test_graph("attention_bf16.tap");
  const cost::CostVector heads = price(g, heads_plan());
  Optimizer opt(g, h100x8(),
                {.objectives = {Objective::kTime, Objective::kMemory},
                 .constraints = {.max_memory_per_device = kCap},
                 .seed = 1,
                 .max_evaluations = 2000});
  const OptimizeResult r = opt.run();
  const ArchiveEntry* fastest = r.archive.best(Objective::kTime);
  ASSERT_NE(fastest, nullptr);
  EXPECT_LE(fastest->cost.peak_memory_bytes, kCap);
  EXPECT_LE(fastest->cost.makespan_s, heads.makespan_s) << fastest->plan.to_json().dump();
}

TEST(ExpertPlansSlow, AttentionFrontHoldsDataParallelAndHeadsBounds) {
  const ir::Graph g = test_graph("attention_bf16.tap");
  const cost::CostVector heads = price(g, heads_plan());
  const cost::CostVector dp = price(g, rewrite::parse_plan(kDataParallel));
  Optimizer opt(
      g, h100x8(),
      {.objectives = {Objective::kTime, Objective::kMemory}, .seed = 1, .max_evaluations = 2000});
  const OptimizeResult r = opt.run();
  EXPECT_LE(r.archive.best(Objective::kTime)->cost.makespan_s, dp.makespan_s);
  EXPECT_LE(r.archive.best(Objective::kMemory)->cost.peak_memory_bytes, heads.peak_memory_bytes);
}

}  // namespace
}  // namespace tapestry::search
