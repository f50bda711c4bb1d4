// The host-side plan of a device GEMM (gemm_kernels.h): a linear/linear_nobias/matmul call as the
// column-major, possibly batched product cuBLASLt computes. Plain C++ without CUDA: the planning
// is tested on the host (tests/gpu/gemm_plan_test.cpp runs each plan on host memory with plain
// loops and compares with the reference kernel).
//
//   Gemm g = *plan_gemm(call);                 // C[M, N] = A[M, K]·B[K, N] (+ bias), steps per dim
//   ColumnMajorGemm p = *column_major_gemm(g); // D[m', n'] = op(A')·op(B'), cuBLASLt's layouts
//
// With C row-major (step 1 along n) p computes Cᵀ = Bᵀ·Aᵀ (swapped): D's rows are C's columns,
// so a bias along n runs along D's rows, as CUBLASLT_EPILOGUE_BIAS adds it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "port_layout.h"
#include "tapestry/runtime/kernel.h"

namespace tapestry::gpu::kernels {

// One batch dim of the GEMM: its extent and the element steps of A, B and C along it.
struct BatchDim {
  std::int64_t extent = 1, a = 0, b = 0, c = 0;
};

// C[M, N] = A[M, K]·B[K, N] (+ bias[N]) with element steps along every dim; see the file comment
// of gemm_kernels.h.
struct Gemm {
  std::int64_t m = 1, n = 1, k = 1;
  std::int64_t a_m = 0, a_k = 0, b_k = 0, b_n = 0, c_m = 0, c_n = 0, bias_n = 0;
  std::vector<BatchDim> batch;  // outermost first
  const runtime::InputPort* a = nullptr;
  const runtime::InputPort* b = nullptr;
  const runtime::OutputPort* c = nullptr;
  const runtime::InputPort* bias = nullptr;
  PortLayout la, lb, lc, lbias;
  std::size_t k_dim = 0;  // the index dim of the reduction
};

// A stored matrix as cuBLASLt sees it: column-major rows × cols with leading dimension ld,
// transposed (op T) or not.
struct MatrixLayout {
  bool trans = false;
  std::int64_t rows = 0, cols = 0, ld = 0;
};

// The column-major problem D[m', n'] = A'·B' of a Gemm: with C row-major (c_n = 1) it computes
// Cᵀ = Bᵀ·Aᵀ, so that the bias along n lies along D's rows.
struct ColumnMajorGemm {
  bool swapped = false;
  std::int64_t m = 0, n = 0, k = 0;
  MatrixLayout a, b, d;
  const runtime::InputPort* pa = nullptr;
  const runtime::InputPort* pb = nullptr;
  const PortLayout* la = nullptr;
  const PortLayout* lb = nullptr;
  // Element steps of A', B' and D along each batch dim.
  std::vector<std::array<std::int64_t, 4>> batch;  // extent, a', b', d
};

/// The GEMM of `call` (kernel linear, linear_nobias, matmul or linear_grad_w), or nullopt when its
/// IPFs, cells or dtypes do not make one.
std::optional<Gemm> plan_gemm(const runtime::KernelCall& call);

/// The column-major problem of `g`, or nullopt when an operand has no unit step along either of
/// its dims (or the output is not column-major either way). Holds pointers into `g`.
std::optional<ColumnMajorGemm> column_major_gemm(const Gemm& g);

/// Batch dims: the innermost goes to cuBLASLt as a strided batch when no operand is broadcast
/// along it (step 0); the others are looped on the host, at most kMaxGemmLoop GEMM calls.
inline constexpr std::int64_t kMaxGemmLoop = 4096;

/// The number of cuBLASLt calls `p` takes (the looped batch points).
std::int64_t looped_calls(const ColumnMajorGemm& p);

/// True when the batch dim `i` of `p` (the innermost) goes to cuBLASLt as a strided batch.
bool is_strided_batch(const ColumnMajorGemm& p, std::size_t i);

}  // namespace tapestry::gpu::kernels
