// Fast mean and variance over one dim (kernels/reductions.yaml), one row per loop iteration.
//
// As in fast softmax, the row starts form a loop nest over raw pointers (fast_support.h: the
// index dims by their affine coefficients, then the window's other dims by the views' strides)
// and each row runs scalar_ops.h's row_mean / row_variance, the reference kernel's own
// functions, so the results are bitwise equal to the reference kernel's by construction; the
// gain is the per-row overhead (no Point per index point). Mixed dtypes and cells that do not
// pair up run the reference kernel.
//
// bf16/f16 rows are widened one at a time into a float32 row buffer and run the float32 row
// functions; each mean or variance is stored as the float32 kernel stores it (the float64 value
// rounded to float32) and then rounded once to 16 bits — bitwise the float32 kernel on a widened
// copy of the block, which is what ran before (the double rounding included), without the
// block. Calls it refuses widen.
#include <vector>

#include "fast_support.h"

#include "../kernel_support.h"
#include "../scalar_ops.h"

namespace tapestry::runtime::fast {

namespace {

template <typename T, bool kVariance>
bool moment(const KernelCall& call) {
  auto xl = call.inputs.list("x");
  auto rl = call.outputs.list("result");
  if (xl.size() != 1 || rl.size() != 1 || call.inputs.size() != 1 || call.outputs.size() != 1 ||
      call.params == nullptr || !call.params->contains("dim")) {
    return false;
  }
  const InputPort& x = xl[0];
  const OutputPort& r = rl[0];
  const Point& window = x.ipf->shape();
  const std::int64_t dim = call.params->at("dim").get<std::int64_t>();
  if (dim < 0 || static_cast<std::size_t>(dim) >= window.rank()) return false;
  const auto axis = static_cast<std::size_t>(dim);
  if (r.ipf->shape() != window.with(axis, 1) || window[axis] == 0) return false;
  const std::int64_t n = window[axis];
  const Strided<const T> xs = strided<const T>(x, call.index);
  const Strided<T> rs = strided<T>(r, call.index);
  Nest<2> rows = make_nest<2>(call.index, {&xs.coef, &rs.coef});
  for (std::size_t d = 0; d < window.rank(); ++d) {
    if (d == axis || window[d] == 1) continue;
    rows.extent.push_back(window[d]);
    rows.stride.push_back({x.view.stride(d), r.view.stride(d)});
  }
  const std::int64_t step = x.view.stride(axis);
  std::vector<float> wide(is_half_float_v<T> ? static_cast<std::size_t>(n) : 0);
  for_each_run(rows, [&](const auto& at, std::int64_t len, const auto& stride) {
    for (std::int64_t i = 0; i < len; ++i) {
      const T* row = xs.base + at[0] + i * stride[0];
      T& out = rs.base[at[1] + i * stride[1]];
      if constexpr (is_half_float_v<T>) {
        for (std::int64_t j = 0; j < n; ++j) {
          wide[static_cast<std::size_t>(j)] = to_float(row[j * step]);
        }
        const double v = kVariance ? kernels::scalar::row_variance(wide.data(), 1, n)
                                   : kernels::scalar::row_mean(wide.data(), 1, n);
        out = narrow_float<T>(static_cast<float>(v));
      } else {
        const double v = kVariance ? kernels::scalar::row_variance(row, step, n)
                                   : kernels::scalar::row_mean(row, step, n);
        out = static_cast<T>(v);
      }
    }
  });
  return true;
}

template <bool kVariance>
void moment_kernel(const KernelCall& call) {
  static const KernelFn widened = widen_half_floats(&moment_kernel<kVariance>);
  const std::optional<DType> dtype = uniform_dtype(call);
  bool done = false;
  if (dtype && !call.index.is_empty()) {
    if (*dtype == DType::kFloat32) done = moment<float, kVariance>(call);
    if (*dtype == DType::kFloat64) done = moment<double, kVariance>(call);
    if (*dtype == DType::kBFloat16) done = moment<BFloat16, kVariance>(call);
    if (*dtype == DType::kFloat16) done = moment<Float16, kVariance>(call);
  }
  if (done) {
    if (is_half_float(*dtype)) count_half_native();
    count_fast();
  } else if (has_half_float_port(call)) {
    widened(call);  // float32 copies: the kernel above, or the reference
  } else {
    run_reference(call);
  }
}

}  // namespace

void register_fast_moments(ExecutableKernels& registry) {
  // Native: bf16/f16 rows themselves (file comment).
  registry.add_native("mean", &moment_kernel<false>);
  registry.add_native("variance", &moment_kernel<true>);
}

}  // namespace tapestry::runtime::fast
