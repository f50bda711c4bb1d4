// Reference 2-d pooling, NCHW (kernels/pool.yaml):
//
//   max_pool2d  result[n, c, y, x] = max_{i,j} x[n, c, s·y + i, s·x + j]
//   avg_pool2d  result[n, c, y, x] = Σ_{i,j} x[n, c, s·y + i, s·x + j] / k²
//
// As for conv2d, the stride lives in x's IPF: the window an index point reads starts at
// IPF_x(point).start, so the kernel never computes a coordinate. The window is x's cell (k × k
// in the last two dims, 1 elsewhere); the result has one element per index point. max follows
// scalar::Maximum (NaN propagates); avg sums in float64, row-major, and rounds once.
#include <fmt/format.h>

#include "kernel_support.h"
#include "reference_kernels.h"
#include "scalar_ops.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

constexpr std::string_view kX = "x";
constexpr std::string_view kResult = "result";

template <typename T, bool kAverage>
void pool(const KernelCall& call) {
  const Operand<const T> x(call.input(kX));
  const Operand<T> result(call.output(kResult));
  kernels::require_unit_cells(call, call.output(kResult), kResult);
  const Point& window = x.window();
  if (window.rank() != 4 || window[0] != 1 || window[1] != 1) {
    call.fail(fmt::format("x cells {} are not (1, 1, kh, kw) windows", window));
  }
  const std::int64_t kh = window[2], kw = window[3];
  const std::int64_t sh = x.stride(2), sw = x.stride(3);
  const kernels::scalar::Maximum maximum;
  for (const Point& p : call.index.points()) {
    const T* xs = x.cell(p);
    if constexpr (kAverage) {
      double sum = 0;
      for (std::int64_t i = 0; i < kh; ++i) {
        for (std::int64_t j = 0; j < kw; ++j) sum += static_cast<double>(xs[i * sh + j * sw]);
      }
      *result.cell(p) = static_cast<T>(sum / static_cast<double>(kh * kw));
    } else {
      if (kh == 0 || kw == 0) call.fail("empty pooling window");
      T m = xs[0];
      for (std::int64_t i = 0; i < kh; ++i) {
        for (std::int64_t j = 0; j < kw; ++j) m = maximum(m, xs[i * sh + j * sw]);
      }
      *result.cell(p) = m;
    }
  }
}

template <bool kAverage>
void pool_kernel(const KernelCall& call) {
  const DType dtype = kernels::common_dtype(call);
  if (kAverage) kernels::require_float(call, dtype);
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (!kAverage || kernels::kIsFloat<T>) pool<T, kAverage>(call);
  });
}

}  // namespace

void register_pool_kernels(ExecutableKernels& registry) {
  registry.add("max_pool2d", &pool_kernel<false>);
  registry.add("avg_pool2d", &pool_kernel<true>);
  // Non-square windows and strides: the loops above read kh, kw and the strides from the cells.
  registry.add("max_pool2d_rect", &pool_kernel<false>);
  registry.add("avg_pool2d_rect", &pool_kernel<true>);
}

}  // namespace tapestry::runtime
