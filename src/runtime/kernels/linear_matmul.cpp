// Reference contraction kernels: linear (X·Wᵀ + b), linear_nobias (X·Wᵀ) and batched matmul.
//
// Both reduce over `in` (k). The metakernels may make the reduced dimension an index dim (unit
// cells, one product per index point) or leave it inside the cells (an IPF window covering
// k); the kernels handle both the same way: for each output cell, visit its index points in
// ascending order and, inside each, the window along k in ascending order. The products are
// therefore always summed in ascending k, starting from the first, and the bias is added last:
//
//   result[b, o] = ((x[b,0]·w[o,0] + x[b,1]·w[o,1]) + …) + bias[o]
#include <fmt/format.h>

#include "kernel_support.h"
#include "reference_kernels.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

constexpr std::string_view kX = "x";
constexpr std::string_view kW = "w";
constexpr std::string_view kBias = "bias";
constexpr std::string_view kA = "a";
constexpr std::string_view kB = "b";
constexpr std::string_view kResult = "result";

// Fails unless the cell window of `port` is 1 in every dim but `dim`; returns its extent there.
template <typename Port>
std::int64_t window_along(const KernelCall& call, const Port& port, std::size_t dim,
                          std::string_view name) {
  const Point& shape = port.ipf->shape();
  for (std::size_t k = 0; k < shape.rank(); ++k) {
    if (k != dim && shape[k] != 1) {
      call.fail(fmt::format("{} has cells of shape {}; expected a window along dim {} only", name,
                            shape, dim));
    }
  }
  return shape[dim];
}

// The contraction loop of both kernels: for each output cell, in row-major order, the products
// over the reduced index dims in ascending order and, inside each index point's cell, along the
// window in ascending order — for_each_output_cell's order. When the only reduced dim is the
// last index dim (as the metakernels declare it), the points of one output cell differ only in
// that dim, so the cells are walked with Operand::step instead of being located one by one:
// the same products in the same order, ~10× faster (this is the oracle `--verify` runs).
template <typename T, typename Finish>
void contract(const KernelCall& call, const Operand<const T>& a, std::int64_t sa,
              const Operand<const T>& b, std::int64_t sb, std::int64_t window, Finish&& finish) {
  kernels::Fold<T> acc(ir::Monoid::kSum);
  const std::vector<std::size_t> reduced = call.reduced_dims();
  const std::size_t rank = call.index.rank();
  if (reduced.size() == 1 && reduced[0] + 1 == rank && !call.index.is_empty()) {
    const std::size_t k = rank - 1;
    const std::int64_t n = call.index.extent(k);
    const std::int64_t step_a = a.step(k), step_b = b.step(k);
    const Range outer = call.index.with_dim(k, call.index.start()[k], call.index.start()[k] + 1);
    for (const Point& q : outer.points()) {
      const T* as = a.cell(q);
      const T* bs = b.cell(q);
      acc.reset();
      for (std::int64_t i = 0; i < n; ++i, as += step_a, bs += step_b) {
        for (std::int64_t t = 0; t < window; ++t) acc.add(kernels::mul(as[t * sa], bs[t * sb]));
      }
      finish(q, acc.result());
    }
    return;
  }
  kernels::for_each_output_cell(
      call.index, reduced, [&](const Point&) { acc.reset(); },
      [&](const Point& p) {
        const T* as = a.cell(p);
        const T* bs = b.cell(p);
        for (std::int64_t t = 0; t < window; ++t) acc.add(kernels::mul(as[t * sa], bs[t * sb]));
      },
      [&](const Point& q) { finish(q, acc.result()); });
}

template <typename T>
void linear(const KernelCall& call) {
  const InputPort& xp = call.input(kX);
  const InputPort& wp = call.input(kW);
  const InputPort* bp = call.find_input(kBias);
  const Operand<const T> x(xp), w(wp);
  const Operand<T> result(call.output(kResult));
  kernels::require_unit_cells(call, call.output(kResult), kResult);
  if (bp != nullptr) kernels::require_unit_cells(call, *bp, kBias);
  const std::int64_t k = window_along(call, xp, x.rank() - 1, kX);
  if (window_along(call, wp, 1, kW) != k) call.fail("x and w cells differ along in");
  const std::int64_t sx = x.stride(x.rank() - 1), sw = w.stride(1);
  std::optional<Operand<const T>> bias;
  if (bp != nullptr) bias.emplace(*bp);

  contract<T>(call, x, sx, w, sw, k, [&](const Point& q, T value) {
    if (bias) value = kernels::add(value, *bias->cell(q));
    *result.cell(q) = value;
  });
}

// matmul(a, b): a [batch…, m, k] · b [batch…, k, n] -> [batch…, m, n], batch dims broadcast
// through the IPFs.
template <typename T>
void matmul(const KernelCall& call) {
  const InputPort& ap = call.input(kA);
  const InputPort& bp = call.input(kB);
  const Operand<const T> a(ap), b(bp);
  const Operand<T> result(call.output(kResult));
  if (a.rank() < 2 || b.rank() < 2) call.fail("operands must have rank >= 2");
  kernels::require_unit_cells(call, call.output(kResult), kResult);
  const std::int64_t k = window_along(call, ap, a.rank() - 1, kA);
  if (window_along(call, bp, b.rank() - 2, kB) != k) call.fail("a and b cells differ along k");
  const std::int64_t sa = a.stride(a.rank() - 1), sb = b.stride(b.rank() - 2);

  contract<T>(call, a, sa, b, sb, k, [&](const Point& q, T value) { *result.cell(q) = value; });
}

void linear_kernel(const KernelCall& call) {
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() { linear<T>(call); });
}

void matmul_kernel(const KernelCall& call) {
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() { matmul<T>(call); });
}

}  // namespace

void register_linear_matmul_kernels(ExecutableKernels& registry) {
  registry.add("linear", &linear_kernel);
  registry.add("linear_nobias", &linear_kernel);  // the same body: `bias` is optional there
  registry.add("matmul", &matmul_kernel);
}

}  // namespace tapestry::runtime
