// Comparing tensor values: what `tapestry run --verify` and the equivalence tests report.
//
// Two buffers are compared cell by cell over the same range. Bitwise equality is the bar for
// reference kernels without a reduction split (DESIGN.md §7); otherwise a tolerance on the
// differences applies:
//
//   abs diff   |a − b|
//   rel diff   |a − b| / max(|a|, |b|)   (0 when both are 0)
//
// NaN equals NaN only bitwise; a NaN on one side only makes the differences infinite.
//
//   BufferComparison c = compare_buffers(a, b);
//   c.bitwise_equal;  c.max_abs_diff;  c.max_rel_diff;  c.worst_point   // where max_abs_diff is
//   TensorsComparison all = compare_tensors(graph, naive_out, sharded_out);
//   all.all_bitwise_equal();  all.max_abs_diff();
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime {

struct BufferComparison {
  /// False when dtype or range differ; then nothing else is meaningful.
  bool comparable = false;
  bool bitwise_equal = false;
  std::int64_t cells = 0;
  /// Cells whose bits differ.
  std::int64_t differing_cells = 0;
  double max_abs_diff = 0;
  double max_rel_diff = 0;
  /// The cell with the largest absolute difference (when any differs).
  std::optional<Point> worst_point;

  /// Comparable, and every cell within `abs_tol` (max_abs_diff <= abs_tol) or every cell within
  /// `rel_tol` (max_rel_diff <= rel_tol). Bitwise-equal buffers are always within.
  [[nodiscard]] bool within(double abs_tol, double rel_tol) const;
  /// `bitwise equal` or `differs in 3 of 40 cells; max abs 1e-7 at (1, 2), max rel 2e-7`.
  [[nodiscard]] std::string summary() const;
};

/// The tensor point of the `linear`-th element (row-major) of `range`.
Point unravel(const Range& range, std::int64_t linear);

/// Compares two buffers cell by cell.
BufferComparison compare_buffers(const Buffer& a, const Buffer& b);

struct TensorComparison {
  ir::TensorId tensor;
  std::string name;
  /// Nullopt when one side has no buffer for the tensor.
  std::optional<BufferComparison> result;
};

struct TensorsComparison {
  std::vector<TensorComparison> tensors;

  [[nodiscard]] bool all_bitwise_equal() const;
  [[nodiscard]] bool all_within(double abs_tol, double rel_tol) const;
  [[nodiscard]] double max_abs_diff() const;
  [[nodiscard]] double max_rel_diff() const;
  /// One line per tensor: `Y: bitwise equal`.
  [[nodiscard]] std::string summary() const;
};

/// Compares the buffers of `tensors` (default: graph_outputs(graph)) in `a` and `b`.
TensorsComparison compare_tensors(const ir::Graph& graph, const BufferMap& a, const BufferMap& b,
                                  std::optional<std::vector<ir::TensorId>> tensors = {});

/// The tolerance `tapestry run --verify` holds results to when they cannot be bitwise equal (fast
/// kernels, or a reduction split, re-associate sums). A K-term sum computed in two orders differs
/// by at most ~2·K·ε·Σ|terms| (Higham, "Accuracy and Stability of Numerical Algorithms", §3.1);
/// errors of chained operations add up. So a cell passes when
///
///   |a − b| <= 4 · ε · K · M
///
/// where ε is the dtype's machine epsilon (2^-23 for float32, 2^-52 for float64), K the sum over
/// the graph's operations of their reduction length (Π of reduction-dim extents × the largest
/// input cell: `in` for linear, c·kh·kw for conv2d, the row for softmax), and M the largest
/// magnitude of any value of the naive run (at least 1), which bounds |terms|. Integer tensors
/// must be exact. Example: the MLP of examples/mlp.tap has K = 1024 + 4096.
struct VerifyTolerance {
  std::int64_t reduction_length = 0;  // K
  double magnitude = 1;               // M
  /// The absolute tolerance for `dtype` (0 for integers).
  [[nodiscard]] double abs_tol(DType dtype) const;
};

/// K and M (see VerifyTolerance) of `graph` and its naive run `naive` (every tensor's buffer).
VerifyTolerance verify_tolerance(const ir::Graph& graph, const BufferMap& naive);

}  // namespace tapestry::runtime
