// The float64 oracle: what a graph computes, in float64, with an error bar for every cell.
//
// `tapestry run --verify` and `tapestry verify` judge a result by comparing it with this oracle.
// The oracle runs the *unsharded* graph once, operation by operation, on the float64 promotion
// of the inputs (float inputs are exact in float64), and carries for every float cell two
// numbers:
//
//   value   the cell's value in float64 (error ~1e-16 relative: the "truth" for a float32 graph)
//   sigma   a scale of the error a float computation of this cell may carry, in any summation
//           order, with any kernel set and any plan (split reductions, fusion, decomposition)
//
// A computed cell c passes when |c − value| ≤ λ·sigma (λ = OracleOptions::lambda, default 8).
// Integer cells have sigma 0: they must be exact.
//
// ## How sigma is derived (docs/runtime.md, "How --verify decides")
//
// Rounding errors are modelled as Higham & Mary do ("A New Approach to Probabilistic Rounding
// Error Analysis", SIAM J. Sci. Comput. 41(5), 2019): independent, mean zero, bounded by u (the
// unit roundoff, 2^-24 for float32). For an inner product of n terms they prove
//
//   |ŝ − s| ≤ λ·√n·u·Σ|x_i·y_i|   with probability ≥ 1 − 2·exp(−λ²(1−u)²/2)
//
// (λ = 8: 2.5e-14 per cell, so a 4M-cell output fails by chance with probability < 1e-7). The
// deterministic worst case is n·u·Σ|x_i·y_i| (Higham, "Accuracy and Stability", §3.1); the bar
// uses the smaller, min(√n, n/λ)·λ. Each operation adds its own rounding to the error carried
// in by its inputs, which is propagated to first order through the operation:
//
//   operation                    sigma of a result cell (σ² summed over independent sources)
//   ─────────────────────────── ───────────────────────────────────────────────────────────────
//   linear, matmul, conv2d, mul  rounding u·r(n)·Σ|x||w| (+|bias|), n = the cell's terms;
//                                propagated Σ σx²·w² + x²·σw² (+σbias²)
//   add, sub, bias_add, sum,     rounding u·r(n)·Σ|terms|; propagated Σ σ²
//     reduce (sum)
//   max, min, maximum, reduce    the largest σ among the combined cells (max/min are exact)
//     (max, min)
//   relu                         σx where x > −λσx, else 0 (the cell is 0 for sure)
//   neg, transpose, permute,     σ moves with the data (pad cells: 0)
//     reshape, pad
//   exp, tanh, sigmoid, gelu     max |f′| over [x − λσx, x + λσx] · σx + c_f·u·|f(x)|
//   div                          |1/b|·σa ⊕ |a/b²|·σb ⊕ u·|a/b|  (unbounded where |b| ≤ λσb)
//   softmax (row of n)           y_i·(σx_i + max_row σx) + u·y_i·(3 + r(n)) + u·y_i·|x_i − max|
//   anything else (fused, user   a worst-case bar: 4·u·K·max|inputs| + max σ of the inputs,
//     kernels, reduce prod)      reported as "no error model"
//
// where r(n) = min(√n, n/λ) and ⊕ adds in quadrature. Each rounding term also carries n·tiny
// (the dtype's smallest normal number) so that flushing subnormals to zero stays within the bar.
// Every Σ|x||w| and Σ σ²·w² is computed by the operation's own kernel run on |x|, |w| (or σ², w²)
// — so the magnitudes are local to each cell, never a global maximum.
//
// A cell whose sigma is not finite (an infinite or NaN input, a denominator within λσ of 0) is
// *unchecked*: the comparison counts it and says so rather than passing it silently.
//
// ## Exact mode
//
// When every float input holds a small integer ({-1, 0, 1}: GenerateOptions::exact) and every
// operation only adds, multiplies and selects, every partial sum of every order is an integer;
// while its magnitude stays below 2^24 (float32; 2^53 float64) it is exactly representable and
// *every* summation order gives the same value. `exactness` checks both conditions (the largest
// partial sum is bounded by the Σ|terms| the oracle computes anyway), and then results must
// equal the oracle's value exactly, with the fast kernels and split reductions alike.
//
//   Oracle o = evaluate_oracle(graph, inputs);             // every tensor's value and sigma
//   const Buffer& y = o.value.at(find_tensor(graph, "Y"));  // float64
//   o.exact_reason                                         // empty: exact mode applies
#pragma once

#include <map>
#include <string>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/kernel_registry.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime {

struct OracleOptions {
  /// The confidence factor of the probabilistic bar (see the file comment).
  double lambda = 8;
  /// The kernels the oracle runs in float64. The fast set (OpenBLAS dgemm) makes the oracle of
  /// a 70-GFLOP graph take seconds; the reference set is the slow definition of meaning.
  const KernelRegistry* kernels = nullptr;  // null: the fast kernels
};

struct Oracle {
  /// Every tensor's value: float tensors promoted to float64, integer tensors as they are.
  BufferMap value;
  /// Every float tensor's sigma (float64, same range); integer tensors have none (exact).
  BufferMap sigma;
  /// The largest Σ|terms| any cell of the tensor was summed from (|value| for data movement):
  /// a bound on every partial sum of any order, so exact mode holds while it is < 2^24.
  std::map<ir::TensorId, double> magnitude;
  /// Tensors whose sigma comes from the worst-case fallback, with the kernel that had no model.
  std::map<ir::TensorId, std::string> unmodelled;
  /// Empty when exact mode holds for these inputs; else why not ("operation 'S' (softmax) is
  /// not exact", "sums in 'Y' reach 2^25 > 2^24").
  std::string exact_reason;
  double lambda = 8;
};

/// Runs the oracle on `graph` (unsharded: its applications are ignored) with `inputs` (every
/// graph input, bound to the graph). Error on the same grounds as NaiveExecutor.
Oracle evaluate_oracle(const ir::Graph& graph, const BufferMap& inputs,
                       const OracleOptions& options = {});

}  // namespace tapestry::runtime
