// Where a kernel call's cells are, as device kernels need it: the host-side half of every launch.
//
// runtime::Operand locates the cell of index point i as origin + offset0 + Σ_j coef_j·i_j
// (kernel.h), with coef_j = Σ_k stride_k·A_kj and offset0 = Σ_k stride_k·(b_k − box.start_k) from
// the port's IPF (A, b) and view (box, strides). A device kernel must not dereference the origin
// on the host, so the host computes the same numbers once per call and passes them as launch
// parameters, relative to the index box's first point:
//
//   cell(i) = origin + base + Σ_j coef_j·(i_j − index.start_j)        (in elements)
//   base    = offset0 + Σ_j coef_j·index.start_j
//
// For example x [4, 6] (strides 6, 1) under transpose's IPF (rows {0, 1}, {1, 0}) over the index
// box [1:3, 2:5]: coef = (1, 6), base = 1·1 + 6·2 = 13 (the first point (1, 2) reads x[2, 1]).
//
// `collapse` then prepares the pointwise engine's loop (pointwise.h): it drops index dims of
// extent 1 and merges neighbouring dims j, j+1 wherever every port steps through them as through
// one dim (coef_j = coef_{j+1}·extent_{j+1}), so a contiguous box of any rank is one dim.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tapestry/runtime/kernel.h"

namespace tapestry::gpu::kernels {

struct PortLayout {
  std::int64_t base = 0;           // elements from the view's origin to the first point's cell
  std::vector<std::int64_t> coef;  // element step per index dim
};

/// The layout of `port` over the index box `index` (the IPF's input rank must be index.rank()).
PortLayout port_layout(const runtime::InputPort& port, const runtime::Range& index);
PortLayout port_layout(const runtime::OutputPort& port, const runtime::Range& index);

/// The loop over an index box after collapsing (see the file comment): extents, outermost first,
/// and for each port its element steps along them.
struct LoopNest {
  std::vector<std::int64_t> extent;
  std::vector<std::vector<std::int64_t>> coef;  // [port][dim]
  /// Number of index points (1 for a nest of rank 0).
  [[nodiscard]] std::int64_t points() const;
};

/// Collapses `index` for `ports` (their layouts over `index`).
LoopNest collapse(const runtime::Range& index, std::span<const PortLayout> ports);

/// True when every cell of `port`'s IPF is a single element (window all ones).
bool has_unit_cells(const zspace::IndexProjection& ipf);

}  // namespace tapestry::gpu::kernels
