// lower_bench: lowering into many applications, and validating them.
//
// BM_Lower100kApplications: a chain of 100 elementwise operations over a [1000, 1000] tensor,
// every operation cut into a 100 × 10 grid (issue target: <= 0.5 s on one core).
// BM_LowerOneReluIntoAMillion: `Y = relu(X)`, X f32[1000, 1000], cut 1000 × 1000 — one operation,
// 10^6 applications (target: >= 1M applications/s, <= 300 bytes per application).
//
// Reported: time per lowering (which includes the validation `lower` runs), applications per
// second, and `bytes_per_app`: the heap the lowered graph holds (malloc statistics) over its
// applications.
#include <benchmark/benchmark.h>
#include <fmt/core.h>
#include <malloc.h>

#include <memory>

#include "tapestry/metakernel/signature_registry.h"
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
  metakernel::BuildResult built = metakernel::build_tap(file, metakernel::builtin_signatures());
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

// Heap bytes in use (malloc's arena statistics; glibc).
std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

void BM_LowerOneReluIntoAMillion(benchmark::State& state) {
  auto file = std::make_shared<metakernel::SourceFile>(
      "relu.tap", "X: f32[1000, 1000]\nY = relu(X)\noutput Y\n");
  metakernel::BuildResult built = metakernel::build_tap(file, metakernel::builtin_signatures());
  if (!built.ok()) {
    state.SkipWithError("cannot build the relu graph");
    return;
  }
  rewrite::Plan plan;
  plan.ops["Y"].split = {{"d0", 1000}, {"d1", 1000}};
  std::size_t applications = 0;
  double bytes_per_app = 0;
  for (auto _ : state) {
    const std::size_t before = heap_in_use();
    rewrite::LowerResult r = rewrite::lower(*built.graph, plan, {.validate = state.range(0) != 0});
    applications = r.graph.applications().size();
    bytes_per_app = static_cast<double>(heap_in_use() - before) / static_cast<double>(applications);
    benchmark::DoNotOptimize(applications);
  }
  state.counters["applications"] = static_cast<double>(applications);
  state.counters["bytes_per_app"] = bytes_per_app;
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(applications));
}
// Argument: validate the lowered graph (1, as `tapestry shard` does) or not (0).
BENCHMARK(BM_LowerOneReluIntoAMillion)
    ->ArgName("validate")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
