// The examples under their bundled plans that the GPU tests run end to end (cuda_executor_test.cpp:
// the CUDA executor; nccl_executor_test.cpp: the NCCL executor on one rank), lowered as
// `tapestry run` lowers them; SKIP_WITHOUT_GPU() skips a test where no GPU is usable. The digits
// plans are left out: they need real labels. (Tests pick some by index: append new cases at the
// end.)
#pragma once

#include "tapestry/gpu/cuda.h"
#include "tapestry/workflow/run.h"
#include "workflow_testing.h"

#define SKIP_WITHOUT_GPU() \
  if (::tapestry::gpu::device_count() == 0) GTEST_SKIP() << ::tapestry::gpu::unavailable_reason()

namespace tapestry::gpu::examples {

struct Case {
  const char* graph;
  const char* plan;  // "" for none
};
inline constexpr Case kCases[] = {{"linear_relu.tap", ""},
                                  {"linear_relu.tap", "linear_relu-batch2-fused.json"},
                                  {"linear_relu.tap", "linear_relu-split-in.json"},
                                  {"linear_relu.tap", "linear_relu-grid.json"},
                                  {"mlp.tap", ""},
                                  {"mlp.tap", "mlp-megatron.json"},
                                  {"mlp.tap", "mlp-data-parallel.json"},
                                  {"mlp.tap", "mlp-best.json"},
                                  {"transformer_block.tap", "transformer_block-heads.json"},
                                  {"transformer_large.tap", "transformer_large-rows.json"},
                                  {"convnet.tap", "convnet-batch.json"},
                                  {"resnet_bottleneck.tap", "resnet_bottleneck-batch.json"},
                                  {"mlp_grad.tap", "mlp_grad-data-parallel.json"}};

struct Lowered {
  ir::Graph graph;
  rewrite::LowerResult lowered;
};

inline Lowered lower(const Case& c) {
  Lowered l{workflow_testing::example(c.graph), {}};
  l.lowered = workflow::lower_for_run(
      l.graph, c.plan[0] == 0 ? rewrite::Plan{} : workflow_testing::example_plan(c.plan), {});
  return l;
}

}  // namespace tapestry::gpu::examples
