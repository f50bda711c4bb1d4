// The CUDA executor on a real GPU (skipped without one): every example under its bundled plans
// runs and verifies against the float64 oracle; a CUDA graph replay gives the bits of the first
// run; a program of host steps only (no device kernels) gives the CPU's bits exactly, which
// checks the box copies between the arena and the pinned mirrors; the arena poisoned with NaN
// still verifies (every cell is written). Without a GPU: the errors a user sees.
#include "tapestry/gpu/cuda.h"

#include <gtest/gtest.h>

#include <cstring>

#include "device_kernels.h"
#include "device_program.h"
#include "example_plans.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/runtime/verify.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"
#include "tapestry/workflow/run.h"
#include "workflow_testing.h"

namespace tapestry::gpu {
namespace {

using runtime::Buffer;
using runtime::BufferMap;

using examples::Case;
using examples::kCases;
using examples::lower;
using examples::Lowered;

runtime::VerifyReport verify(const Lowered& l, const BufferMap& inputs, BufferMap run) {
  const BufferMap results = workflow::graph_results(l.graph, l.lowered, std::move(run));
  return workflow::verify_run(l.graph, inputs, results, {.mode = runtime::VerifyMode::kBound},
                              std::nullopt);
}

bool same_bits(const ir::Graph& graph, const BufferMap& a, const BufferMap& b) {
  for (ir::TensorId t : runtime::graph_outputs(graph)) {
    const Buffer& x = a.at(t);
    const Buffer& y = b.at(t);
    if (x.size_bytes() != y.size_bytes() ||
        std::memcmp(x.bytes(), y.bytes(), x.size_bytes()) != 0) {
      return false;
    }
  }
  return true;
}

TEST(CudaExecutor, EveryExamplePlanVerifiesOnTheGpu) {
  SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.graph) + " " + c.plan);
    const Lowered l = lower(c);
    const BufferMap inputs = runtime::generate_inputs(l.graph, {.seed = 11});
    const CudaExecutor gpu(l.lowered.graph, {.poison = true});
    // Run 1 issues the steps, run 2 records and launches the graph, run 3 replays it.
    const CudaExecutor::Measured first =
        gpu.run_measured(workflow::lowered_inputs(l.lowered, inputs));
    EXPECT_FALSE(first.stats.replayed);
    const CudaExecutor::Measured captured =
        gpu.run_measured(workflow::lowered_inputs(l.lowered, inputs));
    EXPECT_FALSE(captured.stats.replayed);
    const CudaExecutor::Measured again =
        gpu.run_measured(workflow::lowered_inputs(l.lowered, inputs));
    EXPECT_TRUE(again.stats.replayed);
    EXPECT_TRUE(same_bits(l.lowered.graph, first.buffers, captured.buffers));
    EXPECT_TRUE(same_bits(l.lowered.graph, first.buffers, again.buffers));
    const runtime::VerifyReport report = verify(l, inputs, first.buffers);
    EXPECT_TRUE(report.pass()) << report.text();
    std::printf("%-24s %-32s %3zu GPU, %3zu host steps, %.3f ms\n", c.graph, c.plan,
                first.stats.device_steps, first.stats.host_steps, again.stats.compute_s * 1e3);
  }
}

TEST(CudaExecutor, ABf16SplitWithFloat32PartialsRunsOnTheGpuAndVerifies) {
  SKIP_WITHOUT_GPU();
  // The ffn split: float32 partial sums, a bf16 bias added to them (mixed dtypes).
  Lowered l{workflow_testing::build(
                read_file(std::string(TAPESTRY_TEST_DATA) + "/gpu/mlp_bf16_small.tap"),
                "mlp_bf16_small.tap"),
            {}};
  l.lowered = workflow::lower_for_run(
      l.graph,
      rewrite::parse_plan(R"({"ops": {"H/linear": {"split": {"out": 2}}, "H": {"split": {"d1": 2}},
                                      "Y": {"split": {"in": 2}}}})",
                          "ffn2.json"),
      {});
  const BufferMap inputs = runtime::generate_inputs(l.graph, {.seed = 5});
  const CudaExecutor gpu(l.lowered.graph, {.poison = true});
  EXPECT_EQ(gpu.program().host_steps, 0U);
  const CudaExecutor::Measured m = gpu.run_measured(workflow::lowered_inputs(l.lowered, inputs));
  const runtime::VerifyReport report = verify(l, inputs, m.buffers);
  EXPECT_TRUE(report.pass()) << report.text();
}

TEST(CudaExecutor, HostStepsAloneGiveTheCpuBitsOnEveryStreamCount) {
  SKIP_WITHOUT_GPU();
  const DeviceKernels none;
  for (const Case& c : {kCases[1], kCases[3], kCases[5], kCases[8], kCases[10]}) {
    SCOPED_TRACE(std::string(c.graph) + " " + c.plan);
    const Lowered l = lower(c);
    const BufferMap inputs =
        workflow::lowered_inputs(l.lowered, runtime::generate_inputs(l.graph, {.seed = 3}));
    const BufferMap cpu = runtime::BlockExecutor(l.lowered.graph, {.threads = 1}).run(inputs);
    for (const int streams : {1, 3}) {
      for (const bool graph : {false, true}) {
        const CudaExecutor gpu(
            l.lowered.graph,
            {.streams = streams, .graph = graph, .device_kernels = &none, .poison = true});
        EXPECT_EQ(gpu.program().host_steps, gpu.program().steps.size());
        EXPECT_TRUE(same_bits(l.lowered.graph, gpu.run(inputs), cpu))
            << streams << " streams, graph " << graph;
      }
    }
  }
}

TEST(CudaExecutor, ABadInputIsAnErrorNamingIt) {
  SKIP_WITHOUT_GPU();
  const Lowered l = lower(kCases[0]);
  const CudaExecutor gpu(l.lowered.graph);
  EXPECT_THROW((void)gpu.run({}), Error);
}

TEST(CudaExecutorAvailability, SaysWhyNoDeviceIsUsable) {
  if (device_count() > 0) {  // a GPU: no reason, and a description naming it
    EXPECT_EQ(unavailable_reason(), "");
    EXPECT_NE(device_description(0).find("sm_"), std::string::npos);
    return;
  }
  EXPECT_FALSE(unavailable_reason().empty());
  const Lowered l = lower(kCases[0]);
  try {
    const CudaExecutor gpu(l.lowered.graph);
    FAIL() << "constructed without a GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--device cuda"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tapestry::gpu
