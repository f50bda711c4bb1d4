// ExecutableKernels: a sorted name → function table, and the reference set.
#include "tapestry/runtime/executable_kernels.h"

#include <fmt/format.h>

#include "kernels/reference_kernels.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"

namespace tapestry::runtime {

namespace {

// Java graphs name kernels "op:add"; Tapestry's own use the bare name.
std::string_view bare_name(std::string_view kernel) {
  return kernel.starts_with("op:") ? kernel.substr(3) : kernel;
}

}  // namespace

const ExecutableKernels& ExecutableKernels::reference() {
  static const ExecutableKernels registry = [] {
    ExecutableKernels r;
    register_elementwise_kernels(r);
    register_linear_matmul_kernels(r);
    register_reduce_kernels(r);
    register_softmax_kernels(r);
    register_moment_kernels(r);
    register_pool_kernels(r);
    register_conv_kernels(r);
    register_layout_kernels(r);
    register_indexing_kernels(r);
    register_autodiff_kernels(r);
    register_training_kernels(r);
    register_fused_kernel(r);
    return r;
  }();
  return registry;
}

void ExecutableKernels::add(std::string name, KernelFn fn, PrepareFn prepare) {
  TAPESTRY_ASSERT(fn != nullptr, "ExecutableKernels::add: null kernel");
  add_native(std::move(name), widen_half_floats(std::move(fn)), prepare);
}

void ExecutableKernels::add_native(std::string name, KernelFn fn, PrepareFn prepare) {
  TAPESTRY_ASSERT(fn != nullptr, "ExecutableKernels::add: null kernel");
  const bool inserted = kernels_.emplace(std::move(name), Entry{fn, prepare}).second;
  TAPESTRY_ASSERT(inserted, "ExecutableKernels::add: kernel registered twice");
}

KernelFn ExecutableKernels::find(std::string_view kernel) const {
  auto it = kernels_.find(bare_name(kernel));
  return it == kernels_.end() ? nullptr : it->second.fn;
}

PrepareFn ExecutableKernels::find_prepare(std::string_view kernel) const {
  auto it = kernels_.find(bare_name(kernel));
  return it == kernels_.end() ? nullptr : it->second.prepare;
}

KernelFn ExecutableKernels::lookup(std::string_view kernel, std::string_view operation) const {
  if (KernelFn fn = find(kernel)) return fn;
  throw Error(fmt::format("operation '{}': no kernel named '{}' (known: {})", operation, kernel,
                          fmt::join(names(), ", ")));
}

std::vector<std::string> ExecutableKernels::names() const {
  std::vector<std::string> out;
  out.reserve(kernels_.size());
  for (const auto& entry : kernels_) out.push_back(entry.first);
  return out;
}

}  // namespace tapestry::runtime
