// Fast 2-d and 3-d pooling, NCHW / NCDHW (kernels/pool.yaml): the index box as a loop nest over
// raw pointers (fast_support.h), the window of each output element read through x's strides.
//
// The per-element arithmetic is the reference kernel's: scalar::Maximum for max (NaN
// propagates), a float64 sum in the same row-major order for avg, rounded once; so the results
// are bitwise equal to the reference kernel's. Mixed dtypes and unexpected cells run the
// reference kernel.
#include "fast_support.h"

#include "../kernel_support.h"
#include "../scalar_ops.h"

namespace tapestry::runtime::fast {

namespace {

template <typename T, bool kAverage>
bool pool(const KernelCall& call) {
  auto xl = call.inputs.list("x");
  auto rl = call.outputs.list("result");
  if (xl.size() != 1 || rl.size() != 1 || call.inputs.size() != 1 || call.outputs.size() != 1) {
    return false;
  }
  const InputPort& x = xl[0];
  const OutputPort& r = rl[0];
  const Point& window = x.ipf->shape();
  const std::size_t rank = window.rank();
  if ((rank != 4 && rank != 5) || window[0] != 1 || window[1] != 1 || !has_unit_cells(*r.ipf)) {
    return false;
  }
  // A 2-d window is a 3-d one of depth 1.
  const std::int64_t kd = rank == 5 ? window[2] : 1, kh = window[rank - 2], kw = window[rank - 1];
  if (kd == 0 || kh == 0 || kw == 0) return false;
  const std::int64_t sd = rank == 5 ? x.view.stride(2) : 0, sh = x.view.stride(rank - 2),
                     sw = x.view.stride(rank - 1);
  const Strided<const T> xs = strided<const T>(x, call.index);
  const Strided<T> rs = strided<T>(r, call.index);
  const Nest<2> nest = make_nest<2>(call.index, {&xs.coef, &rs.coef});
  const kernels::scalar::Maximum maximum;
  const double cells = static_cast<double>(kd * kh * kw);
  for_each_run(nest, [&](const auto& at, std::int64_t len, const auto& stride) {
    for (std::int64_t e = 0; e < len; ++e) {
      const T* w = xs.base + at[0] + e * stride[0];
      T* out = rs.base + at[1] + e * stride[1];
      if constexpr (kAverage) {
        double sum = 0;
        for (std::int64_t h = 0; h < kd; ++h) {
          for (std::int64_t i = 0; i < kh; ++i) {
            for (std::int64_t j = 0; j < kw; ++j) {
              sum += static_cast<double>(w[h * sd + i * sh + j * sw]);
            }
          }
        }
        *out = static_cast<T>(sum / cells);
      } else {
        T m = w[0];
        for (std::int64_t h = 0; h < kd; ++h) {
          for (std::int64_t i = 0; i < kh; ++i) {
            for (std::int64_t j = 0; j < kw; ++j) m = maximum(m, w[h * sd + i * sh + j * sw]);
          }
        }
        *out = m;
      }
    }
  });
  return true;
}

template <bool kAverage>
void pool_kernel(const KernelCall& call) {
  const std::optional<DType> dtype = uniform_dtype(call);
  bool done = false;
  if (dtype && !call.index.is_empty()) {
    if (*dtype == DType::kFloat32) done = pool<float, kAverage>(call);
    if (*dtype == DType::kFloat64) done = pool<double, kAverage>(call);
  }
  if (done) {
    count_fast();
  } else {
    run_reference(call);
  }
}

}  // namespace

void register_fast_pool(ExecutableKernels& registry) {
  registry.add("max_pool2d", &pool_kernel<false>);
  registry.add("avg_pool2d", &pool_kernel<true>);
  registry.add("max_pool2d_rect", &pool_kernel<false>);  // kh × kw from the cells, as above
  registry.add("avg_pool2d_rect", &pool_kernel<true>);
  registry.add("max_pool3d", &pool_kernel<false>);  // (1, 1, kd, kh, kw) windows
  registry.add("avg_pool3d", &pool_kernel<true>);
}

}  // namespace tapestry::runtime::fast
