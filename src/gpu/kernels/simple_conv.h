// A plain CUDA conv2d for the convolutions cuDNN has no algorithm for (conv_kernels.h): one thread
// per output element, Σ over (c, i, j) row-major in float32 (float64 for float64), rounded once;
// every operand through its own strides, so no filter packing is needed.
//
// Plain C++ (nvcc and the host compiler include it).
#pragma once

#include <cstdint>

#include "pointwise.h"

namespace tapestry::gpu::kernels {

struct SimpleConv {
  ElemType type = ElemType::kF32;
  std::int64_t n = 0, o = 0, oh = 0, ow = 0, c = 0, kh = 0, kw = 0, stride = 1;
  std::int64_t xs[4] = {}, ws[4] = {}, ys[4] = {};  // element strides, NCHW / OIHW / NOHW
  const void* x = nullptr;  // x[n0, c0, s·oh0, s·ow0], w[o0, c0, 0, 0], y[n0, o0, oh0, ow0]
  const void* w = nullptr;
  void* y = nullptr;
};

/// Enqueues the convolution on `stream` (a cudaStream_t); returns 0 or the cudaError_t.
int launch_simple_conv(const SimpleConv& c, void* stream);

}  // namespace tapestry::gpu::kernels
