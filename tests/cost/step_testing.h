// Shared by the tests of the whole-graph rewrites of a training step (recompute_test.cpp,
// zero_test.cpp, pipeline_test.cpp): what an operation reads, and a step run on the block executor,
// its outputs compared bitwise with another run's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::cost::testing {

/// The tensors operation `op` (by name) reads, by name.
inline std::vector<std::string> reads(const ir::Graph& g, std::string_view op) {
  const std::optional<ir::OperationId> id = rewrite::find_operation(g, op);
  EXPECT_TRUE(id.has_value()) << op;
  std::vector<std::string> names;
  if (!id) return names;
  for (const auto& in : g.operation(*id).inputs().entries()) {
    names.push_back(g.display_name(in.value.tensor));
  }
  return names;
}

inline bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

struct StepRun {
  runtime::BufferMap outputs;  // by output name's tensor in the *original* graph
  std::int64_t measured_peak = 0;
  std::int64_t estimated_peak = 0;
};

/// `r`, `g` lowered, run once on generated inputs (seed 11).
inline StepRun run_lowered(const ir::Graph& g, const rewrite::LowerResult& r,
                           const runtime::ExecutableKernels& k, int threads) {
  const runtime::BlockExecutor exec(r.graph, {.threads = threads, .kernels = &k});
  auto [buffers, metrics] = exec.run_measured(runtime::generate_inputs(r.graph, {.seed = 11}));
  StepRun run{.measured_peak = metrics.peak_memory_bytes,
              .estimated_peak = exec.estimated_peak_memory_bytes()};
  for (ir::TensorId t : runtime::graph_outputs(g)) {
    run.outputs.emplace(t, std::move(buffers.at(r.lowered(t))));
  }
  return run;
}

/// `g` lowered under `plan` and run once on generated inputs (seed 11).
inline StepRun run_block(const ir::Graph& g, const rewrite::Plan& plan,
                         const runtime::ExecutableKernels& k, int threads) {
  return run_lowered(g, rewrite::lower(g, plan), k, threads);
}

inline void expect_bitwise_equal(const ir::Graph& g, const StepRun& a, const StepRun& b) {
  for (ir::TensorId t : runtime::graph_outputs(g)) {
    const runtime::Buffer& x = a.outputs.at(t);
    const runtime::Buffer& y = b.outputs.at(t);
    ASSERT_EQ(x.size_bytes(), y.size_bytes());
    EXPECT_EQ(std::memcmp(x.bytes(), y.bytes(), x.size_bytes()), 0) << g.display_name(t);
  }
}

}  // namespace tapestry::cost::testing
