// Fast softmax over the last dim (kernels/softmax.yaml) on contiguous rows.
//
// The metakernel's cells are whole rows (window `*` along the last dim), one per index point;
// a shard or a window over further dims gives more rows. When both x and the result are
// contiguous along the last dim (unit stride: any dense tensor and any sub-box view of one), the
// row starts form a loop nest over raw pointers (fast_support.h: the index dims by their affine
// coefficients, then the window's other dims by the views' strides) and each row runs
// scalar_ops.h's softmax_row, the reference kernel's own function, so the result is bitwise
// equal to the reference kernel by construction; the gain is the per-row overhead (no Point per
// index point) and the instruction set: the rows run through elementwise_vector.h's clones
// (AVX-512 where the CPU has it; the reference kernel's loops are the baseline's). Other
// dtypes, cells that differ between x and the result, and non-unit last-dim strides run the
// reference kernel.
//
// bf16/f16 rows run the float32 row function one row at a time: the row widened into a float32
// row buffer (L1-resident, reused for every row), softmax_row_dense on it in place, and each
// result rounded once into the 16-bit row — bitwise the float32 kernel on a widened copy of the
// whole block, which is what ran before, without the block. Calls it refuses widen.
#include <type_traits>
#include <vector>

#include "elementwise_ops.h"

#include "elementwise_vector.h"
#include "fast_support.h"

#include "../kernel_support.h"
#include "../scalar_ops.h"

namespace tapestry::runtime::fast {

namespace {

// T: the storage type (float, double, BFloat16 or Float16).
template <typename T>
bool softmax(const KernelCall& call) {
  auto xl = call.inputs.list("x");
  auto rl = call.outputs.list("result");
  if (xl.size() != 1 || rl.size() != 1 || call.inputs.size() != 1 || call.outputs.size() != 1) {
    return false;
  }
  const InputPort& x = xl[0];
  const OutputPort& r = rl[0];
  const Point& window = x.ipf->shape();
  if (window != r.ipf->shape() || window.rank() == 0) return false;
  const std::size_t last = window.rank() - 1;
  const std::int64_t n = window[last];
  if (n == 0) return true;  // empty rows: nothing to write
  if (x.view.stride(last) != 1 || r.view.stride(last) != 1) return false;
  const Strided<const T> xs = strided<const T>(x, call.index);
  const Strided<T> rs = strided<T>(r, call.index);
  // Row starts: the index loops, then the window's other dims.
  Nest<2> rows = make_nest<2>(call.index, {&xs.coef, &rs.coef});
  for (std::size_t d = 0; d < last; ++d) {
    if (window[d] == 1) continue;
    rows.extent.push_back(window[d]);
    rows.stride.push_back({x.view.stride(d), r.view.stride(d)});
  }
  // A 16-bit row is computed in float32 (widened into `wide`, rounded once back).
  std::vector<std::conditional_t<is_half_float_v<T>, float, T>> scratch;
  std::vector<float> wide(is_half_float_v<T> ? static_cast<std::size_t>(n) : 0);
  for_each_run(rows, [&](const auto& at, std::int64_t len, const auto& step) {
    for (std::int64_t i = 0; i < len; ++i) {
      const T* from = xs.base + at[0] + i * step[0];
      T* to = rs.base + at[1] + i * step[1];
      if constexpr (is_half_float_v<T>) {
        for (std::int64_t j = 0; j < n; ++j) wide[static_cast<std::size_t>(j)] = to_float(from[j]);
        softmax_row_dense(wide.data(), wide.data(), n, scratch);
        for (std::int64_t j = 0; j < n; ++j) {
          to[j] = narrow_float<T>(wide[static_cast<std::size_t>(j)]);
        }
      } else {
        softmax_row_dense(from, to, n, scratch);
      }
    }
  });
  return true;
}

void softmax_kernel(const KernelCall& call) {
  static const KernelFn widened = widen_half_floats(&softmax_kernel);
  const std::optional<DType> dtype = uniform_dtype(call);
  bool done = false;
  if (dtype && !call.index.is_empty()) {
    if (*dtype == DType::kFloat32) done = softmax<float>(call);
    if (*dtype == DType::kFloat64) done = softmax<double>(call);
    if (*dtype == DType::kBFloat16) done = softmax<BFloat16>(call);
    if (*dtype == DType::kFloat16) done = softmax<Float16>(call);
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

void register_fast_softmax(ExecutableKernels& registry) {
  registry.add_native("softmax", &softmax_kernel);  // bf16/f16 rows itself (file comment)
}

}  // namespace tapestry::runtime::fast
