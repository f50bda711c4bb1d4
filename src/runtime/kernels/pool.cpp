// Reference 2-d pooling, NCHW (kernels/pool.yaml):
//
//   max_pool2d  result[n, c, y, x] = max_{i,j} x[n, c, s·y + i, s·x + j]
//   avg_pool2d  result[n, c, y, x] = Σ_{i,j} x[n, c, s·y + i, s·x + j] / k²
//
// As for conv2d, the stride lives in x's IPF: the window an index point reads starts at
// IPF_x(point).start, so the kernel never computes a coordinate. The window is x's cell (kh × kw
// in the last two dims, 1 elsewhere; max_pool3d / avg_pool3d: kd × kh × kw in the last three); the
// result has one element per index point. max follows scalar::Maximum (NaN propagates); avg sums in
// float64, row-major, and rounds once.
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
  const std::size_t rank = window.rank();
  if ((rank != 4 && rank != 5) || window[0] != 1 || window[1] != 1) {
    call.fail(
        fmt::format("x cells {} are not (1, 1, kh, kw) or (1, 1, kd, kh, kw) windows", window));
  }
  // A 2-d window is a 3-d one of depth 1.
  const std::int64_t kd = rank == 5 ? window[2] : 1, kh = window[rank - 2], kw = window[rank - 1];
  const std::int64_t sd = rank == 5 ? x.stride(2) : 0, sh = x.stride(rank - 2),
                     sw = x.stride(rank - 1);
  if (kd == 0 || kh == 0 || kw == 0) call.fail("empty pooling window");
  const kernels::scalar::Maximum maximum;
  for (const Point& p : call.index.points()) {
    const T* xs = x.cell(p);
    if constexpr (kAverage) {
      double sum = 0;
      for (std::int64_t h = 0; h < kd; ++h) {
        for (std::int64_t i = 0; i < kh; ++i) {
          for (std::int64_t j = 0; j < kw; ++j) {
            sum += static_cast<double>(xs[h * sd + i * sh + j * sw]);
          }
        }
      }
      *result.cell(p) = static_cast<T>(sum / static_cast<double>(kd * kh * kw));
    } else {
      T m = xs[0];
      for (std::int64_t h = 0; h < kd; ++h) {
        for (std::int64_t i = 0; i < kh; ++i) {
          for (std::int64_t j = 0; j < kw; ++j) m = maximum(m, xs[h * sd + i * sh + j * sw]);
        }
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
  registry.add("max_pool3d", &pool_kernel<false>);  // (1, 1, kd, kh, kw) windows
  registry.add("avg_pool3d", &pool_kernel<true>);
}

}  // namespace tapestry::runtime
