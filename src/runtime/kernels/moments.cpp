// Reference mean and variance over one dim, kept with extent 1 (kernels/reductions.yaml).
//
// Like softmax, each index point reads whole rows: x's cell is a window covering the reduced dim
// (`*`), the result's cell has extent 1 there and equals x's window elsewhere. For each index
// point and each row of its window along the reduced dim `dim`:
//
//   mean      Σ_j x_j / n
//   variance  Σ_j (x_j − mean)² / n          (two passes; the population variance)
//
// evaluated in float64 by scalar_ops.h's row_mean / row_variance (shared with the fast kernels)
// and rounded once to the tensor's dtype.
#include <fmt/format.h>

#include "kernel_support.h"
#include "reference_kernels.h"
#include "scalar_ops.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

constexpr std::string_view kX = "x";
constexpr std::string_view kResult = "result";

// The `dim` param (normalised by the metakernel to 0..rank-1).
std::size_t reduced_axis(const KernelCall& call, std::size_t rank) {
  if (call.params == nullptr || !call.params->is_object() || !call.params->contains("dim") ||
      !call.params->at("dim").is_number_integer()) {
    call.fail("param 'dim' is missing");
  }
  const std::int64_t dim = call.params->at("dim").get<std::int64_t>();
  if (dim < 0 || static_cast<std::size_t>(dim) >= rank) {
    call.fail(fmt::format("param 'dim' {} is not an axis of a rank-{} tensor", dim, rank));
  }
  return static_cast<std::size_t>(dim);
}

template <typename T, typename RowFn>
void moment(const KernelCall& call, RowFn row) {
  const Operand<const T> x(call.input(kX));
  const Operand<T> result(call.output(kResult));
  const std::size_t axis = reduced_axis(call, x.rank());
  if (result.rank() != x.rank() || result.window() != x.window().with(axis, 1)) {
    call.fail(fmt::format("x cells {} and result cells {} do not pair up along dim {}", x.window(),
                          result.window(), axis));
  }
  const std::int64_t n = x.window(axis);
  if (n == 0) call.fail("the reduced dim is empty");
  const Range row_starts = Range::of_shape(result.window());
  for (const Point& p : call.index.points()) {
    const T* xs = x.cell(p);
    T* rs = result.cell(p);
    for (const Point& w : row_starts.points()) {
      std::int64_t ox = 0, orr = 0;
      for (std::size_t k = 0; k < w.rank(); ++k) {
        ox += w[k] * x.stride(k);
        orr += w[k] * result.stride(k);
      }
      rs[orr] = static_cast<T>(row(xs + ox, x.stride(axis), n));
    }
  }
}

template <bool kVariance>
void moment_kernel(const KernelCall& call) {
  const DType dtype = kernels::common_dtype(call);
  kernels::require_float(call, dtype);
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T>) {
      moment<T>(call, [](const T* x, std::int64_t sx, std::int64_t n) {
        return kVariance ? kernels::scalar::row_variance(x, sx, n)
                         : kernels::scalar::row_mean(x, sx, n);
      });
    }
  });
}

}  // namespace

void register_moment_kernels(ExecutableKernels& registry) {
  registry.add("mean", &moment_kernel<false>);
  registry.add("variance", &moment_kernel<true>);
}

}  // namespace tapestry::runtime
