// lower_bench: lower a 100-operation graph into 100,000 applications and validate the result
// in the application dialect (issue target: <= 0.5 s on one core).
//
// The graph is a chain of 100 elementwise operations over a [1000, 1000] tensor; the plan cuts
// every operation into a 100 × 10 grid. Reported: time per lowering (which includes the
// validation `lower` runs) and applications per second.
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include <memory>

#include "tapestry/metakernel/registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/lower.h"

namespace {

using namespace tapestry;

constexpr int kOps = 100;

std::string chain_program() {
  std::string tap = "X: f32[1000, 1000]\n";
  const char* kernels[] = {"relu", "neg", "tanh", "exp"};
  std::string previous = "X";
  for (int i = 0; i < kOps; ++i) {
    const std::string name = fmt::format("T{}", i);
    tap += fmt::format("{} = {}({})\n", name, kernels[i % 4], previous);
    previous = name;
  }
  tap += fmt::format("output {}\n", previous);
  return tap;
}

rewrite::Plan grid_plan() {
  rewrite::Plan plan;
  for (int i = 0; i < kOps; ++i) plan.ops[fmt::format("T{}", i)].split = {{"d0", 100}, {"d1", 10}};
  return plan;
}

void BM_Lower100kApplications(benchmark::State& state) {
  auto file = std::make_shared<metakernel::SourceFile>("chain.tap", chain_program());
  metakernel::BuildResult built = metakernel::build_tap(file, metakernel::builtin_kernels());
  if (!built.ok()) {
    state.SkipWithError("cannot build the chain graph");
    return;
  }
  const rewrite::Plan plan = grid_plan();
  std::size_t applications = 0;
  for (auto _ : state) {
    rewrite::LowerResult r = rewrite::lower(*built.graph, plan);
    applications = r.graph.applications().size();
    benchmark::DoNotOptimize(applications);
  }
  state.counters["applications"] = static_cast<double>(applications);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(applications));
}
BENCHMARK(BM_Lower100kApplications)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
