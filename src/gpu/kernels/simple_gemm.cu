// The plain CUDA GEMM (simple_gemm.h).
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "device_elements.cuh"
#include "simple_gemm.h"

namespace tapestry::gpu::kernels {

namespace {

template <typename In, typename Out>
__global__ void gemm_kernel(SimpleGemm g, std::int64_t total) {
  using Acc = std::conditional_t<std::is_same_v<In, double>, double, float>;
  using C = compute_t<Out>;
  const In* a = static_cast<const In*>(g.a);
  const In* b = static_cast<const In*>(g.b);
  Out* d = static_cast<Out*>(g.d);
  const Out* bias = static_cast<const Out*>(g.bias);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    // t = ((batch…)·n + j)·m + i: consecutive threads walk D's column (its unit step).
    std::int64_t rest = t;
    const std::int64_t i = rest % g.m;
    rest /= g.m;
    const std::int64_t j = rest % g.n;
    rest /= g.n;
    std::int64_t oa = 0, ob = 0, od = 0;
    for (int q = g.batch_rank - 1; q >= 0; --q) {
      const std::int64_t c = rest % g.batch_extent[q];
      rest /= g.batch_extent[q];
      oa += c * g.batch_a[q];
      ob += c * g.batch_b[q];
      od += c * g.batch_d[q];
    }
    Acc acc = 0;
    for (std::int64_t p = 0; p < g.k; ++p) {
      const Acc av = static_cast<Acc>(load(a + oa + (g.a_trans ? p + i * g.lda : i + p * g.lda)));
      const Acc bv = static_cast<Acc>(load(b + ob + (g.b_trans ? j + p * g.ldb : p + j * g.ldb)));
      acc = acc + av * bv;
    }
    C v = static_cast<C>(acc);
    if (bias != nullptr) v = v + load(bias + (g.bias_along_rows ? i : j) * g.bias_step);
    if (g.relu) v = v < C{0} ? C{0} : v;
    store(d + od + i + j * g.ldd, v);
  }
}

template <typename F>
void visit_float(ElemType t, F&& f) {
  switch (t) {
    case ElemType::kF32:
      f.template operator()<float>();
      break;
    case ElemType::kF64:
      f.template operator()<double>();
      break;
    case ElemType::kBF16:
      f.template operator()<Bf16>();
      break;
    case ElemType::kF16:
      f.template operator()<F16>();
      break;
    default:
      break;
  }
}

}  // namespace

int launch_simple_gemm(const SimpleGemm& g, void* stream) {
  std::int64_t total = g.m * g.n;
  for (int q = 0; q < g.batch_rank; ++q) total *= g.batch_extent[q];
  if (total <= 0) return 0;
  int status = static_cast<int>(cudaErrorInvalidValue);
  visit_float(g.in, [&]<typename In>() {
    visit_float(g.out, [&]<typename Out>() {
      // f64 with f64 only; 16-bit inputs may write f32.
      if constexpr (std::is_same_v<In, double> == std::is_same_v<Out, double>) {
        constexpr int kThreads = 256;
        const std::int64_t blocks =
            std::min<std::int64_t>((total + kThreads - 1) / kThreads, 1 << 16);
        gemm_kernel<In, Out>
            <<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
                g, total);
        status = static_cast<int>(cudaGetLastError());
      }
    });
  });
  return status;
}

}  // namespace tapestry::gpu::kernels
