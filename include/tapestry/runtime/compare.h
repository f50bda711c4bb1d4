// Comparing tensor values: what `tapestry run --verify` and the equivalence tests report.
//
// Two buffers are compared cell by cell over the same range. Bitwise equality is the bar for
// reference kernels without a reduction split; otherwise verify.h judges each cell against its
// own error bar, and these differences are what the reports print next to the verdict:
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

}  // namespace tapestry::runtime
