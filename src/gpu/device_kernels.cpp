// The device kernel registry (device_kernels.h).
#include "device_kernels.h"

#include "tapestry/support/assert.h"

namespace tapestry::gpu {

void DeviceKernels::add(std::string name, DeviceKernel kernel) {
  TAPESTRY_ASSERT(kernel.supports != nullptr && kernel.launch != nullptr,
                  "device kernel without supports/launch");
  const bool inserted = kernels_.emplace(std::move(name), kernel).second;
  TAPESTRY_ASSERT(inserted, "device kernel registered twice");
}

const DeviceKernel* DeviceKernels::find(std::string_view kernel) const {
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  const auto it = kernels_.find(kernel);
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<std::string> DeviceKernels::names() const {
  std::vector<std::string> out;
  out.reserve(kernels_.size());
  for (const auto& [name, kernel] : kernels_) out.push_back(name);
  return out;
}

}  // namespace tapestry::gpu
