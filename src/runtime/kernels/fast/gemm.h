// Private: one dense row-major GEMM through oneDNN or OpenBLAS, chosen per shape class.
//
//   C[M×N] = op(A)·op(B) + beta·C     op(X) = X, or Xᵀ when the matrix is stored transposed
//
// All matrices are row-major with leading dimensions (element stride between rows as stored);
// `trans_a` means A is stored as K×M (op(A) = stored Aᵀ), `trans_b` that B is stored as N×K — the
// layout of linear's weights, so x·wᵀ needs no copy. Single precision goes to oneDNN's
// dnnl_sgemm or OpenBLAS's cblas_sgemm (gemm_backend(), fast_kernels.h); double precision to
// cblas_dgemm (oneDNN has no dgemm). The caller guarantees M, N, K ≥ 1, every leading dimension
// ≥ the stored row length, and that all of them fit the libraries' 32-bit integers (see
// fits_blas).
#pragma once

#include <cstdint>

#include "tapestry/runtime/fast_kernels.h"

namespace tapestry::runtime::fast {

struct GemmArgs {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
};

/// True when every size and leading dimension fits a 32-bit BLAS integer.
bool fits_blas(const GemmArgs& args);

/// The library kAuto picks for a float32 product of this shape (kOneDnn or kOpenBlas).
GemmBackend auto_backend(std::int64_t m, std::int64_t n, std::int64_t k);

/// Counts one GEMM run by oneDNN (FastKernelCounts::onednn_gemms; fast_registry.cpp).
void count_onednn_gemm();

/// C = op(A)·op(B) + beta·C with the current backend (float or double).
void gemm(const GemmArgs& args, const float* a, const float* b, float beta, float* c);

/// C = op(A)·op(B) [+ bias] [then ReLU] in one oneDNN `matmul` primitive: the bias (n
/// contiguous floats, added to every row; null for none) and the ReLU (an eltwise post-op) are
/// applied to each block of C while it is in registers, instead of a second pass over C. The
/// primitive is made once per shape and thread and kept (a thread-local cache; making one costs
/// ~0.1 ms, running a cached one a few µs). Returns false — C untouched — when the backend for
/// this shape is not oneDNN or oneDNN refuses the problem; the caller then runs gemm() and its
/// own epilogue. Counts one oneDNN GEMM and one post-op call when it runs.
bool gemm_with_post_ops(const GemmArgs& args, const float* a, const float* b, const float* bias,
                        bool relu, float* c);

/// Counts one contraction whose epilogue ran inside the GEMM (FastKernelCounts::post_op_gemms).
void count_post_op_gemm();
void gemm(const GemmArgs& args, const double* a, const double* b, double beta, double* c);

}  // namespace tapestry::runtime::fast
