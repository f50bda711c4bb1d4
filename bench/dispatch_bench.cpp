// dispatch_bench: what the block executor costs per application, beyond the kernels.
//
// A relu over f32[2528, 2528] cut into 316 × 316 blocks of 8 × 8 (99,856 applications, 64
// elements each) runs on one thread. Each application is timed around its kernel call, so
//
//   overhead per application = (wall − Σ kernel time) / applications
//
// is what scheduling, buffer management and call setup add (issue target: <= 2 µs). The clock
// reads around each kernel (~2 × 20 ns) count half in the kernel time, half in the overhead.
// Also printed: compile time (schedule + program) per application, and the 2-thread run.
//
//   build/release/bench/dispatch_bench [--reps 5]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"

namespace {

using namespace tapestry;

constexpr int kBlocks = 316;
constexpr int kBlock = 8;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Sample {
  double wall = 0, busy = 0;
};

void report(const char* what, const runtime::BlockExecutor& exec, const runtime::BufferMap& inputs,
            int reps) {
  std::vector<double> overhead, wall;
  for (int r = 0; r < reps; ++r) {
    const auto [buffers, m] = exec.run_measured(inputs);
    const double n = static_cast<double>(m.applications.size());
    wall.push_back(m.wall_s);
    // With several threads the busy time is spread over them: overhead per application is
    // measured per thread-second.
    overhead.push_back((m.wall_s * m.threads - m.busy_s) / n * 1e6);
  }
  fmt::print("{:<10} wall {:.1f} ms (median of {}), overhead {:.2f} µs per application{}\n", what,
             median(wall) * 1e3, reps, median(overhead),
             exec.threads() == 1 ? fmt::format("  [target <= 2 µs: {}]",
                                               median(overhead) <= 2.0 ? "met" : "NOT met")
                                 : std::string());
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  }
  const int n = kBlocks * kBlock;
  auto file = std::make_shared<metakernel::SourceFile>(
      "tiny.tap", fmt::format("X: f32[{}, {}]\nY = relu(X)\noutput Y\n", n, n));
  metakernel::BuildResult built = metakernel::build_tap(file, metakernel::builtin_signatures());
  if (!built.ok()) {
    fmt::print(stderr, "dispatch_bench: cannot build the graph\n");
    return 1;
  }
  rewrite::Plan plan;
  plan.ops["Y"].split = {{"d0", kBlocks}, {"d1", kBlocks}};
  const rewrite::LowerResult lowered = rewrite::lower(*built.graph, plan);
  const runtime::BufferMap inputs = runtime::generate_inputs(lowered.graph, {.seed = 1});

  // The fast kernels' first lookup starts oneDNN (CPU detection, its OpenMP runtime, a first
  // generated kernel: tens of ms): paid here, outside the compile figure, which is the
  // executor's own work (schedule + program).
  (void)runtime::fast_kernels();
  const auto t0 = std::chrono::steady_clock::now();
  const runtime::BlockExecutor one(lowered.graph, {.threads = 1});
  const double compile_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("{} applications of {}×{} f32 relu; compile {:.0f} ms ({:.2f} µs per application)\n",
             one.application_count(), kBlock, kBlock, compile_s * 1e3,
             compile_s / static_cast<double>(one.application_count()) * 1e6);
  report("1 thread", one, inputs, reps);
  const runtime::BlockExecutor two(lowered.graph, {.threads = 2});
  report("2 threads", two, inputs, reps);
  return 0;
}
