// The built-in device kernels (device_kernels.h): one registration per kernel name.
#include "conv_kernels.h"
#include "device_kernels.h"
#include "fused_kernels.h"
#include "gemm_kernels.h"
#include "pointwise_kernels.h"
#include "rows_kernels.h"

namespace tapestry::gpu {

const DeviceKernels& cuda_kernels() {
  static const DeviceKernels kernels = [] {
    DeviceKernels k;
    kernels::register_gemm_kernels(k);
    kernels::register_pointwise_kernels(k);
    kernels::register_row_kernels(k);
    kernels::register_fused_kernel(k);
    kernels::register_conv_kernels(k);
    return k;
  }();
  return kernels;
}

}  // namespace tapestry::gpu
