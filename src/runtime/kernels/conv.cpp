// Reference 2-D convolution, NCHW (cross-correlation, as in every deep-learning framework):
//
//   result[n, o, y, x] = Σ_{c, i, j} x[n, c, s·y + i, s·x + j] · w[o, c, i, j]
//
// The stride s lives in x's IPF (row `$oh * stride : $kh`, kernels/conv.yaml), so neighbouring
// windows overlap when s < kh and the kernel never computes a coordinate itself: the window of x
// an index point reads starts at IPF_x(point).start. The index is [n, o, oh, ow, c] with c a sum
// reduction and (kh, kw) windows; the kernel accepts any split of (c, i, j) between index dims
// and windows. Each output cell sums its index points in ascending order (ascending c) and,
// inside each, the window (c, i, j) row-major. No bias; padding is a separate `pad` operation.
//
// grouped_conv2d is the same body: its index [n, g, og, oh, ow, cg] reaches x's channel
// g·cg + ci and w's filter g·og + f through its IPFs, so each index point's cells are conv2d's
// (1, 1, kh, kw) windows and the loop above never sees the group. conv3d too: its cells are
// (1, 1, kd, kh, kw) windows, the loop runs over (c, h, i, j). dilated_conv2d/3d: the taps are
// index dims (reductions) and the cells single elements, so each output cell sums its index
// points in ascending (c, i, j) order.
#include <fmt/format.h>

#include "kernel_support.h"
#include "reference_kernels.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

constexpr std::string_view kX = "x";
constexpr std::string_view kW = "w";
constexpr std::string_view kResult = "result";

// The (c, i, j) window both operands' cells must share (conv3d: (c, h, i, j)); fails otherwise.
Point shared_window(const KernelCall& call, const InputPort& x, const InputPort& w) {
  const Point& xw = x.ipf->shape();
  const Point& ww = w.ipf->shape();
  const std::size_t rank = xw.rank();
  if ((rank != 4 && rank != 5) || ww.rank() != rank)
    call.fail("x and w must have rank 4 (NCHW, OIHW) or 5 (NCDHW, OIDHW)");
  const Point window = xw.slice(1, rank);
  if (xw[0] != 1 || ww[0] != 1 || ww.slice(1, rank) != window) {
    call.fail(fmt::format("x cells {} and w cells {} do not pair up as (1, c, kh, kw)", xw, ww));
  }
  return window;
}

template <typename T>
void conv2d(const KernelCall& call) {
  const InputPort& xp = call.input(kX);
  const InputPort& wp = call.input(kW);
  kernels::require_unit_cells(call, call.output(kResult), kResult);
  const Range window = Range::of_shape(shared_window(call, xp, wp));
  const Operand<const T> x(xp), w(wp);
  const Operand<T> result(call.output(kResult));
  const std::size_t rank = window.rank() + 1;
  const Point xs = x.view().strides().slice(1, rank);
  const Point ws = w.view().strides().slice(1, rank);

  kernels::Fold<T> acc(ir::Monoid::kSum);
  kernels::for_each_output_cell(
      call.index, call.reduced_dims(), [&](const Point&) { acc.reset(); },
      [&](const Point& p) {
        const T* xc = x.cell(p);
        const T* wc = w.cell(p);
        for (const Point& cij : window.points()) {
          std::int64_t ox = 0, ow = 0;
          for (std::size_t k = 0; k + 1 < rank; ++k) {
            ox += cij[k] * xs[k];
            ow += cij[k] * ws[k];
          }
          acc.add(kernels::mul(xc[ox], wc[ow]));
        }
      },
      [&](const Point& q) { *result.cell(q) = acc.result(); });
}

void conv2d_kernel(const KernelCall& call) {
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() { conv2d<T>(call); });
}

}  // namespace

void register_conv_kernels(ExecutableKernels& registry) {
  registry.add("conv2d", &conv2d_kernel);
  registry.add("grouped_conv2d", &conv2d_kernel);  // the group offsets live in the IPFs
  registry.add("conv3d", &conv2d_kernel);          // a (c, kd, kh, kw) window
  // Dilated filters: every tap an index point (cells 1 × 1), summed in index order.
  registry.add("dilated_conv2d", &conv2d_kernel);
  registry.add("dilated_conv3d", &conv2d_kernel);
}

}  // namespace tapestry::runtime
