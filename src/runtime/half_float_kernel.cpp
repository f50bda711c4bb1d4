// widen_half_floats: bf16/f16 ports of a kernel call run through the float32 kernel
// (executable_kernels.h).
#include <utility>
#include <vector>

#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/executable_kernels.h"

namespace tapestry::runtime {

bool has_half_float_port(const KernelCall& call) {
  for (const auto& e : call.inputs.entries()) {
    if (is_half_float(e.value.view.dtype())) return true;
  }
  for (const auto& e : call.outputs.entries()) {
    if (is_half_float(e.value.view.dtype())) return true;
  }
  return false;
}

namespace {

void run_widened(const KernelFn& fn, const KernelCall& call) {
  KernelCall wide = call;
  // Buffers own heap storage: their views stay valid when the vector moves them.
  std::vector<Buffer> blocks;
  blocks.reserve(call.inputs.size() + call.outputs.size());
  wide.inputs.for_each_entry([&](std::string_view, std::size_t, InputPort& port) {
    if (!is_half_float(port.view.dtype())) return;
    Buffer& block = blocks.emplace_back(DType::kFloat32, port.view.box(), Buffer::Uninitialized{});
    convert_elements(port.view, block.view());
    port.view = std::as_const(block).view();
  });
  std::vector<View> targets;
  targets.reserve(call.outputs.size());
  wide.outputs.for_each_entry([&](std::string_view, std::size_t, OutputPort& port) {
    if (!is_half_float(port.view.dtype())) return;
    targets.push_back(port.view);
    // Uninitialized, as the executors' outputs: a kernel writes every cell of its outputs.
    Buffer& block = blocks.emplace_back(DType::kFloat32, port.view.box(), Buffer::Uninitialized{});
    port.view = block.view();
  });
  fn(wide);
  // The outputs' blocks, in the order they were made (after the inputs' blocks).
  std::size_t next = blocks.size() - targets.size();
  for (const View& target : targets) convert_elements(std::as_const(blocks[next++]).view(), target);
}

}  // namespace

KernelFn widen_half_floats(KernelFn fn) {
  return [fn = std::move(fn)](const KernelCall& call) {
    if (has_half_float_port(call)) {
      run_widened(fn, call);
    } else {
      fn(call);
    }
  };
}

}  // namespace tapestry::runtime
