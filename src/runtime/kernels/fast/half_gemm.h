// Private: one 16-bit GEMM through oneDNN's bf16/f16 matmul primitive, accumulating in float32.
//
//   C[M×N] = post_ops(op(A)·op(B) [+ bias])     A, B bfloat16 or float16; C 16-bit or float32
//
// The layout is gemm.h's (row-major, leading dimensions, trans_a / trans_b); the storage types
// are the problem's: A and B of `src`, C of `dst`. oneDNN multiplies the 16-bit values exactly
// into a float32 accumulator and applies the bias and the ReLU to it in float32; a 16-bit C is
// rounded once (to nearest even) at the end — what the widening path (half_float_kernel.cpp)
// computes with one rounding less, and no float32 copies of A, B and C.
//
//   HalfGemm p{.args = {.m = 4096, .n = 4096, .k = 1024, .trans_b = true,
//                       .lda = 1024, .ldb = 1024, .ldc = 4096},
//              .src = DType::kBFloat16, .dst = DType::kBFloat16,
//              .bias = DType::kBFloat16, .relu = true};
//   run_half_gemm(p, x, w, b, h)      // h = relu(x·wᵀ + b): examples/mlp.tap's first layer
//
// Whether oneDNN implements the problem depends on the CPU: bf16 needs AVX512_BF16 (or at least
// AVX-512, emulated), f16 AVX512_FP16; ONEDNN_MAX_CPU_ISA below that makes them unimplemented.
// run_half_gemm then returns false with C untouched, and the caller widens (the documented
// fallback). The primitive is made once per problem and thread and kept, like
// gemm_with_post_ops' (gemm.h); a refusal is remembered too.
#pragma once

#include <cstdint>
#include <optional>

#include <oneapi/dnnl/dnnl.hpp>

#include "gemm.h"
#include "tapestry/runtime/element.h"

namespace tapestry::runtime::fast {

/// A 16-bit matmul problem: the GEMM, the storage dtypes and the post-ops.
struct HalfGemm {
  GemmArgs args;
  DType src = DType::kBFloat16;  // A and B
  DType dst = DType::kBFloat16;  // C: src, or kFloat32
  std::optional<DType> bias;     // none, src or kFloat32: n elements, `bias_step` apart
  std::int64_t bias_step = 1;    // element stride of the bias along n (0: one value for all)
  bool relu = false;             // ReLU after the bias
};

/// C = relu?(op(A)·op(B) + bias?) as one oneDNN matmul primitive; false (C untouched) when
/// oneDNN does not implement the problem on this CPU. Counts one oneDNN GEMM when it runs.
bool run_half_gemm(const HalfGemm& problem, const void* a, const void* b, const void* bias,
                   void* c);

/// True when oneDNN implements `problem` on this CPU (makes and caches its primitive).
bool half_gemm_available(const HalfGemm& problem);

/// oneDNN's data type for a float dtype: bf16, f16, else f32 (half_gemm.cpp, conv_onednn.cpp).
dnnl::memory::data_type onednn_type(DType dtype);

/// How many 16-bit GEMMs run_half_gemm has run in this process, every thread (tests: which
/// path a 16-bit call took; the widening path runs float32 GEMMs and leaves it).
std::uint64_t half_gemm_runs();

}  // namespace tapestry::runtime::fast
