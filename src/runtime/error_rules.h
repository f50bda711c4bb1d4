// Private to the oracle (oracle.h): one operation's float64 evaluation and its error rule.
//
// OperationEval runs one operation of the unsharded graph on float64 values and derives, by the
// rule of its kernel (the table in oracle.h), the two error scales of every output cell: sigma
// (propagated in quadrature) and the deterministic bound D (propagated linearly). Rules that are
// sums of products run the operation's own kernel on transformed inputs
// (|x|, σ², x²), so every magnitude is the cell's own: Σ|x_k·w_k| for that output cell.
#pragma once

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime::detail {

/// Cells per chunk of for_cells (float64: 128 KiB of each buffer a loop reads).
inline constexpr std::size_t kCellChunk = std::size_t{1} << 14;

/// Runs f(begin, end) over [0, n) in chunks of about `grain` items, on the threads of the
/// current oneTBB arena when there are several chunks. Every loop handed to it computes each
/// item from that item's inputs alone and writes that item's outputs only (no running sums), so
/// the result is the same bitwise on any number of threads and in any chunking — the oracle's
/// numbers do not depend on the machine (tests/runtime/oracle_test: one thread vs four).
template <typename F>
void for_cells(std::size_t n, const F& f, std::size_t grain = kCellChunk) {
  grain = std::max<std::size_t>(grain, 1);
  if (n <= grain) {
    if (n > 0) f(std::size_t{0}, n);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<std::size_t>(0, n, grain),
      [&f](const tbb::blocked_range<std::size_t>& r) { f(r.begin(), r.end()); },
      tbb::simple_partitioner());
}

/// One region of zeros that is never written: the exact inputs' σ and D borrow views of it
/// (float64). Untouched pages of a calloc'd region read as the kernel's zero page, so an input's
/// σ and D cost no memory and no zeroing, and a rule can tell such a buffer from others without
/// scanning it.
class SharedZeros {
 public:
  /// Room for `cells` float64 zeros (the largest view asked for must fit).
  explicit SharedZeros(std::int64_t cells);
  ~SharedZeros();
  SharedZeros(const SharedZeros&) = delete;
  SharedZeros& operator=(const SharedZeros&) = delete;

  /// A buffer of zeros over `range` (range.size() ≤ cells), borrowing the region: float64, or
  /// float32 (the float32 sums of OperationEval::bilinear).
  [[nodiscard]] Buffer view(const Range& range, DType dtype = DType::kFloat64) const;
  /// True when `b` is such a view.
  [[nodiscard]] bool holds(const Buffer& b) const;
  [[nodiscard]] std::int64_t cells() const { return cells_; }

 private:
  double* data_;
  std::int64_t cells_;
};

/// The σ and D buffers of tensors an operation reads for the last time (the caller frees them
/// after it), by tensor: a rule may write its outputs' σ and D over them instead of filling
/// fresh buffers, moving them into its result (RuleResult::taken).
using SpareBuffers = std::map<ir::TensorId, std::pair<Buffer*, Buffer*>>;

/// What one operation contributes to the oracle.
struct RuleResult {
  /// The operation's output tensors, in selection order, and their float64 values.
  std::vector<ir::TensorId> outputs;
  std::vector<Buffer> values;
  /// Per output: sigma and the deterministic bound D (float64, oracle.h) and the largest
  /// Σ|terms|. Empty for integer outputs (exact).
  std::vector<Buffer> sigmas;
  std::vector<Buffer> bounds;
  std::vector<double> magnitudes;
  /// False when the kernel rounds even on small integers (exp, softmax, div …): exact mode
  /// cannot hold.
  bool exact = true;
  /// The kernel, when it has no error model and the worst-case fallback was used.
  std::string unmodelled;
  /// Tensors whose spare σ and D (run's `spare`) became an output's: moved from.
  std::vector<ir::TensorId> taken;
};

/// Where OperationEval runs linear's, matmul's and conv2d's sums of nonnegative products in float32
/// (OracleOptions::single_precision_sums): never, where the kernel outweighs a pass over its
/// operands (≥ 64 multiply-adds per operand cell: the oracle's choice), or wherever the
/// operands' range allows (tests).
enum class SingleSums { kNever, kWherePays, kAlways };

/// One cell transform of an input entry (value, σ, D) ↦ a nonnegative number (|x|, σ², D …),
/// named for the buffers it makes.
struct CellTransform {
  enum class Of { kAbs, kSquare, kSigmaSquared, kBound, kAbsPlusBound, kNonzero };
  std::string_view kind;
  Of of;  // |x|, x², σ², D, |x| + D, 1 where the cell may be nonzero (else 0)
  bool of_sigma = false, of_bound = false;  // the cell's σ or D alone (a zero view stays one)
};

/// A float32 buffer ≥ a float64 one cell by cell (each rounded up), and the range of its cells:
/// an operand of the float32 sums (SingleSums).
struct Single {
  Buffer buffer;
  float lo = INFINITY;   // the smallest nonzero cell (∞: all zero)
  float hi = 0;          // the largest
  bool fits = true;      // every cell 0 or a finite normal float (no NaN, ∞, subnormal)
  bool integers = true;  // every cell an integer
};

/// The float32 transforms of the tensors that every block of an oracle chain reads whole (a
/// weight: oracle_chains.h), made by the first block that needs one and kept for the others:
/// rounding a 2048×512 weight for each of 8 blocks of 64 rows cost more than the float32 sums
/// saved, so they ran in float64. One per chain, for the chain's duration.
struct ChainSingles {
  /// The chain's blocks: a shared transform costs each block 1/blocks of a pass (the "pays"
  /// rule, SingleSums::kWherePays).
  std::int64_t blocks = 1;
  /// This block's tensors that are whole tensors made before the chain → the original tensor.
  std::map<ir::TensorId, ir::TensorId> whole;
  /// (transform kind, original tensor) → its float32 form.
  std::map<std::pair<std::string, ir::TensorId>, Single> made;
};

class OperationEval {
 public:
  /// `zeros`, when given, is the region the exact inputs' σ and D borrow: buffers in it are known
  /// to be 0 without a scan, and a zeroed operand is a view of it. `single_sums`: where linear's
  /// and matmul's sums of nonnegative terms run as float32 GEMMs rounded up (SingleSums).
  OperationEval(const ir::Graph& graph, ir::OperationId op, const ExecutableKernels& kernels,
                double lambda, const SharedZeros* zeros = nullptr,
                SingleSums single_sums = SingleSums::kNever, double product_roundoff = 0,
                ChainSingles* chain = nullptr);

  /// Evaluates the operation on `value` (every tensor it reads) and derives its outputs' sigma
  /// and bound from `sigma` and `bound` (every float tensor it reads), writing them over
  /// `spare` buffers where the rule can (elementwise: an output with its first input's cells).
  [[nodiscard]] RuleResult run(const BufferMap& value, const BufferMap& sigma,
                               const BufferMap& bound, const SpareBuffers& spare = {}) const;

 private:
  struct Ctx;
  /// Runs `kernel` on this operation with one buffer per input entry (selection order) and
  /// fresh, zeroed outputs of `dtype`; `params` replaces the operation's when given.
  [[nodiscard]] std::vector<Buffer> call(KernelFn kernel, const std::vector<const Buffer*>& inputs,
                                         DType dtype, const nlohmann::json* params = nullptr) const;

  /// A buffer made from input entry i (its value, σ, D), or the entry's own; made buffers are
  /// kept in the Ctx (each made once per operation) while the rule runs.
  using CellMap = std::function<const Buffer&(std::size_t)>;
  using CellPredicate = std::function<bool(double value, double sigma, double bound)>;

  /// min(λ·sigma, bound) cell by cell.
  [[nodiscard]] Buffer bar_of(const Buffer& sigma, const Buffer& bound) const;
  /// Input entry i as 1 where `pred` holds, else 0.
  [[nodiscard]] static CellMap flag(Ctx& c, CellPredicate pred);
  /// Buffer b is all zeros (a SharedZeros view, or scanned).
  [[nodiscard]] bool all_zero(const Buffer& b) const;
  [[nodiscard]] std::vector<Buffer> run_bilinear(const Ctx& c, int w, int bias, const CellMap& on_x,
                                                 const CellMap& on_w, bool zero_bias) const;
  /// bilinear's kernel run on nonnegative transforms (`tx` of x and the bias, `tw` of w) as a
  /// float32 GEMM on the transforms rounded up, its results scaled up so that each is ≥ what
  /// the float64 run gives; empty when the kernel or the operands' range does not allow it
  /// (then the float64 run). `count`: the transforms are 0/1 flags and the sums counts (exact).
  /// `factor`, when given: the float32 sums come back as they are and *factor is the scale that
  /// makes each ≥ the float64 one (double(sum)·factor), for a caller that reads them once.
  [[nodiscard]] std::optional<std::vector<Buffer>> run_single(Ctx& c, int w, int bias,
                                                              const CellTransform& tx,
                                                              const CellTransform& tw,
                                                              bool zero_bias, bool count,
                                                              double* factor = nullptr) const;
  /// linear's live-term counts (float32, exact) as row counts of the one operand that holds
  /// exact zeros, when the other holds none: no GEMM. Empty when that does not apply.
  [[nodiscard]] std::optional<std::vector<Buffer>> row_counts(const Ctx& c, int x, int w, int bias,
                                                              bool x_zeros, bool w_zeros) const;
  [[nodiscard]] std::vector<Buffer> bilinear_hazards(Ctx& c, int w, int bias) const;
  void bilinear(Ctx& c) const;
  void additive(Ctx& c, std::string_view twin) const;
  /// additive's rule for a binary add or sub whose operands each give one cell per index point
  /// (broadcasts included): the same numbers cell by cell in one pass, with no |x|, σ², D or
  /// live-flag buffers, σ and D written over an operand's spare ones where it allows. False (and
  /// nothing done) where the layout does not allow it.
  /// The float32 form of transform `t` on input entry i: made once per operation, or once per
  /// chain (chain_) for a tensor every block reads whole.
  const Single& single_of(Ctx& c, const CellTransform& t, std::size_t i) const;
  [[nodiscard]] bool binary_sum(Ctx& c) const;
  /// bilinear's rule for an elementwise mul the same way (binary_product).
  [[nodiscard]] bool binary_product(Ctx& c) const;
  template <bool kProduct>
  [[nodiscard]] bool binary_cells(Ctx& c) const;
  void product(Ctx& c) const;
  void selection(Ctx& c, bool negate) const;
  void elementwise(Ctx& c) const;
  /// autodiff's derivative kernels (gelu_grad, tanh_grad, sigmoid_grad, sqrt_grad: the
  /// cotangent times a function of the forward cell) and mul_scalar: both operands' errors.
  void derivative_product(Ctx& c, std::string_view kernel) const;
  void softmax(Ctx& c) const;
  void average(Ctx& c) const;
  void variance(Ctx& c) const;
  void move(Ctx& c) const;
  void index(Ctx& c) const;
  /// Comparisons and boolean logic (kernels/masks.yaml): 0/1 cells, exact or off by 1.
  void decision(Ctx& c) const;
  /// where(cond, a, b): the chosen branch's error, or both branches' where cond may flip.
  void choice(Ctx& c) const;
  /// relu_grad, maximum_grad_a/b: d_result where a comparison of the other inputs holds, else
  /// 0 — d_result's error, or |d_result| more where the comparison may flip.
  void gate(Ctx& c) const;
  void fallback(Ctx& c) const;
  static std::vector<Buffer> exact_integer_inputs(Ctx& c);
  struct BilinearFactors {
    int x = -1, w = -1, shape_only = -1;
  };
  static BilinearFactors bilinear_factors(const Ctx& c);

  const ir::Graph& graph_;
  ir::OperationId op_;
  const ExecutableKernels& kernels_;
  KernelFn kernel_;
  double lambda_;
  const SharedZeros* zeros_;
  SingleSums single_sums_;
  // float32 contractions whose operands the run rounded first (TF32: 2^-11), else 0.
  double product_roundoff_ = 0;
  ChainSingles* chain_ = nullptr;  // the float32 transforms an oracle chain's blocks share
  /// Terms combined into one output cell: Π reduction extents × the largest input window.
  double terms_ = 1;
};

}  // namespace tapestry::runtime::detail
