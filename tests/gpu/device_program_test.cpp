// device_program.h without a GPU: the plan of streams, events and arena offsets, checked by
// check_device_program and run on a *fake device* — the arena in host memory, the streams'
// steps interleaved at random wherever the events allow, each step the CPU reference kernel —
// which must give the block executor's bits. And the faults: a dropped wait, an overlapping
// placement, a program without its events (the fake device computes wrong values then, so it
// is a test that can fail).
#include "device_program.h"
#include "fake_device.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/runtime/view.h"
#include "tapestry/workflow/run.h"
#include "tapestry/zspace/format.h"
#include "workflow_testing.h"

namespace tapestry::gpu {
namespace {

using fake_device::lower;
using fake_device::Lowered;
using fake_device::same_outputs;
using runtime::Buffer;
using runtime::BufferMap;
using runtime::ExecutableKernels;

// The fake device: see the file comment. Steps are atomic; the interleaving is the test.
BufferMap fake_run(const DeviceProgram& p, const ir::Graph& graph, const BufferMap& inputs,
                   std::uint32_t seed) {
  const auto bytes = static_cast<std::size_t>(std::max<std::int64_t>(p.arena_bytes, 256));
  std::byte* arena = static_cast<std::byte*>(std::aligned_alloc(256, (bytes + 255) / 256 * 256));
  std::memset(arena, 0xFF, bytes);  // NaN: a read before its write shows
  std::vector<std::byte*> base(p.block.slots.size());
  for (std::size_t s = 0; s < base.size(); ++s) base[s] = arena + p.placement[s].offset;
  for (std::size_t s = 0; s < p.block.slots.size(); ++s) {
    const auto& slot = p.block.slots[s];
    if (slot.input && slot.bytes > 0) {
      std::memcpy(base[s], inputs.at(slot.tensor).bytes(), static_cast<std::size_t>(slot.bytes));
    }
  }
  std::vector<std::vector<std::size_t>> queue(static_cast<std::size_t>(p.streams));
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    queue[static_cast<std::size_t>(p.steps[i].stream)].push_back(i);
  }
  std::vector<std::size_t> head(queue.size(), 0);
  std::vector<bool> done(p.events, false);
  std::mt19937 rng(seed);
  for (std::size_t issued = 0; issued < p.steps.size(); ++issued) {
    std::vector<std::size_t> ready;
    for (std::size_t s = 0; s < queue.size(); ++s) {
      if (head[s] == queue[s].size()) continue;
      const DeviceStep& step = p.steps[queue[s][head[s]]];
      bool ok = true;
      for (std::uint32_t e : step.waits) ok = ok && done[e];
      if (ok) ready.push_back(s);
    }
    if (ready.empty()) {
      std::free(arena);
      ADD_FAILURE() << "the streams deadlock";
      return {};
    }
    const std::size_t s =
        ready[std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng)];
    const DeviceStep& step = p.steps[queue[s][head[s]++]];
    fake_device::run_task(p.block.tasks[step.task], base);
    if (step.record >= 0) done[static_cast<std::size_t>(step.record)] = true;
  }
  BufferMap out;
  for (std::size_t s = 0; s < p.block.slots.size(); ++s) {
    const auto& slot = p.block.slots[s];
    if (!slot.output) continue;
    Buffer b(slot.dtype, slot.range);
    if (slot.bytes > 0) std::memcpy(b.bytes(), base[s], static_cast<std::size_t>(slot.bytes));
    out.emplace(slot.tensor, std::move(b));
  }
  std::free(arena);
  (void)graph;
  return out;
}

const struct Case {
  const char* graph;
  const char* plan;
} kCases[] = {{"linear_relu.tap", ""},
              {"linear_relu.tap", "linear_relu-batch2-fused.json"},
              {"linear_relu.tap", "linear_relu-split-in.json"},
              {"linear_relu.tap", "linear_relu-grid.json"},
              {"mlp.tap", "mlp-megatron.json"},
              {"mlp.tap", "mlp-data-parallel.json"},
              {"transformer_block.tap", "transformer_block-heads.json"},
              {"convnet.tap", "convnet-batch.json"}};

TEST(DeviceProgram, EveryExamplePlanIsConsistentAndRunsOnTheFakeDeviceBitwise) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.graph) + " " + c.plan);
    const Lowered l = lower(c.graph, c.plan);
    const ir::Graph& g = l.lowered.graph;
    const BufferMap inputs =
        workflow::lowered_inputs(l.lowered, runtime::generate_inputs(l.graph, {.seed = 5}));
    const BufferMap want =
        runtime::BlockExecutor(g, {.threads = 1, .kernels = &runtime::fast_kernels()}).run(inputs);
    for (const int streams : {1, 2, 4}) {
      for (const bool reuse : {true, false}) {
        SCOPED_TRACE(fmt::format("{} streams, reuse {}", streams, reuse));
        const DeviceProgram p = plan_device_program(g, runtime::fast_kernels(), {},
                                                    {.streams = streams, .reuse_memory = reuse});
        ASSERT_EQ(check_device_program(p), "");
        EXPECT_EQ(p.host_steps, p.steps.size());  // no device kernels given
        for (std::uint32_t seed = 0; seed < 4; ++seed) {
          EXPECT_TRUE(same_outputs(g, fake_run(p, g, inputs, seed), want)) << "seed " << seed;
        }
      }
    }
  }
}

TEST(DeviceProgram, ChainsStayOnOneStreamWithoutEvents) {
  // Y = relu(linear(X)) split in 2 on batch: two independent chains, one per stream.
  const Lowered l = lower("linear_relu.tap", "linear_relu-batch2-fused.json");
  const DeviceProgram p =
      plan_device_program(l.lowered.graph, runtime::fast_kernels(), {}, {.streams = 2});
  ASSERT_EQ(check_device_program(p), "");
  std::set<int> used;
  for (const DeviceStep& s : p.steps) {
    used.insert(s.stream);
    EXPECT_TRUE(s.waits.empty());
  }
  EXPECT_EQ(used.size(), std::min<std::size_t>(2, p.steps.size()));
  EXPECT_EQ(p.events, 0U);
}

TEST(DeviceProgram, IntermediatesReuseMemoryAndTheReuseAddsItsEdges) {
  // mlp under data parallelism: many intermediates, of which later ones can take earlier ones'
  // memory once those are read.
  const Lowered l = lower("mlp.tap", "mlp-megatron.json");
  const DeviceProgram shared =
      plan_device_program(l.lowered.graph, runtime::fast_kernels(), {}, {.streams = 4});
  const DeviceProgram own = plan_device_program(l.lowered.graph, runtime::fast_kernels(), {},
                                                {.streams = 4, .reuse_memory = false});
  EXPECT_LE(shared.arena_bytes, own.arena_bytes);
  std::size_t edges = 0;
  for (const auto& e : own.memory_edges) edges += e.size();
  EXPECT_EQ(edges, 0U);
  EXPECT_EQ(check_device_program(shared), "");
}

TEST(DeviceProgram, TheTransformerBlockReusesMemoryUnderEdges) {
  const Lowered l = lower("transformer_block.tap", "transformer_block-heads.json");
  const DeviceProgram shared =
      plan_device_program(l.lowered.graph, runtime::fast_kernels(), {}, {.streams = 4});
  const DeviceProgram own = plan_device_program(l.lowered.graph, runtime::fast_kernels(), {},
                                                {.streams = 4, .reuse_memory = false});
  EXPECT_LT(shared.arena_bytes, own.arena_bytes * 3 / 4);
  std::size_t edges = 0;
  for (const auto& e : shared.memory_edges) edges += e.size();
  EXPECT_GT(edges, 0U);
  EXPECT_EQ(check_device_program(shared), "");
}

TEST(DeviceProgram, DeviceKernelsChooseTheStepsThatRunOnTheGpu) {
  DeviceKernels device;
  device.add("relu", {.supports = [](const runtime::KernelCall&) { return true; },
                      .launch = [](const runtime::KernelCall&, const DeviceContext&) {}});
  device.add("linear", {.supports = [](const runtime::KernelCall&) { return false; },
                        .launch = [](const runtime::KernelCall&, const DeviceContext&) {}});
  const Lowered l = lower("mlp.tap", "");
  const DeviceProgram p = plan_device_program(l.lowered.graph, runtime::fast_kernels(), device, {});
  ASSERT_EQ(p.steps.size(), 3U);  // linear, relu, linear
  EXPECT_EQ(p.host_steps, 2U);
  EXPECT_EQ(p.host_steps_by_kernel.at("linear"), 2U);
  for (const DeviceStep& s : p.steps) {
    EXPECT_EQ(s.on_device, p.block.tasks[s.task].call.kernel == "relu");
  }
}

TEST(DeviceProgram, BoxRunsCoverExactlyTheBoxInRowMajorOrder) {
  // Every box of a few buffers (every start and end per dim): the runs' bytes, row by row, must
  // be the box's cells in row-major order (an independent walk of its points), each once, and
  // the staging side dense from its offset.
  for (const runtime::Point& shape : {runtime::Point{7}, runtime::Point{3, 4},
                                      runtime::Point{2, 3, 4}, runtime::Point{2, 1, 3, 2}}) {
    const runtime::Range range = runtime::Range::of_shape(shape);
    const runtime::Point strides = runtime::dense_strides(shape);
    std::vector<runtime::Range> boxes;
    std::vector<std::int64_t> lo(shape.rank(), 0), hi(shape.rank(), 0);
    std::function<void(std::size_t)> each = [&](std::size_t d) {
      if (d == shape.rank()) {
        boxes.emplace_back(runtime::Point(lo), runtime::Point(hi));
        return;
      }
      for (lo[d] = 0; lo[d] <= shape[d]; ++lo[d]) {
        for (hi[d] = lo[d]; hi[d] <= shape[d]; ++hi[d]) each(d + 1);
      }
    };
    each(0);
    for (const runtime::Range& box : boxes) {
      std::vector<std::int64_t> want;  // byte offsets of the box's cells, row-major
      for (const runtime::Point& p : box.points()) {
        want.push_back(runtime::element_offset(range, strides, p) * 4);
      }
      const std::int64_t first =
          box.is_empty() ? 0 : runtime::element_offset(range, strides, box.start()) * 4;
      std::vector<std::int64_t> got;
      std::int64_t dense = 100;
      for (const BoxRun& run : box_runs(strides, box.shape(), 4, first, 100)) {
        EXPECT_EQ(run.staging_offset, dense);
        for (std::int64_t h = 0; h < run.height; ++h) {
          for (std::int64_t b = 0; b < run.width; b += 4)
            got.push_back(run.slot_offset + h * run.pitch + b);
        }
        dense += run.width * run.height;
      }
      EXPECT_EQ(got, want) << box;
    }
  }
}

// --- Faults the checks must catch.

DeviceProgram program_with_events() {
  const Lowered l = lower("mlp.tap", "mlp-megatron.json");
  DeviceProgram p =
      plan_device_program(l.lowered.graph, runtime::fast_kernels(), {}, {.streams = 4});
  EXPECT_GT(p.events, 0U);
  return p;
}

TEST(DeviceProgramFaults, ADroppedWaitIsReported) {
  DeviceProgram p = program_with_events();
  for (DeviceStep& s : p.steps) {
    if (!s.waits.empty()) {
      s.waits.clear();
      break;
    }
  }
  EXPECT_NE(check_device_program(p).find("may start before"), std::string::npos);
}

TEST(DeviceProgramFaults, AWaitBeforeItsRecordIsReported) {
  DeviceProgram p = program_with_events();
  for (DeviceStep& s : p.steps) {
    if (s.record >= 0) {
      p.steps.front().waits.push_back(static_cast<std::uint32_t>(s.record));
      break;
    }
  }
  EXPECT_NE(check_device_program(p).find("before it is recorded"), std::string::npos);
}

TEST(DeviceProgramFaults, OverlappingLiveTensorsAreReported) {
  DeviceProgram p = program_with_events();
  // Put an output on top of an input.
  std::optional<std::size_t> input, output;
  for (std::size_t s = 0; s < p.block.slots.size(); ++s) {
    if (p.block.slots[s].input && !input) input = s;
    if (p.block.slots[s].output && !output) output = s;
  }
  ASSERT_TRUE(input && output);
  p.placement[*output].offset = p.placement[*input].offset;
  EXPECT_NE(check_device_program(p).find("share arena bytes"), std::string::npos);
}

TEST(DeviceProgramFaults, ReusedMemoryWithoutItsOrderIsReported) {
  // Without reuse no edges order the intermediates; placing two of them in the same bytes must
  // be caught unless one's users all precede the other's writers.
  const Lowered l = lower("transformer_block.tap", "transformer_block-heads.json");
  DeviceProgram p = plan_device_program(l.lowered.graph, runtime::fast_kernels(), {},
                                        {.streams = 4, .reuse_memory = false});
  std::vector<std::size_t> intermediates;
  for (std::size_t s = 0; s < p.block.slots.size(); ++s) {
    if (!p.block.slots[s].input && !p.block.slots[s].output && p.placement[s].bytes > 0) {
      intermediates.push_back(s);
    }
  }
  ASSERT_GE(intermediates.size(), 4U);
  std::size_t reported = 0;
  for (std::size_t i = 1; i < intermediates.size(); ++i) {
    DeviceProgram q = p;
    q.placement[intermediates[i]].offset = q.placement[intermediates[0]].offset;
    if (check_device_program(q).find("share arena bytes") != std::string::npos) ++reported;
  }
  EXPECT_GT(reported, 0U);
}

TEST(DeviceProgramFaults, TheFakeDeviceComputesWrongValuesWithoutTheEvents) {
  const Lowered l = lower("mlp.tap", "mlp-megatron.json");
  const ir::Graph& g = l.lowered.graph;
  const BufferMap inputs =
      workflow::lowered_inputs(l.lowered, runtime::generate_inputs(l.graph, {.seed = 5}));
  const BufferMap want =
      runtime::BlockExecutor(g, {.threads = 1, .kernels = &runtime::fast_kernels()}).run(inputs);
  DeviceProgram p = plan_device_program(g, runtime::fast_kernels(), {}, {.streams = 4});
  for (DeviceStep& s : p.steps) s.waits.clear();
  int wrong = 0;
  for (std::uint32_t seed = 0; seed < 16; ++seed) {
    if (!same_outputs(g, fake_run(p, g, inputs, seed), want)) ++wrong;
  }
  EXPECT_GT(wrong, 0);
}

}  // namespace
}  // namespace tapestry::gpu
