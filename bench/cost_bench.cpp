// bench/cost_bench: how many plans per second the cost model prices — the search's inner loop.
//
// On examples/transformer_block.tap and the h100x8 target, for five plans (unsharded, the heads
// example, rows cut 4 ways, a Megatron-style 8-way cut, auto fusion):
//   BM_Evaluate/<plan>      cost::Evaluator with the plan's rewrites memoised (every shard, box,
//                           transfer and event still computed); target >= 20,000/s on one core
//   BM_EvaluateCold/<plan>  the same with the memo cleared first: the rewrites run every time
//   BM_Reference/<plan>     lower (no validation) → place → simulate, which the Evaluator equals
// BM_Lower, BM_Place and BM_Simulate split one reference evaluation of the Megatron-style plan
// into its phases. docs/cost.md ("Speed") has the figures.
#include <benchmark/benchmark.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "tapestry/cost/evaluator.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/cost/target.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/lower.h"

namespace {

using namespace tapestry;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const ir::Graph& transformer() {
  static const ir::Graph graph = [] {
    const std::string path = std::string(TAPESTRY_EXAMPLES) + "/transformer_block.tap";
    auto file = std::make_shared<metakernel::SourceFile>(path, read_file(path));
    metakernel::BuildResult built = metakernel::build_tap(file, metakernel::builtin_signatures());
    if (!built.ok()) throw Error("cannot build " + path);
    return std::move(*built.graph);
  }();
  return graph;
}

const cost::Target& h100x8() {
  static const cost::Target target = *cost::preset_target("h100x8");
  return target;
}

constexpr const char* kRows4 = R"({"ops": {
  "Q/linear": {"split": {"batch": 4}}, "K/linear": {"split": {"batch": 4}},
  "V/linear": {"split": {"batch": 4}}, "Q/reshape": {"split": {"d0": 4}},
  "K/reshape": {"split": {"d0": 4}}, "V/reshape": {"split": {"d0": 4}},
  "Q": {"split": {"d0": 4}}, "K": {"split": {"d0": 4}}, "V": {"split": {"d0": 4}},
  "Scores/transpose": {"split": {"batch0": 4}}, "Scores/matmul": {"split": {"batch0": 4}},
  "Scores": {"split": {"d0": 4}}, "P": {"split": {"batch0": 4}}, "Ctx": {"split": {"batch0": 4}},
  "Attn/permute": {"split": {"d0": 4}}, "Attn/reshape": {"split": {"d0": 4}},
  "Attn": {"split": {"batch": 4}}, "R1": {"split": {"d0": 4}}, "M/linear": {"split": {"batch": 4}},
  "M/gelu": {"split": {"d0": 4}}, "M": {"split": {"batch": 4}}, "Y": {"split": {"d0": 4}}}})";

constexpr const char* kMegatron8 = R"({"ops": {
  "Q/linear": {"split": {"out": 8}}, "K/linear": {"split": {"out": 8}},
  "V/linear": {"split": {"out": 8}}, "Scores/matmul": {"split": {"batch1": 8}},
  "Scores": {"split": {"d1": 8}}, "P": {"split": {"batch1": 8}}, "Ctx": {"split": {"batch1": 8}},
  "Attn": {"split": {"in": 8}}, "M/linear": {"split": {"out": 8}}, "M/gelu": {"split": {"d1": 8}},
  "M": {"split": {"in": 8}}}, "fuse": "auto"})";

rewrite::Plan plan_number(std::int64_t i) {
  switch (i) {
    case 0:
      return rewrite::parse_plan("{}");
    case 1:
      return rewrite::read_plan_file(std::string(TAPESTRY_EXAMPLES) +
                                     "/plans/transformer_block-heads.json");
    case 2:
      return rewrite::parse_plan(kRows4);
    case 3:
      return rewrite::parse_plan(kMegatron8);
    default:
      return rewrite::parse_plan(R"({"fuse": "auto"})");
  }
}

const char* const kPlanNames[] = {"unsharded", "heads", "rows4", "megatron8", "fuse-auto"};

rewrite::LowerOptions no_validation() {
  rewrite::LowerOptions options;
  options.validate = false;
  return options;
}

void BM_Evaluate(benchmark::State& state) {
  const rewrite::Plan plan = plan_number(state.range(0));
  state.SetLabel(kPlanNames[state.range(0)]);
  cost::Evaluator ev(transformer(), h100x8());
  for (auto _ : state) benchmark::DoNotOptimize(ev.evaluate(plan).makespan_s);
  state.counters["applications"] = static_cast<double>(ev.place(plan).applications.size());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Evaluate)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

// The Evaluator with its memo cleared before every plan: the rewrites run every time.
void BM_EvaluateCold(benchmark::State& state) {
  const rewrite::Plan plan = plan_number(state.range(0));
  state.SetLabel(kPlanNames[state.range(0)]);
  cost::Evaluator ev(transformer(), h100x8());
  for (auto _ : state) {
    ev.clear_memo();
    benchmark::DoNotOptimize(ev.evaluate(plan).makespan_s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EvaluateCold)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

// The reference path the Evaluator equals: lower → place → simulate.
void BM_Reference(benchmark::State& state) {
  const rewrite::Plan plan = plan_number(state.range(0));
  state.SetLabel(kPlanNames[state.range(0)]);
  const rewrite::LowerOptions options = no_validation();
  for (auto _ : state) {
    rewrite::LowerResult r = rewrite::lower(transformer(), plan, options);
    const cost::Placement p = cost::place(r.graph, r.plan, h100x8());
    benchmark::DoNotOptimize(cost::simulate(p, h100x8()).makespan_s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Reference)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

void BM_Lower(benchmark::State& state) {
  const rewrite::Plan plan = plan_number(3);
  const rewrite::LowerOptions options = no_validation();
  for (auto _ : state) benchmark::DoNotOptimize(rewrite::lower(transformer(), plan, options));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Lower)->Unit(benchmark::kMicrosecond);

void BM_Place(benchmark::State& state) {
  const rewrite::LowerResult r = rewrite::lower(transformer(), plan_number(3), no_validation());
  for (auto _ : state) benchmark::DoNotOptimize(cost::place(r.graph, r.plan, h100x8()));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Place)->Unit(benchmark::kMicrosecond);

void BM_Simulate(benchmark::State& state) {
  const rewrite::LowerResult r = rewrite::lower(transformer(), plan_number(3), no_validation());
  const cost::Placement p = cost::place(r.graph, r.plan, h100x8());
  for (auto _ : state) benchmark::DoNotOptimize(cost::simulate(p, h100x8()));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Simulate)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
