// Private to the oracle (oracle.h): one operation's float64 evaluation and its error rule.
//
// OperationEval runs one operation of the unsharded graph on float64 values and derives, by the
// rule of its kernel (the table in oracle.h), the two error scales of every output cell: sigma
// (propagated in quadrature) and the deterministic bound D (propagated linearly). Rules that are
// sums of products run the operation's own kernel on transformed inputs
// (|x|, σ², x²), so every magnitude is the cell's own: Σ|x_k·w_k| for that output cell.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime::detail {

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
};

class OperationEval {
 public:
  OperationEval(const ir::Graph& graph, ir::OperationId op, const ExecutableKernels& kernels,
                double lambda);

  /// Evaluates the operation on `value` (every tensor it reads) and derives its outputs' sigma
  /// and bound from `sigma` and `bound` (every float tensor it reads).
  [[nodiscard]] RuleResult run(const BufferMap& value, const BufferMap& sigma,
                               const BufferMap& bound) const;

 private:
  struct Ctx;
  /// Runs `kernel` on this operation with one buffer per input entry (selection order) and
  /// fresh, zeroed outputs of `dtype`; `params` replaces the operation's when given.
  [[nodiscard]] std::vector<Buffer> call(KernelFn kernel, const std::vector<const Buffer*>& inputs,
                                         DType dtype, const nlohmann::json* params = nullptr) const;

  /// A buffer made from input entry i (its value, σ, D).
  using CellMap = std::function<Buffer(std::size_t)>;
  using CellPredicate = std::function<bool(double value, double sigma, double bound)>;

  /// min(λ·sigma, bound) cell by cell.
  [[nodiscard]] Buffer bar_of(const Buffer& sigma, const Buffer& bound) const;
  /// Input entry i as 1 where `pred` holds, else 0.
  [[nodiscard]] static CellMap flag(const Ctx& c, CellPredicate pred);
  [[nodiscard]] std::vector<Buffer> run_bilinear(const Ctx& c, int w, int bias, const CellMap& on_x,
                                                 const CellMap& on_w, bool zero_bias) const;
  [[nodiscard]] std::vector<Buffer> bilinear_hazards(const Ctx& c, int w, int bias) const;
  void bilinear(Ctx& c) const;
  void additive(Ctx& c, std::string_view twin) const;
  void product(Ctx& c) const;
  void selection(Ctx& c, bool negate) const;
  void elementwise(Ctx& c) const;
  void softmax(Ctx& c) const;
  void average(Ctx& c) const;
  void variance(Ctx& c) const;
  void move(Ctx& c) const;
  void fallback(Ctx& c) const;

  const ir::Graph& graph_;
  ir::OperationId op_;
  const ExecutableKernels& kernels_;
  KernelFn kernel_;
  double lambda_;
  /// Terms combined into one output cell: Π reduction extents × the largest input window.
  double terms_ = 1;
};

}  // namespace tapestry::runtime::detail
