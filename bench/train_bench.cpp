// train_bench: what the training loop (workflow/train.h, `tapestry train`) adds per step beyond
// the executor's run of the step.
//
// examples/train/linreg.tap — a linear regression with SGD updates, 8 applications of
// microseconds — is lowered once and its block executor built once (1 thread); then
//   loop:  run_training, N steps (batch gathered from 64 data rows, step input, loss read,
//          state carried; the step function converts to and from the lowered graph's tensors)
//   runs:  N × executor.run on one fixed set of inputs, in the same process
// and per step:  overhead = (loop − runs) / N,  ratio = loop / runs. Each is the median of
// --reps repetitions, interleaved so that the machine's load hits both alike.
//
//   build/release/bench/train_bench [--steps 2000] [--reps 5]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/workflow/run.h"
#include "tapestry/workflow/train.h"

namespace {

using namespace tapestry;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t steps = 2000;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::stoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::stoi(argv[i + 1]);
  }
  metakernel::BuildResult built = metakernel::build_tap_file(
      std::string(TAPESTRY_EXAMPLES) + "/train/linreg.tap", metakernel::builtin_signatures());
  if (!built.ok()) {
    fmt::print(stderr, "cannot build examples/train/linreg.tap\n");
    return 1;
  }
  ir::Graph graph = std::move(*built.graph);
  const workflow::TrainRoles roles = workflow::train_roles(graph, {});
  // 64 data rows, generated; the initial state generated too.
  const runtime::BufferMap generated = runtime::generate_inputs(graph, {.seed = 1});
  std::map<std::string, runtime::Buffer> arrays;
  for (ir::TensorId t : roles.data) {
    const runtime::Buffer& batch = generated.at(t);
    zspace::Point shape = batch.range().shape();
    std::vector<std::int64_t> dims(shape.begin(), shape.end());
    dims[0] *= 8;
    runtime::Buffer rows(
        batch.dtype(), zspace::Range::of_shape(zspace::Point(std::span<const std::int64_t>(dims))));
    for (int k = 0; k < 8; ++k)
      std::memcpy(rows.bytes() + k * batch.size_bytes(), batch.bytes(), batch.size_bytes());
    arrays.emplace(runtime::tensor_name(graph, t), std::move(rows));
  }
  const workflow::TrainData data = workflow::check_data(graph, roles, std::move(arrays), "bench");
  runtime::BufferMap state;
  for (const ir::StateUpdate& u : roles.updates) state.emplace(u.state, generated.at(u.state));

  const rewrite::LowerResult lowered = workflow::lower_for_run(graph, {}, {});
  const runtime::BlockExecutor executor(lowered.graph, {.threads = 1});
  const workflow::StepFunction step = [&](runtime::BufferMap inputs) {
    return workflow::graph_results(
        graph, lowered, executor.run(workflow::lowered_inputs(lowered, std::move(inputs))));
  };
  const runtime::BufferMap fixed = workflow::lowered_inputs(lowered, generated);

  std::vector<double> loop, runs;
  for (int r = 0; r < reps; ++r) {
    auto t = std::chrono::steady_clock::now();
    const workflow::TrainResult result =
        workflow::run_training(graph, roles, data, state, step, {.steps = steps});
    loop.push_back(seconds_since(t));
    t = std::chrono::steady_clock::now();
    for (std::int64_t s = 0; s < steps; ++s) (void)executor.run(fixed);
    runs.push_back(seconds_since(t));
  }
  const double l = median(loop), n = median(runs);
  fmt::print("{} steps of examples/train/linreg.tap ({} applications), 1 thread, median of {}\n",
             steps, lowered.graph.applications().size(), reps);
  fmt::print("  train loop       {:8.3f} s  {:8.2f} us/step\n", l, 1e6 * l / steps);
  fmt::print("  N x executor.run {:8.3f} s  {:8.2f} us/run\n", n, 1e6 * n / steps);
  fmt::print("  overhead         {:8.2f} us/step  (loop/runs = {:.2f})\n", 1e6 * (l - n) / steps,
             l / n);
  return 0;
}
