// GraphRoles (rewrite module: the pipeline rewrite reads it too; cost/graph_roles.h re-exports it
// into tapestry::cost): what each dimension of an operation graph is for — which index dims carry
// the batch (what data parallelism cuts), which inputs are weights, which operations contract —
// read from the IPFs alone. The standard plans (standard_plans.h) and explain's strategy line
// (explain.h) both stand on it.
//
// Follows. A tensor dim *follows* the index dim with the largest positive coefficient in its IPF
// row — the only one for most kernels; for reshape's merged row 128·d0 + d1, d0: cutting that
// index dim cuts the tensor dim into contiguous blocks. A row with no positive coefficient (a
// broadcast operand's dim) follows nothing.
//
// Activations and weights. An operation *carries* an input's dim 0 when it reads it through an
// index dim that is not a reduction and that dim 0 of its first output follows too (linear's x:
// batch → result dim 0; relu's x). A graph input is an *activation* when readers carry its dim 0,
// one after the other, into a contraction's result dim 0 (X through relu into linear's x); in a
// graph where no input reaches a contraction so, every input some operation carries. Every
// other graph input is a *weight* (linear's w and bias: their dim 0 follows `out`, result dim 1;
// a broadcast scale follows nothing; a training step's parameters and optimizer moments, whose
// updates carry dim 0 into no contraction). A tensor is *weight-derived* when it depends on no
// activation (transpose(W)).
//
// Batch-like dims, in topological order:
//   * dim 0 of every activation is batch-like;
//   * an index dim of an operation is batch-like when a batch-like dim of a tensor it reads
//     follows it;
//   * a dim of a tensor an operation writes is batch-like when it follows a batch-like index dim.
// So the sample dim survives reshapes: transformer_block.tap's X is [512 rows = 4 sequences ×
// 128 tokens, 512]; Q/linear's `batch` (512) is batch-like, Q/reshape's index is [d0 4, d1 128,
// d2 8, d3 64] with x's row 0 = 128·d0 + d1, which follows d0: d0 (the sequence) is batch-like,
// d1 (the position in it) is not, nor are the heads d2; Scores/matmul's batch0 follows.
//
// Contractions are the operations whose FLOPs are products summed over a reduction: matmul,
// linear, linear_nobias, conv2d, and a fused operation with such a stage. The strategy of a plan
// is what it does to them (explain.h).
//
//   GraphRoles roles = graph_roles(graph);      // an operation graph or a lowered one
//   const OperationRoles& op = roles.operations[*roles.find("Y/linear")];
//   op.batch                                    // {true, false, false}: batch, out, in
//   roles.is_weight(w)                          // true
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"

namespace tapestry::rewrite {

/// One port of an operation: its tensor, and for each tensor dim the index dim it follows.
struct PortRoles {
  std::string name;  // the port ("x", "w", "result")
  ir::TensorId tensor;
  std::vector<std::optional<std::size_t>> follows;
};

/// The ports of a selection map with, for each tensor dim, the index dim it follows through its
/// IPF (`ipfs`, in port order): the one with the largest positive coefficient in the dim's row
/// (the only one for most kernels; for a reshape's merged dim h·64 + d, h), none when no
/// coefficient is positive. The search's plan space reads the same (search/plan_space.h).
std::vector<PortRoles> port_roles(const ir::SelectionMap& selections, const ir::IpfMap& ipfs);

struct OperationRoles {
  ir::OperationId id;
  std::string name;  // as plans name it (rewrite::operation_name)
  std::string kernel;
  std::vector<std::string> dims;  // index dim names
  std::vector<std::int64_t> extents;
  std::vector<std::optional<ir::Monoid>> reductions;  // per index dim: its monoid, if a reduction
  std::vector<bool> batch;                            // per index dim: batch-like
  std::vector<PortRoles> inputs;                      // in (name, position) order
  std::vector<PortRoles> outputs;
  bool contraction = false;

  [[nodiscard]] std::optional<std::size_t> dim(std::string_view name) const;
  /// The first batch-like index dim that is not a reduction.
  [[nodiscard]] std::optional<std::size_t> batch_dim() const;
  /// The first batch-like index dim that is a reduction: the sample sum of a weight gradient
  /// (linear_grad_w's batch, sum_to's) or of a loss — cut, it is a Partial(sum) over the
  /// batch split, combined by an all-reduce.
  [[nodiscard]] std::optional<std::size_t> batch_reduction_dim() const;
};

class GraphRoles {
 public:
  /// Every operation, in topological order.
  std::vector<OperationRoles> operations;

  /// The operation plans name `name`.
  [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const;
  /// The position of `op` in operations.
  [[nodiscard]] std::optional<std::size_t> position(ir::OperationId op) const;
  /// Per dim of tensor `t`: batch-like (empty for a tensor no operation touches).
  [[nodiscard]] const std::vector<bool>& batch_dims(ir::TensorId t) const;
  /// A graph input that is not an activation, or a tensor computed from such inputs only.
  [[nodiscard]] bool is_weight(ir::TensorId t) const;
  /// A graph input that is an activation.
  [[nodiscard]] bool is_activation(ir::TensorId t) const;

 private:
  friend GraphRoles graph_roles(const ir::Graph& graph);
  std::vector<std::size_t> position_;  // by node index; npos when not an operation
  std::vector<std::vector<bool>> tensor_batch_;
  std::vector<std::uint8_t> depends_on_activation_;  // by node index
  std::vector<std::uint8_t> activation_;             // by node index
};

/// The roles of `graph`'s operations and tensors (above). The graph must be acyclic (asserted:
/// graphs are validated before anything asks).
GraphRoles graph_roles(const ir::Graph& graph);

/// Whether `kernel` is a contraction kernel (matmul, linear, linear_nobias, conv2d).
bool is_contraction_kernel(std::string_view kernel);

}  // namespace tapestry::rewrite
