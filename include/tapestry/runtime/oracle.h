// The float64 oracle: what a graph computes, in float64, with an error bar for every cell.
//
// `tapestry run --verify` and `tapestry verify` judge a result by comparing it with this oracle.
// The oracle runs the *unsharded* graph once, operation by operation, on the float64 promotion
// of the inputs (float inputs are exact in float64), and carries for every float cell three
// numbers:
//
//   value   the cell's value in float64 (error ~1e-16 relative: the "truth" for a float32 graph)
//   sigma   a probabilistic scale of the error a float computation of this cell may carry, in
//           any summation order, with any kernel set and any plan (split reductions, fusion,
//           decomposition): independent error sources added in quadrature
//   bound   D, the deterministic worst case of the same error: every source added linearly
//
// A computed cell c passes when |c − value| ≤ bar = min(λ·sigma, D) (λ = OracleOptions::lambda,
// default 8). Integer cells have no bar: they must be exact.
//
// ## Exact cells, infinities and NaN
//
// A cell with sigma = D = 0 is *exact*: every computation gives its value. Graph inputs are exact
// — including ±inf and NaN: a mask's −inf is a certain value, not an infinite error. A cell whose
// float64 value is ±inf or NaN is a class, not a number: sigma = D = 0 says every computation
// gives that same infinity (or NaN), and the verifier demands exactly that; sigma = D = ∞ says
// the class is not known. Every rule derives both from the cells it reads, and:
//
//   * terms that are exact zeros contribute nothing: no error, no rounding (x + 0 of a mask's
//     live cells is exact; a product term with an exact-zero factor is not counted in n);
//   * an infinity stays certain through sums, products, maxima, matmuls and the unary kernels
//     unless it meets a cell of unknown error, or a factor whose bar reaches 0 (inf·0 is NaN);
//   * softmax sums its inputs' errors weighted by y (Σ_j y_j·Δx_j, not the row's largest Δx),
//     so a masked score (−inf, or −1e9 off by 60) adds nothing; a masked weight is an exact 0;
//   * a max (min) bounds the interval the computed max can lie in, so cells that cannot be
//     selected (a −1e9 score) do not widen it.
//
// The bar of every cell whose true value is finite is then finite — but for a denominator that
// may be 0, a sqrt near 0, an input of unknown error: such cells are *unchecked*, and an output
// with unchecked cells is UNCHECKED, not PASS (verify.h).
//
// ## How sigma and D are derived (docs/runtime.md, "How --verify decides")
//
// Rounding errors are modelled as Higham & Mary do ("A New Approach to Probabilistic Rounding
// Error Analysis", SIAM J. Sci. Comput. 41(5), 2019): independent, mean zero, bounded by u (the
// unit roundoff, 2^-24 for float32). For an inner product of n terms they prove
//
//   |ŝ − s| ≤ λ·√n·u·Σ|x_i·y_i|   with probability ≥ 1 − 2·exp(−λ²(1−u)²/2)
//
// (λ = 8: 2.5e-14 per cell, so a 4M-cell output fails by chance with probability < 1e-7). More
// generally (Hoeffding), independent mean-zero errors e_i with |e_i| ≤ b_i sum to within
// λ·√(Σ b_i²) with the same probability: sigma is √(Σ b_i²) over every error source of the cell
// — each operation's roundings (proxy √n·u·A for n roundings over terms of magnitude A) and the
// errors carried in by its inputs, propagated to first order. The deterministic worst case adds
// the same sources linearly: D = Σ b_i, with γ_n·A = n·u·A/(1 − n·u) for n roundings (Higham,
// "Accuracy and Stability", §3.1). λ·sigma is the smaller for long sums (n > λ² = 64 terms),
// D for short chains of few roundings: an add after a mul is off by up to u·|a·b| + u·|a·b + c|,
// more than λ·√((u·|a·b|/λ)² + (u·|a·b + c|/λ)²) would allow, so neither channel alone is right.
//
//   operation                    sigma² (σ, quadrature)  |  D (linear)  of a result cell
//   ─────────────────────────── ───────────────────────────────────────────────────────────────
//   linear, matmul, conv2d, mul  Σ σx²·w² + x²·σw² (+σbias²) + (√n·u·A)²  |  Σ Dx·(|w| + Dw) +
//                                |x|·Dw (+Dbias) + γn·A;  A = Σ|x||w| (+|bias|), n its terms
//                                that may be nonzero (no exact-zero factor); for linear,
//                                matmul and conv2d, A, the Σ terms and n in float32 rounded up
//                                (OracleOptions::single_precision_sums): never below these
//   add, sub, bias_add, sum,     Σ σ² + (√n·u·A)²  |  Σ D + γn·A;  A = Σ|terms|, n additions
//     reduce (sum)               of terms that may be nonzero (x + exact 0 is exact)
//   reduce (prod) of n factors   (K(|x| + σx) − P) ⊕ √(n−1)·u·P  |  K(|x| + Dx) − P + γ(n−1)·P;
//                                P = Π|x| (K: the kernel; the first term bounds propagation)
//   max, min, maximum, reduce    max(K(x + λσ) − M, M − K(x − λσ))/λ  |  max(K(x + D) − M,
//     (max, min), max_pool2d     M − K(x − D)): the interval the computed max (min) lies in,
//                                M = K(x); at most the largest σ (D) of the combined cells
//   mean, avg_pool2d (n cells)   K(σ) ⊕ √(n+1)·u·A  |  K(D) + γ(n+1)·A;  A = Σ|x|/n, K the
//                                kernel (linear: K(σ) = Σσ/n bounds √(Σσ²)/n)
//   variance (row of n)          (2/n)·√Σ(d_j·σ_j)² + 4σmax² ⊕ √(n+3)·u·v  |  (2/n)·Σ|d_j|·D_j
//                                + 4·Dmax² + γ(n+3)·v;  d_j = x_j − mean (+ the mean's error²)
//   relu                         σx  |  Dx where x > −e, else 0 (the cell is 0 for sure)
//   neg, transpose, permute,     σ and D move with the data (pad cells: 0; gather: by its
//     reshape, slice, pad,       exact integer indices — indices that may be wrong, an argmax
//     gather                     near a tie, leave every cell unknown)
//   exp, tanh, sigmoid, gelu,    s·σx ⊕ k  |  s·Dx + k;  s = max |f′| over [x − e, x + e],
//     sqrt                       k = 8·u·|f(x)| (+ 4·u·|x| for gelu: ½x·(1 + erf) cancels at
//                                x < 0); an exact ±inf input gives the exact limit (exp(−inf) = 0)
//   div                          σa/m ⊕ |a/b|·σb/m ⊕ u·|a/b|  |  (Da + |a/b|·Db)/m + u·|a/b|;
//                                m = |b| − e_b (unbounded where m ≤ 0)
//   pow (q = a^b)                max|q′ − q|/λ ⊕ k  |  max|q′ − q| + k over q′ = a′^b′ on the
//                                box a ± λσa, b ± λσb (a ± Da, b ± Db): its extremes are at the
//                                corners; k = 8·u·|q|; unknown where the box reaches a pole, a
//                                NaN (a negative base, an inexact exponent) or an overflow
//   argmax, argmin (int64)       in positions: max |r − i*| over the cells r that may be the
//                                computed extremum with every cell in [x − Δ, x + Δ] (Δ = λσ,
//                                then D; σ = that / λ): 0 where the extremum stands apart, so
//                                a wrong index fails; a certain NaN wins (as numpy's)
//   softmax (row of n)           y_i·(S_i·Δx_i + Σ_{j≠i} c_j) + u·y_i·(|x_i − max| + 3) + sum:
//                                √n·u·y_i  |  (n − 1)·u·y_i;  S_i = Σ_{j≠i} y_j, c_j = y_j·Δx_j,
//                                or e^(x_j − max + Δx_j) where y_j = 0 in float64 (masked); n
//                                the terms ≠ 0; y_i = 0: e^(x_i − max + e_i + e_argmax), 0
//                                (exact) where that underflows. Rows with a Δx over 2^−16: the
//                                exact worst case over |δx_j| ≤ Δx_j for the first term
//                                (error_rules.cpp SoftmaxRow: first order fails at Δ ~ 1)
//   equal, less, less_equal,     0 (exact) where the decision is certain: both operands exact,
//     greater, greater_equal,    or |a − b| > e_a + e_b (logic: each operand's truth certain,
//     logical_and/or/xor/not     |x| > e_x or exact, or one that settles the result); else 1
//                                (σ = max(1, 1/λ), D = 1): a mask cell is off by 1 at most
//   where(c, a, b)               c certain: the chosen branch's σ, D; else |a − b|/λ + max σ  |
//                                |a − b| + max D (a = b: max σ, max D; a ±inf against a finite
//                                branch: unknown)
//   anything else (fused, user   a worst-case bound D = σ: 4·u·K·max|finite inputs| + the
//     kernels)                   largest bar of the inputs, reported as "no error model"
//
// where e = min(λσx, Dx) is the bar of the input x, ⊕ adds in quadrature, and Δ stands for σ or
// D. Each rounding term also carries n·tiny (the dtype's smallest normal number) so that
// flushing subnormals to zero stays within the bar. Every Σ|x||w|, Σ σ²·w² and Σ D·|w| is
// computed by the operation's own kernel run on |x|, |w| (or σ², w², D) — so the magnitudes are
// local to each cell, never a global maximum. A result that is ±inf or NaN gets σ = D = 0 where
// its class is certain, ∞ where not (above).
//
// A cell whose bar is not finite is *unchecked*: the comparison counts it, and the output's
// verdict is UNCHECKED rather than a silent PASS.
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
//   Oracle o = evaluate_oracle(graph, inputs);             // the outputs' value, sigma, D
//   const Buffer& y = o.value.at(find_tensor(graph, "Y"));  // float64
//   o.exact_reason                                         // empty: exact mode applies
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime {

/// The wall seconds one operation took in the oracle (OracleOptions::seconds).
struct OperationSeconds {
  std::string operation;  // its display name
  std::string kernel;
  double seconds = 0;
};

struct OracleOptions {
  /// The confidence factor of the probabilistic bar (see the file comment).
  double lambda = 8;
  /// The kernels the oracle runs in float64. The fast set (OpenBLAS dgemm) makes the oracle of
  /// a 70-GFLOP graph take seconds; the reference set is the slow definition of meaning.
  const ExecutableKernels* kernels = nullptr;  // null: the fast kernels
  /// Keep every tensor's value, sigma and bound. By default the oracle streams: an input is
  /// promoted when an operation first reads it, and every tensor is freed after its last reader,
  /// so `value`, `sigma` and `bound` hold the graph outputs only (the same numbers either way).
  bool keep_all = false;
  /// Chains of operations cut along one dim that every one of them takes one-to-one (a linear,
  /// its relu and the next linear, by rows; convolutions by images) run a block at a time when
  /// the tensors the chain makes and reads again hold at least this many cells: those tensors
  /// are then never whole, only a block of each (src/runtime/oracle_chains.h). 0: every such
  /// chain; negative: none (each operation whole). The numbers are the same bitwise on any
  /// thread count and with keep_all; a cell's sums may come in another order than without the
  /// chain, which every bound allows.
  std::int64_t chain_cells = std::int64_t{1} << 20;
  /// linear's, matmul's and conv2d's error terms that are sums of nonnegative products —
  /// Σ|x||w|, the propagated σ² and D, the count of live terms — as float32 GEMMs (conv2d: its
  /// float32 kernel, a direct convolution or im2col + GEMM: plain sums) on operands rounded up,
  /// each result scaled by (1 + γ53(n)) / (1 − γ24(n)), n the terms + 2: never below the float64
  /// GEMM's number, ~n·2^−24 above it (counts are exact below 2^24). Operands outside float32's
  /// safe range (a product under 2^−125, a sum over 2^124, ∞, NaN) or n ≥ 2^22 take float64,
  /// and so do kernels of under 64 multiply-adds per operand cell (rounding the operands would
  /// cost more than float32 saves). False: every term in float64 (tests compare the two).
  bool single_precision_sums = true;
  /// The run computed float32 linear, matmul and conv2d products on TF32 tensor cores (a GPU
  /// run with --tf32): each operand rounded to 10 mantissa bits first (u_t = 2^-11), so each
  /// cell's bar grows by (2u_t + u_t²)·Σ|x·w| in both σ and D. Other dtypes are unaffected.
  bool tf32_products = false;
  /// When set, the oracle hands every graph output to this function instead of keeping it:
  /// `value` (float64, or the integer tensor's own dtype), `sigma` and `bound` (float64; null for
  /// integer outputs) over the cells `value.range()` — a block of the output that a chain made
  /// (oracle_chains.h), never whole then, or all of it — each cell once, the buffers valid during
  /// the call only. The Oracle's value, sigma and bound then hold no output (with keep_all: every
  /// tensor, the outputs included). verify.h judges the outputs so, a block at a time.
  std::function<void(ir::TensorId tensor, const Buffer& value, const Buffer* sigma,
                     const Buffer* bound)>
      output_sink;
  /// When set, the wall seconds each operation's value and error rule took are added to it, in
  /// the order the operations first ran (a chain's blocks summed per operation): where a
  /// verification spends its time (`tapestry run --verify --metrics`: "verify").
  std::vector<OperationSeconds>* seconds = nullptr;
};

struct Oracle {
  /// Every output's value (every tensor's with OracleOptions::keep_all): float tensors promoted
  /// to float64, integer tensors as they are.
  BufferMap value;
  /// The same tensors' sigma and deterministic bound D when they are float (float64, same
  /// range); integer tensors have none (exact).
  BufferMap sigma;
  BufferMap bound;
  /// The most bytes `value`, `sigma` and `bound` held at once during the evaluation, with a
  /// chain's blocks (OracleOptions::chain_cells; the rules' temporaries not included): a few
  /// live tensors when streaming, the whole graph ×3 with keep_all.
  std::int64_t peak_bytes = 0;
  /// The largest Σ|terms| any cell of the tensor was summed from (|value| for data movement):
  /// a bound on every partial sum of any order, so exact mode holds while it is < 2^24.
  std::map<ir::TensorId, double> magnitude;
  /// Tensors whose sigma comes from the worst-case fallback, with the kernel that had no model.
  std::map<ir::TensorId, std::string> unmodelled;
  /// Empty when exact mode holds for these inputs; else why not ("operation 'S' (softmax) is
  /// not exact", "sums in 'Y' reach 2^25 > 2^24").
  std::string exact_reason;
  double lambda = 8;

  /// The bar of every cell of float tensor `t`: min(λ·sigma, bound).
  [[nodiscard]] Buffer bar(ir::TensorId t) const;
};

/// Runs the oracle on `graph` (unsharded: its applications are ignored) with `inputs` (every
/// graph input, bound to the graph). Error on the same grounds as NaiveExecutor.
Oracle evaluate_oracle(const ir::Graph& graph, const BufferMap& inputs,
                       const OracleOptions& options = {});

}  // namespace tapestry::runtime
