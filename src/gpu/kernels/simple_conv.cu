// The plain CUDA conv2d (simple_conv.h).
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "device_elements.cuh"
#include "simple_conv.h"

namespace tapestry::gpu::kernels {

namespace {

template <typename T>
__global__ void conv_kernel(SimpleConv cv, std::int64_t total) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  using C = compute_t<T>;
  const T* x = static_cast<const T*>(cv.x);
  const T* w = static_cast<const T*>(cv.w);
  T* y = static_cast<T*>(cv.y);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    std::int64_t rest = t;
    const std::int64_t ox = rest % cv.ow;
    rest /= cv.ow;
    const std::int64_t oy = rest % cv.oh;
    rest /= cv.oh;
    const std::int64_t oc = rest % cv.o;
    const std::int64_t nn = rest / cv.o;
    const T* xb = x + nn * cv.xs[0] + oy * cv.stride * cv.xs[2] + ox * cv.stride * cv.xs[3];
    const T* wb = w + oc * cv.ws[0];
    Acc acc = 0;
    for (std::int64_t c = 0; c < cv.c; ++c) {
      for (std::int64_t i = 0; i < cv.kh; ++i) {
        for (std::int64_t j = 0; j < cv.kw; ++j) {
          const Acc xv = static_cast<Acc>(load(xb + c * cv.xs[1] + i * cv.xs[2] + j * cv.xs[3]));
          const Acc wv = static_cast<Acc>(load(wb + c * cv.ws[1] + i * cv.ws[2] + j * cv.ws[3]));
          acc = acc + xv * wv;
        }
      }
    }
    store(y + nn * cv.ys[0] + oc * cv.ys[1] + oy * cv.ys[2] + ox * cv.ys[3], static_cast<C>(acc));
  }
}

template <typename Kernel>
int run(Kernel kernel, const SimpleConv& cv, void* stream) {
  const std::int64_t total = cv.n * cv.o * cv.oh * cv.ow;
  if (total <= 0) return 0;
  constexpr int kThreads = 256;
  const std::int64_t blocks = std::min<std::int64_t>((total + kThreads - 1) / kThreads, 1 << 16);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(cv,
                                                                                            total);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_simple_conv(const SimpleConv& cv, void* stream) {
  switch (cv.type) {
    case ElemType::kF32:
      return run(&conv_kernel<float>, cv, stream);
    case ElemType::kF64:
      return run(&conv_kernel<double>, cv, stream);
    case ElemType::kBF16:
      return run(&conv_kernel<Bf16>, cv, stream);
    case ElemType::kF16:
      return run(&conv_kernel<F16>, cv, stream);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace tapestry::gpu::kernels
