// The built-in device kernels (device_kernels.h): one registration per kernel name.
#include "device_kernels.h"

namespace tapestry::gpu {

const DeviceKernels& cuda_kernels() {
  static const DeviceKernels kernels = [] {
    DeviceKernels k;
    return k;
  }();
  return kernels;
}

}  // namespace tapestry::gpu
