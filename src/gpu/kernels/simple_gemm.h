// A plain CUDA GEMM for the plans cuBLASLt has no algorithm for (gemm_kernels.h): one thread per
// output element, the products summed in ascending k in float32 (float64 for float64), the bias
// added and the result rounded once — the column-major contract of gemm_plan.h, exactly as
// gpu_kernels_host_test interprets it. Slow, but any alignment and any leading dimension work.
//
// Plain C++ (nvcc and the host compiler include it).
#pragma once

#include <cstdint>

#include "pointwise.h"

namespace tapestry::gpu::kernels {

struct SimpleGemm {
  ElemType in = ElemType::kF32, out = ElemType::kF32;  // A and B; D (and the bias)
  std::int64_t m = 0, n = 0, k = 0;
  bool a_trans = false, b_trans = false;
  std::int64_t lda = 0, ldb = 0, ldd = 0;
  int batch_rank = 0;  // every batch dim, outermost first: extent and the steps of A, B, D
  std::int64_t batch_extent[kMaxRank] = {};
  std::int64_t batch_a[kMaxRank] = {}, batch_b[kMaxRank] = {}, batch_d[kMaxRank] = {};
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const void* bias = nullptr;   // or null
  bool bias_along_rows = true;  // bias[i·bias_step] (rows of D) or bias[j·bias_step]
  std::int64_t bias_step = 0;
  bool relu = false;
};

/// Enqueues the GEMM on `stream` (a cudaStream_t); returns 0 or the cudaError_t.
int launch_simple_gemm(const SimpleGemm& g, void* stream);

}  // namespace tapestry::gpu::kernels
