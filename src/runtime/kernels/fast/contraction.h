// Private: contractions (linear, matmul, the producer of a fused epilogue) as GEMMs on the views.
//
// A contraction over an index box computes, for every output cell,
//
//   C[cell(i)] = Σ_k A[cell_a(i, k)] · B[cell_b(i, k)]
//
// plan_contraction reads the layout from the ports' affine offsets (fast_support.h) instead of
// assuming the metakernels' index order. Index dims of extent > 1 are classified by which
// operands they move: the reduction k moves A and B but not C; an m dim moves A and C, an n dim
// B and C; anything else is a batch dim, looped over (one GEMM per batch point). Neighbouring m
// dims whose strides nest are merged (x [b0, b1, in] of a dense tensor is one M = b0·b1), k may
// instead be the cells' window (`in` inside the IPF shape). The GEMM is then
//
//   C[M×N] (row stride c_m, unit c_n)  =  A[M×K] · B[K×N]
//
// with each operand either row-major (unit column stride) or stored transposed (unit row
// stride) — linear's w [out, in] is B stored transposed — and no copies. When C's unit stride is
// along m instead, the product is computed as Cᵀ = Bᵀ·Aᵀ. Anything else (negative or
// non-unit strides, two reductions) has no plan and the caller uses the reference kernel.
//
// The epilogue: after the GEMM of a batch point, bias terms (a vector along n) and unary ops are
// applied, in order, row by row while each block of rows is in cache; a leading bias [and ReLU]
// inside oneDNN's matmul primitive where it computes them as the epilogue would (float). Every
// batch point is one GEMM call whatever the epilogue, so a fused chain (fused.cpp) makes the
// same GEMM calls on the same blocks as its unfused producer. (GEMMs over blocks of 64 rows, to
// run the epilogue while each is in L1/L2, were slower: a 512×1024×1024 linear ⇒ relu dropped
// from ~200 to ~140 GFLOP/s in bench/kernels_bench, every call re-packing all of W.)
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "elementwise_ops.h"
#include "fast_support.h"
#include "gemm.h"

namespace tapestry::runtime::fast {

template <typename T>
struct ContractionPlan {
  const T* a = nullptr;  // the element of A, B, C at the index box's first point
  const T* b = nullptr;
  T* c = nullptr;
  std::int64_t m = 1, n = 1, k = 1;  // C is m×n, summed over k (k may be 0)
  std::int64_t a_m = 0, a_k = 0, b_k = 0, b_n = 0, c_m = 0, c_n = 0;  // element strides
  Nest<3> batch;             // one GEMM per batch point: offsets of A, B, C
  int n_dim = -1;            // the index dim that is n (−1: n = 1)
  std::vector<bool> spread;  // index dims of extent > 1
  bool swapped = false;      // computed as Cᵀ = Bᵀ·Aᵀ (C's unit stride is along m)
  GemmArgs args;             // the oriented GEMM (valid when k > 0)
};

/// The plan for contraction ports a (A), b (B) and c (C) over the non-empty box `index`, or
/// nullopt when no copy-free GEMM computes it.
template <typename T>
std::optional<ContractionPlan<T>> plan_contraction(const Range& index, const InputPort& a,
                                                   const InputPort& b, const OutputPort& c);

/// One epilogue step: C += bias (a vector along n: element j at base[j·step]) or C = op(C).
template <typename T>
struct EpilogueStep {
  const T* bias = nullptr;  // null: a unary step
  std::int64_t step = 0;
  UnaryOp op = UnaryOp::kRelu;
};

/// The bias step for `port` (one element per index point, read over the same index box as the
/// plan), or nullopt when the bias moves along anything but n.
template <typename T>
std::optional<EpilogueStep<T>> bias_step(const ContractionPlan<T>& plan, const Range& index,
                                         const InputPort& port);

/// Runs the plan: one GEMM per batch point, then the epilogue steps in order on its rows.
template <typename T>
void run_contraction(const ContractionPlan<T>& plan, const std::vector<EpilogueStep<T>>& steps);

/// The epilogue steps, in order, on the plan's m×n block of C at `c` (rows c_m apart, columns
/// c_n): what run_contraction does after each GEMM (float or double).
template <typename T>
void apply_epilogue(const ContractionPlan<T>& plan, T* c, std::span<const EpilogueStep<T>> steps);

/// The 16-bit contraction (half_contraction.cpp): bfloat16 or float16 A, B, C and biases, one
/// oneDNN 16-bit matmul per batch point accumulating in float32, the epilogue in float32 and
/// C rounded once. False, nothing written, when oneDNN does not implement it on this CPU (or
/// the backend is OpenBLAS, or k is 0): the caller widens.
template <typename H>
bool run_half_contraction(const ContractionPlan<H>& plan,
                          const std::vector<EpilogueStep<H>>& steps);

}  // namespace tapestry::runtime::fast
