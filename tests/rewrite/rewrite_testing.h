// Helpers for rewrite tests: build graphs from .tap text, and prove a lowering keeps the meaning
// by running the original on the naive executor and the lowered graph on the application
// executor (reference kernels both), comparing every graph output.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/application_executor.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::rewrite::testing {

inline ir::Graph build(std::string_view tap) {
  auto file = std::make_shared<metakernel::SourceFile>("test.tap", std::string(tap));
  metakernel::BuildResult r = metakernel::build_tap(file, metakernel::builtin_kernels());
  std::string messages;
  for (const auto& d : r.diagnostics) messages += d.message + "\n";
  if (!r.ok()) ADD_FAILURE() << "cannot build:\n" << messages;
  return r.ok() ? std::move(*r.graph) : ir::Graph();
}

/// Naive run of `graph` vs application run of `lowered`, outputs matched by name.
inline runtime::TensorsComparison run_both(const ir::Graph& graph, const ir::Graph& lowered,
                                           std::uint64_t seed = 7) {
  runtime::BufferMap naive =
      runtime::NaiveExecutor(graph).run(runtime::generate_inputs(graph, {.seed = seed}));
  runtime::BufferMap sharded =
      runtime::ApplicationExecutor(lowered).run(runtime::generate_inputs(lowered, {.seed = seed}));
  runtime::BufferMap mapped;
  for (ir::TensorId t : runtime::graph_outputs(graph)) {
    ir::TensorId in_lowered = runtime::find_tensor(lowered, runtime::tensor_name(graph, t));
    mapped.emplace(t, std::move(sharded.at(in_lowered)));
  }
  return runtime::compare_tensors(graph, naive, mapped);
}

inline std::size_t count_kernel(const ir::Graph& g, std::string_view kernel) {
  std::size_t n = 0;
  for (ir::OperationId op : g.operations()) n += g.operation(op).kernel() == kernel;
  return n;
}

inline bool has_tensor_labelled(const ir::Graph& g, std::string_view label) {
  for (ir::TensorId t : g.tensors()) {
    if (g.tensor(t).label() == label) return true;
  }
  return false;
}

}  // namespace tapestry::rewrite::testing
