// The fast kernel set: the reference kernels' names and meanings, optimised.
//
// `fast_kernels()` is a second ExecutableKernels (executable_kernels.h) with every name
// `ExecutableKernels::reference()` has. A fast kernel recognises the layouts that matter — the IPFs
// the metakernels give, over a whole operation or any shard, at any coordinates, with strided
// sub-box views — and runs them with a tuned library or vectorisable loops; any call whose
// layout, dtype or IPF pattern it does not recognise goes to the reference kernel of the same
// name, so a fast kernel is correct for every call the reference accepts.
//
//   linear, matmul   one GEMM per batch point, straight on the views (leading dims = the views'
//                    strides, `linear` as x·wᵀ with the transposed-B GEMM; no copies), oneDNN
//                    sgemm or OpenBLAS sgemm/dgemm (see GemmBackend); integer dtypes: reference
//   fused            a GEMM producer followed by bias_add / unary stages writes the final output
//                    view directly, then applies bias and the unary ops row by row in one pass
//                    (the "epilogue"; no intermediate block); other chains run stage by stage
//                    with these kernels
//   elementwise      unary, broadcasting binary and bias_add: loops over raw pointers, the
//                    innermost contiguous run vectorised by the compiler
//   sum max reduce   one reduced dim: folds across rows (vectorised over output cells) or a
//                    contiguous sum line with partial sums
//   conv2d           f32 in the metakernel's layout: oneDNN's convolution primitive over the
//                    views (cached per shape and thread); else im2col + GEMM per image (same
//                    GEMM backends), thread-local scratch; any shard, stride, overlapping
//                    windows, the block dim of a split reduction
//   softmax          contiguous rows, the reference's formulas in its order (bitwise equal)
//   transpose, permute, reshape  a strided copy through the unary maps' loop nest (bitwise)
//   pad              f32/f64 row by row: fill with `value`, copy the part x holds
//
// Results (docs/runtime.md, "Fast kernels", states the bounds and the measurements):
//   * elementwise maps, bias_add and reductions that fold across rows are bitwise equal to the
//     reference (same operations, same order, the same libm calls);
//   * a K-long dot product plus bias (linear, matmul, a sum along a contiguous dim) is summed
//     in another order: |fast − ref| ≤ 2·(K+1)·ε·(Σ_i |x_i·w_i| + |b|), ε the unit roundoff.
//
// Example — the executor picks a registry, then pins each pool thread's libraries to one thread:
//
//   const ExecutableKernels& kernels = use_fast ? fast_kernels() : ExecutableKernels::reference();
//   KernelFn linear = kernels.lookup("linear", "fc1");
//   // on every pool thread (and the main thread), before its first kernel:
//   limit_library_threads_to_one();
//   linear(call);                      // call: a KernelCall for one shard (kernel.h)
//
//   set_gemm_backend(GemmBackend::kOpenBlas);   // benchmarks and tests only: force a library
//   FastKernelCounts c = fast_kernel_counts();  // c.fast_calls > 0: the fast paths ran
//   // per operation: RunMetrics::operations[i].fallbacks (the block executor's metrics)
//
// Concurrency: fast kernels may run concurrently on disjoint output boxes, like the reference
// ones. The GEMM backend and the counters are process-wide atomics.
#pragma once

#include <cstdint>

#include "tapestry/runtime/executable_kernels.h"

namespace tapestry::runtime {

/// The fast kernel set (built once, shared, immutable). Same names as
/// ExecutableKernels::reference(); a call the fast path does not recognise runs the reference.
const ExecutableKernels& fast_kernels();

/// Keeps the BLAS libraries single-threaded so they do not compete with the executor's pool:
/// OpenBLAS process-wide (`openblas_set_num_threads(1)`, once) and oneDNN's OpenMP runtime on
/// the calling thread (`omp_set_num_threads(1)`: OpenMP's thread count is per thread). Call it
/// on every thread that runs kernels. Idempotent and cheap (a thread-local flag after the first
/// call on a thread).
void limit_library_threads_to_one();

/// Which library computes float32 GEMMs (float64 always uses OpenBLAS: oneDNN's C API has no
/// dgemm). kAuto picks per shape class from measurements on the build machine
/// (docs/runtime.md): oneDNN except for tiny products, where OpenBLAS's lower call overhead wins.
enum class GemmBackend { kAuto, kOneDnn, kOpenBlas };

/// Process-wide GEMM backend (default kAuto); for benchmarks and tests.
void set_gemm_backend(GemmBackend backend);
[[nodiscard]] GemmBackend gemm_backend();

/// How the fast conv2d computes float32 convolutions. kOneDnn: oneDNN's convolution primitive
/// wherever the call is in the metakernel's own layout and oneDNN has a non-reference
/// implementation for it, else im2col + GEMM; kAuto: the same, but only for layers where it was
/// measured faster (≥ 16 input channels in the box and ≥ 64 output pixels; docs/runtime.md);
/// kIm2col: always im2col + GEMM (float64 always is).
enum class ConvBackend { kAuto, kOneDnn, kIm2col };

/// Process-wide conv2d backend (default kAuto); for benchmarks and tests.
void set_conv_backend(ConvBackend backend);
[[nodiscard]] ConvBackend conv_backend();

/// How often the fast kernels took a fast path and how often they handed a call to the
/// reference kernel; `fused_epilogues` counts fused calls run as GEMM + epilogue, `onednn_gemms`
/// the float32 GEMMs (of linear, matmul, conv2d's im2col, fused producers) oneDNN computed, and
/// `post_op_gemms` those of them whose bias and ReLU oneDNN applied as the matmul primitive's own
/// bias and post-op (no second pass over the output), `onednn_convs` the conv2d calls (or pieces
/// of calls) oneDNN's convolution primitive computed, and `half_native_calls` the calls with
/// bf16/f16 ports a fast kernel ran on the 16-bit cells themselves, with no float32 copies (the
/// elementwise maps and copies, softmax, mean and variance, conv2d on oneDNN's 16-bit
/// convolution; the 16-bit GEMMs count in half_gemm.h's own counter).
/// Process-wide, relaxed counters: exact when read after the kernels finished. For tests and
/// metrics.
struct FastKernelCounts {
  std::uint64_t fast_calls = 0;
  std::uint64_t fallback_calls = 0;
  std::uint64_t fused_epilogues = 0;
  std::uint64_t onednn_gemms = 0;
  std::uint64_t post_op_gemms = 0;
  std::uint64_t onednn_convs = 0;
  std::uint64_t half_native_calls = 0;
};
[[nodiscard]] FastKernelCounts fast_kernel_counts();
void reset_fast_kernel_counts();

/// The calling thread's fallback count, replaced by `value`; returns the previous count. The
/// block executor swaps in 0 before each kernel call and the previous count back after it, so
/// the count it takes is that call's fallbacks — also when a task runs nested inside another's
/// kernel on the same thread (its swap saves and restores the outer count). RunMetrics reports
/// them per operation (run_metrics.h).
std::uint64_t exchange_thread_fallbacks(std::uint64_t value);

}  // namespace tapestry::runtime
