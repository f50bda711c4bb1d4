// The fake device's pieces shared by the tests that run device programs without a GPU
// (device_program_test.cpp: one GPU; rank_device_program_test.cpp: several ranks): the example
// graphs lowered under their plans, a task's call pointed into host memory, bitwise comparison.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "example_plans.h"
#include "runtime/block_program.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/workflow/run.h"
#include "workflow_testing.h"

namespace tapestry::gpu::fake_device {

using runtime::Buffer;
using runtime::BufferMap;

using examples::Lowered;

// examples/mlp.tap's program at a size the tests run in milliseconds (same operation names, so
// the bundled mlp plans apply).
inline constexpr const char* kSmallMlp = R"(X:  f32[64, 32]
W1: f32[48, 32]
b1: f32[48]
W2: f32[32, 48]
b2: f32[32]
H = relu(linear(X, W1, b1))
Y = linear(H, W2, b2)
output Y
)";

inline Lowered lower(const char* graph, const char* plan) {
  Lowered l{std::string(graph) == "mlp.tap" ? workflow_testing::build(kSmallMlp, "mlp_small.tap")
                                            : workflow_testing::example(graph),
            {}};
  l.lowered = workflow::lower_for_run(
      l.graph, plan[0] == 0 ? rewrite::Plan{} : workflow_testing::example_plan(plan), {});
  return l;
}

template <typename Port, typename Byte>
inline void set_origins(ir::NamedLists<Port>& ports,
                        const std::vector<runtime::detail::PortAddress>& addresses,
                        const std::vector<std::byte*>& base) {
  std::size_t i = 0;
  ports.for_each_entry([&](const std::string&, std::uint32_t, Port& port) {
    const auto& a = addresses[i++];
    port.view = runtime::BasicView<Byte>(port.view.dtype(), base[a.slot] + a.byte_offset,
                                         port.view.box(), port.view.strides());
  });
}

// Runs `task`'s CPU kernel with its ports pointing into host memory (`base`: per slot).
inline void run_task(const runtime::detail::BlockTask& task, const std::vector<std::byte*>& base) {
  runtime::KernelCall call = task.call;
  set_origins<runtime::InputPort, const std::byte>(call.inputs, task.inputs, base);
  set_origins<runtime::OutputPort, std::byte>(call.outputs, task.outputs, base);
  runtime::limit_library_threads_to_one();
  task.kernel(call);
}

// True when every output of `got` equals `want` bit for bit.
inline bool same_outputs(const ir::Graph& graph, const BufferMap& got, const BufferMap& want) {
  for (ir::TensorId t : runtime::graph_outputs(graph)) {
    const Buffer& a = got.at(t);
    const Buffer& b = want.at(t);
    if (a.size_bytes() != b.size_bytes() ||
        std::memcmp(a.bytes(), b.bytes(), a.size_bytes()) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace tapestry::gpu::fake_device
