// The NCCL executor on one GPU (skipped without one): every example under its bundled plans,
// forced onto one rank, through NcclExecutor — the rank program compiled for the GPU, the rows
// of the inputs it reads copied in, rank 0's whole outputs copied back — on a one-rank
// communicator made from a unique id (no MPI: the GPU machine has no Open MPI daemon, which a
// singleton MPI_Init needs). It must verify against the float64 oracle, and the captured CUDA
// graph's replay must give the first run's bits. A one-rank job makes no NCCL call; the calls
// between ranks are tested on fake ranks (rank_device_program_test.cpp) and, on one GPU, each
// NcclComm operation on its own (nccl_test.cpp). docs/gpu.md lists what no test covers.
#include "tapestry/gpu/nccl_executor.h"

#include <gtest/gtest.h>

#include <cstring>

#include "example_plans.h"
#include "nccl_comm.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/runtime/verify.h"
#include "tapestry/runtime/view.h"
#include "tapestry/support/error.h"
#include "tapestry/workflow/mpi.h"
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

// The boxes a rank reads: rows of the whole inputs (contiguous in them).
BufferMap needed_boxes(const NcclExecutor& gpu, const BufferMap& whole) {
  BufferMap out;
  for (const runtime::NeededInput& need : gpu.inputs_needed()) {
    const Buffer& all = whole.at(need.tensor);
    Buffer box(all.dtype(), need.box);
    const std::int64_t offset =
        runtime::element_offset(all.range(), all.strides(), need.box.start()) *
        static_cast<std::int64_t>(ir::dtype_size_bytes(all.dtype()));
    std::memcpy(box.bytes(), all.bytes() + offset, box.size_bytes());
    out.emplace(need.tensor, std::move(box));
  }
  return out;
}

bool same_bits(const BufferMap& a, const BufferMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [t, x] : a) {
    const Buffer& y = b.at(t);
    if (x.size_bytes() != y.size_bytes() || std::memcmp(x.bytes(), y.bytes(), x.size_bytes()) != 0)
      return false;
  }
  return true;
}

TEST(NcclExecutor, EveryExamplePlanOnOneRankVerifiesOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const auto comm = std::make_shared<const NcclComm>(NcclComm::unique_id(), 0, 1, 0);
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.graph) + " " + c.plan);
    const Lowered l = lower(c);
    const runtime::RankSchedule schedule =
        workflow::prepare_mpi(l.lowered, "", 1, c.plan[0] == 0 ? "--split" : c.plan).schedule;
    const NcclExecutor gpu(comm, l.lowered.graph, schedule, {.poison = true});
    EXPECT_EQ(gpu.calls(), 0U);  // one rank: nothing to move
    const BufferMap inputs = runtime::generate_inputs(l.graph, {.seed = 11});
    const BufferMap lowered_inputs = workflow::lowered_inputs(l.lowered, inputs);
    // Run 1 issues the steps, run 2 records and launches the graph, run 3 replays it.
    const NcclExecutor::Result first = gpu.run(needed_boxes(gpu, lowered_inputs));
    EXPECT_FALSE(first.stats.replayed);
    const NcclExecutor::Result captured = gpu.run(needed_boxes(gpu, lowered_inputs));
    const NcclExecutor::Result again = gpu.run(needed_boxes(gpu, lowered_inputs));
    EXPECT_TRUE(again.stats.replayed);
    EXPECT_TRUE(same_bits(first.outputs, captured.outputs));
    EXPECT_TRUE(same_bits(first.outputs, again.outputs));
    const BufferMap results = workflow::graph_results(l.graph, l.lowered, BufferMap(first.outputs));
    const runtime::VerifyReport report = workflow::verify_run(
        l.graph, inputs, results, {.mode = runtime::VerifyMode::kBound}, std::nullopt);
    EXPECT_TRUE(report.pass()) << report.text();
    std::printf("%-24s %-32s %3zu applications, %3zu host steps, %.3f ms\n", c.graph, c.plan,
                gpu.application_count(), first.stats.host_steps, again.stats.compute_s * 1e3);
  }
}

TEST(NcclExecutor, AScheduleForAnotherNumberOfRanksIsRefused) {
  SKIP_WITHOUT_GPU();
  const auto comm = std::make_shared<const NcclComm>(NcclComm::unique_id(), 0, 1, 0);
  const Lowered l = lower({"mlp.tap", "mlp-megatron.json"});
  const runtime::RankSchedule two = workflow::prepare_mpi(l.lowered, "", 2, "megatron").schedule;
  try {
    const NcclExecutor gpu(comm, l.lowered.graph, two);
    ADD_FAILURE() << "a 2-rank schedule ran on a 1-rank communicator";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("over 2 ranks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tapestry::gpu
