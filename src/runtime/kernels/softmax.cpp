// Reference softmax over the last dim (kernels/softmax.yaml).
//
// Softmax needs a whole row at once, so the metakernel gives the input and output cells a
// window covering the last dim (`*`); the index holds the other dims. For each index point, and
// each row of its window along the last dim:
//
//   m = max_j x_j;   e_j = exp(x_j − m);   s = Σ_j e_j;   result_j = e_j / s
//
// (the sum in lanes combined in a fixed tree).
//
// Subtracting the maximum keeps exp from overflowing; it does not change the result. The row
// itself is scalar_ops.h's softmax_row (each dtype in its own precision, the sum compensated),
// shared with the fast kernel.
#include <vector>

#include <fmt/format.h>

#include "kernel_support.h"
#include "reference_kernels.h"
#include "scalar_ops.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

constexpr std::string_view kX = "x";
constexpr std::string_view kResult = "result";

template <typename T>
void softmax(const KernelCall& call) {
  const Operand<const T> x(call.input(kX));
  const Operand<T> result(call.output(kResult));
  if (x.window() != result.window()) {
    call.fail(fmt::format("x cells {} and result cells {} differ", x.window(), result.window()));
  }
  if (x.rank() == 0) call.fail("x must have rank >= 1");
  const std::size_t axis = x.rank() - 1;
  const Range line_starts = Range::of_shape(x.window().with(axis, 1));
  const std::int64_t n = x.window(axis);
  if (n == 0) return;
  std::vector<T> scratch;
  for (const Point& p : call.index.points()) {
    const T* xs = x.cell(p);
    T* rs = result.cell(p);
    for (const Point& w : line_starts.points()) {
      std::int64_t ox = 0, orr = 0;
      for (std::size_t k = 0; k < w.rank(); ++k) {
        ox += w[k] * x.stride(k);
        orr += w[k] * result.stride(k);
      }
      kernels::scalar::softmax_row(xs + ox, x.stride(axis), rs + orr, result.stride(axis), n,
                                   scratch);
    }
  }
}

void softmax_kernel(const KernelCall& call) {
  const DType dtype = kernels::common_dtype(call);
  kernels::require_float(call, dtype);
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T>) softmax<T>(call);
  });
}

}  // namespace

void register_softmax_kernels(ExecutableKernels& registry) {
  registry.add("softmax", &softmax_kernel);
}

}  // namespace tapestry::runtime
