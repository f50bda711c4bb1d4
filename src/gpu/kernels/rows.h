// The device kernels that read whole rows: the reductions (sum, max, reduce), mean and variance,
// and softmax. Plain C++ launch descriptions (nvcc and the host compiler include this header);
// rows_kernels.cpp builds them from KernelCalls, rows.cu runs them.
//
// Every launch has an *outer* loop (one output cell, or one softmax row, per outer point: extents
// and element steps of each port, as in pointwise.h) and an *inner* one along the row:
//
//   fold       result[o] = x[o, r0] ∘ x[o, r1] ∘ …   r over the reduced index dims, row-major and
//              ascending — the CPU's order, one thread per output cell, so sums are bitwise the
//              CPU's (float32 accumulates in float32, 16-bit floats widened to it); the first
//              element starts the fold (sum_to: 0 does), an empty one gives the monoid's identity
//   average    the fold's elements summed in float64, ascending, divided by their count and
//              rounded once (avg_pool2d); max_pool2d is the max fold over the window
//   mean       result[o] = Σ_j x[o, j] / n in float64 (f64 compensated), rounded once; the CPU's
//   variance   row_mean / row_variance (two passes), one thread per row, so bitwise the CPU's
//   softmax    one block per row: the max (exact, any order), the terms e^(x − m) with the CPU's
//              formulas (scalar_math.h), their sum in float64 (f64: compensated) in a tree order
//              instead of the CPU's 8 lanes, each result rounded once — within an ulp of the CPU
#pragma once

#include <cstdint>

#include "pointwise.h"

namespace tapestry::gpu::kernels {

inline constexpr int kMaxInner = 4;

enum class RowOp : std::int32_t { kSum, kProd, kMax, kMin, kAverage, kMean, kVariance, kSoftmax };

struct RowsLaunch {
  RowOp op = RowOp::kSum;
  ElemType type = ElemType::kF32;
  int outer_rank = 0;
  std::int64_t outer_extent[kMaxRank] = {};
  std::int64_t x_outer[kMaxRank] = {};    // x's element steps along the outer dims
  std::int64_t out_outer[kMaxRank] = {};  // the result's
  int inner_rank = 0;                     // fold: the reduced dims; else 1 (the row)
  std::int64_t inner_extent[kMaxInner] = {};
  std::int64_t x_inner[kMaxInner] = {};
  std::int64_t out_inner = 0;  // softmax: the result's step along the row
  bool from_identity = false;  // fold: start from the identity (sum_to: 0 + x₀ + …), not x₀
  const void* x = nullptr;     // x's cell at the first outer point, first inner point
  void* out = nullptr;
};

/// True when rows.cu has `op` for `type` (mean, variance and softmax: floats only).
bool rows_supports(RowOp op, ElemType type);

/// Enqueues the launch on `stream` (a cudaStream_t); returns 0 or the cudaError_t.
int launch_rows(const RowsLaunch& launch, void* stream);

}  // namespace tapestry::gpu::kernels
