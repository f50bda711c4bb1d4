// Helpers for verifier tests: build a .tap program, run it under a plan on the block executor
// with the fast kernels, and judge the result against the unsharded graph.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/element.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/verify.h"

namespace tapestry::verify_testing {

inline ir::Graph build(std::string_view tap) {
  auto file = std::make_shared<metakernel::SourceFile>("test.tap", std::string(tap));
  metakernel::BuildResult r = metakernel::build_tap(file, metakernel::builtin_signatures());
  std::string messages;
  for (const auto& d : r.diagnostics) messages += d.message + "\n";
  if (!r.ok()) {
    ADD_FAILURE() << "cannot build:\n" << messages;
    return ir::Graph();
  }
  return std::move(*r.graph);
}

inline rewrite::Plan plan(std::string_view json) {
  return rewrite::parse_plan(json, "plan.json");
}

/// Fills the masks of the masked test graphs (tests/data/verify/*.tap) among `inputs`: an input
/// named `Mask…` gets `masked` where its last index exceeds its second-to-last (a causal mask:
/// row i keeps columns 0…i) and 0 elsewhere; one named `Pad…` gets `masked` at the last 4·b
/// positions of its last dim in batch b (dim 0), 0 elsewhere (a padding mask). Other inputs keep
/// their values.
inline void fill_masks(const ir::Graph& graph, runtime::BufferMap& inputs, float masked) {
  for (auto& [t, buffer] : inputs) {
    const std::string name = runtime::tensor_name(graph, t);
    const bool causal = name.starts_with("Mask");
    if (!causal && !name.starts_with("Pad")) continue;
    const runtime::Range& r = buffer.range();
    const std::size_t last = r.rank() - 1;
    runtime::visit_storage_dtype(buffer.dtype(), [&]<typename T>() {  // f32, bf16, …
      const auto cells = buffer.view().typed<T>();
      for (const runtime::Point& p : r.points()) {
        const std::int64_t j = p[last] - r.start()[last];
        const bool off = causal ? j > p[last - 1] - r.start()[last - 1]
                                : j >= r.extent(last) - 4 * (p[0] - r.start()[0]);
        cells[p] = runtime::storage_cast<T>(off ? masked : 0.0);
      }
    });
  }
}

/// Sets every cell of input `name` to `v`.
inline void fill_input(const ir::Graph& graph, runtime::BufferMap& inputs, std::string_view name,
                       float v) {
  runtime::fill(inputs.at(runtime::find_tensor(graph, name)).view(), v);
}

/// `graph` lowered under `plan` and run on the block executor (fast kernels, 2 threads) with
/// `inputs`; the outputs keyed by `graph`'s tensors.
inline runtime::BufferMap run_plan(
    const ir::Graph& graph, const rewrite::Plan& plan, const runtime::BufferMap& inputs,
    const runtime::ExecutableKernels& kernels = runtime::fast_kernels()) {
  const rewrite::LowerResult lowered = rewrite::lower(graph, plan, {});
  runtime::BufferMap in;
  for (const auto& [t, b] : inputs)
    in.emplace(runtime::find_tensor(lowered.graph, runtime::tensor_name(graph, t)), b);
  const runtime::BufferMap out =
      runtime::BlockExecutor(lowered.graph, {.threads = 2, .kernels = &kernels}).run(std::move(in));
  runtime::BufferMap results;
  for (ir::TensorId t : runtime::graph_outputs(graph))
    results.emplace(t, out.at(runtime::find_tensor(lowered.graph, runtime::tensor_name(graph, t))));
  return results;
}

}  // namespace tapestry::verify_testing
