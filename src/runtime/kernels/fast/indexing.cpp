// Fast argmax, argmin and gather (kernels/reductions.yaml, kernels/layout.yaml).
//
// The index box becomes a loop nest over raw pointers (fast_support.h): argmax and argmin run
// scalar_ops.h's arg_extreme — the reference kernel's own function, so both sets agree bitwise —
// on each row start; gather copies one cell per index point, reading the index and stepping
// every pointer along the innermost run instead of locating each cell. An index out of range
// hands the call to the reference kernel, whose error names the index and where it is.
#include "fast_support.h"

#include "../kernel_support.h"
#include "../scalar_ops.h"

namespace tapestry::runtime::fast {

namespace {

std::size_t axis_of(const KernelCall& call) {
  return static_cast<std::size_t>(call.param_int("axis", 0));
}

template <bool kMin>
void arg_extreme_kernel(const KernelCall& call) {
  const InputPort& x = call.input("x");
  const OutputPort& r = call.output("result");
  if (call.index.is_empty() || r.view.dtype() != DType::kInt64 || !is_executable(x.view.dtype()) ||
      is_half_float(x.view.dtype()))
    return run_reference(call);
  const std::size_t axis = axis_of(call);
  const bool last = call.param_bool("select_last_index", false);
  const std::int64_t n = x.ipf->shape()[axis], stride = x.view.stride(axis);
  visit_dtype(x.view.dtype(), [&]<typename T>() {
    const Strided<const T> xs = strided<const T>(x, call.index);
    const Strided<std::int64_t> rs = strided<std::int64_t>(r, call.index);
    for_each_run(make_nest<2>(call.index, {&xs.coef, &rs.coef}),
                 [&](const auto& at, std::int64_t len, const auto& step) {
                   const T* row = xs.base + at[0];
                   std::int64_t* out = rs.base + at[1];
                   for (std::int64_t i = 0; i < len; ++i)
                     out[i * step[1]] =
                         kernels::scalar::arg_extreme<kMin>(row + i * step[0], stride, n, last);
                 });
  });
  count_fast();
}

// False (nothing reported) when an index is out of range: the reference kernel then fails the
// call with the located message.
template <typename T, typename I>
bool gather(const KernelCall& call, std::size_t axis) {
  const InputPort& x = call.input("x");
  const InputPort& ip = call.input("indices");
  const OutputPort& r = call.output("result");
  const std::int64_t n = x.ipf->shape()[axis], stride = x.view.stride(axis);
  const Strided<const T> xs = strided<const T>(x, call.index);
  const Strided<const I> is = strided<const I>(ip, call.index);
  const Strided<T> rs = strided<T>(r, call.index);
  bool in_range = true;
  for_each_run(make_nest<3>(call.index, {&xs.coef, &is.coef, &rs.coef}),
               [&](const auto& at, std::int64_t len, const auto& step) {
                 const T* xr = xs.base + at[0];
                 const I* ir = is.base + at[1];
                 T* out = rs.base + at[2];
                 for (std::int64_t i = 0; i < len && in_range; ++i) {
                   auto k = static_cast<std::int64_t>(ir[i * step[1]]);
                   if (k < 0) k += n;
                   in_range = k >= 0 && k < n;
                   if (in_range) out[i * step[2]] = xr[i * step[0] + k * stride];
                 }
               });
  return in_range;
}

void gather_kernel(const KernelCall& call) {
  const DType dtype = call.input("x").view.dtype();
  const DType index_dtype = call.input("indices").view.dtype();
  if (call.index.is_empty() || dtype != call.output("result").view.dtype() ||
      !is_executable(dtype) || is_half_float(dtype) ||
      (index_dtype != DType::kInt32 && index_dtype != DType::kInt64))
    return run_reference(call);
  const std::size_t axis = axis_of(call);
  bool done = false;
  visit_dtype(dtype, [&]<typename T>() {
    done = index_dtype == DType::kInt32 ? gather<T, std::int32_t>(call, axis)
                                        : gather<T, std::int64_t>(call, axis);
  });
  if (!done) return run_reference(call);
  count_fast();
}

}  // namespace

void register_fast_indexing(ExecutableKernels& registry) {
  registry.add("argmax", &arg_extreme_kernel<false>);
  registry.add("argmin", &arg_extreme_kernel<true>);
  registry.add("gather", &gather_kernel);
}

}  // namespace tapestry::runtime::fast
