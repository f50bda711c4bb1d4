// Fast kernels of kernels/autodiff.yaml: the pointwise derivatives as vectorisable loops over the
// shared formulas (scalar_ops.h, so both sets agree bitwise), broadcast and expand as strided
// copies, sum_to and the fills as strided runs (sum_to in the reference's order), linear_grad_w as
// one GEMM (gᵀ·x) when the batch is one dim. The others (unslice, mul_scalar, maximum_grad_*) —
// and every call outside these shapes — run the reference kernel (a counted fallback).
#include <algorithm>

#include "../scalar_ops.h"
#include "fast_support.h"
#include "gemm.h"

namespace tapestry::runtime::fast {

namespace {

namespace scalar = kernels::scalar;

template <typename Port>
const Port* unit_port(const ir::NamedLists<Port>& ports, std::string_view name) {
  auto list = ports.list(name);
  if (list.size() != 1 || !has_unit_cells(*list[0].ipf)) return nullptr;
  return &list[0];
}

// result = Op(x or y, g), g the cotangent d_result, over runs of the innermost loop.
template <typename Op>
void pointwise_grad_kernel(const KernelCall& call) {
  const InputPort* x = unit_port(call.inputs, call.find_input("y") != nullptr ? "y" : "x");
  const InputPort* g = unit_port(call.inputs, "d_result");
  const OutputPort* r = unit_port(call.outputs, "result");
  const std::optional<DType> dtype = uniform_dtype(call);
  if (x == nullptr || g == nullptr || r == nullptr || !dtype || call.index.is_empty() ||
      (Op::kFloatOnly && !ir::is_float(*dtype)) || !is_executable(*dtype)) {
    return run_reference(call);
  }
  visit_dtype(*dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T> || !Op::kFloatOnly) {
      const Strided<const T> xs = strided<const T>(*x, call.index);
      const Strided<const T> gs = strided<const T>(*g, call.index);
      const Strided<T> rs = strided<T>(*r, call.index);
      const Op op;
      for_each_run(make_nest<3>(call.index, {&xs.coef, &gs.coef, &rs.coef}),
                   [&](const auto& at, std::int64_t n, const auto& step) {
                     const T* xp = xs.base + at[0];
                     const T* gp = gs.base + at[1];
                     T* rp = rs.base + at[2];
                     for (std::int64_t i = 0; i < n; ++i) {
                       rp[i * step[2]] = op(xp[i * step[0]], gp[i * step[1]]);
                     }
                   });
    }
  });
  count_fast();
}

// broadcast, expand: result[p] = x[IPF_x(p)], x's stride 0 along the repeated dim.
void repeat_kernel(const KernelCall& call) {
  const InputPort* x = unit_port(call.inputs, "x");
  const OutputPort* r = unit_port(call.outputs, "result");
  const std::optional<DType> dtype = uniform_dtype(call);
  if (x == nullptr || r == nullptr || !dtype || call.index.is_empty() || !is_executable(*dtype)) {
    return run_reference(call);
  }
  visit_dtype(*dtype, [&]<typename T>() {
    const Strided<const T> xs = strided<const T>(*x, call.index);
    const Strided<T> rs = strided<T>(*r, call.index);
    for_each_run(make_nest<2>(call.index, {&xs.coef, &rs.coef}),
                 [&](const auto& at, std::int64_t n, const auto& step) {
                   const T* from = xs.base + at[0];
                   T* to = rs.base + at[1];
                   for (std::int64_t i = 0; i < n; ++i) to[i * step[1]] = from[i * step[0]];
                 });
  });
  count_fast();
}

// ones_like (param value, default 1), zeros_like: the result's cells filled by strided runs.
template <int kDefault>
void fill_kernel(const KernelCall& call) {
  const OutputPort* r = unit_port(call.outputs, "result");
  const std::optional<DType> dtype = uniform_dtype(call);
  if (r == nullptr || !dtype || call.index.is_empty() || !is_executable(*dtype)) {
    return run_reference(call);
  }
  double value = kDefault;
  if (call.params != nullptr && call.params->is_object() && call.params->contains("value")) {
    value = call.params->at("value").get<double>();
  }
  visit_dtype(*dtype, [&]<typename T>() {
    const Strided<T> rs = strided<T>(*r, call.index);
    const auto fill = static_cast<T>(value);
    for_each_run(make_nest<1>(call.index, {&rs.coef}),
                 [&](const auto& at, std::int64_t n, const auto& step) {
                   T* to = rs.base + at[0];
                   for (std::int64_t i = 0; i < n; ++i) to[i * step[0]] = fill;
                 });
  });
  count_fast();
}

// sum_to: the result's cells zeroed, then every index point adds its x cell in row-major order
// of the points (the reference kernel's order, so the sums agree bitwise); the result's stride
// along a reduced dim is 0, so a run along it accumulates into one cell.
void sum_to_kernel(const KernelCall& call) {
  const InputPort* x = unit_port(call.inputs, "x");
  const OutputPort* r = unit_port(call.outputs, "result");
  const std::optional<DType> dtype = uniform_dtype(call);
  if (x == nullptr || r == nullptr || !dtype || call.index.is_empty() || !ir::is_float(*dtype) ||
      !is_executable(*dtype)) {
    return run_reference(call);
  }
  visit_dtype(*dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T>) {
      const Strided<const T> xs = strided<const T>(*x, call.index);
      const Strided<T> rs = strided<T>(*r, call.index);
      const Nest<2> nest = make_nest<2>(call.index, {&xs.coef, &rs.coef});
      for_each_run(nest, [&](const auto& at, std::int64_t n, const auto& step) {
        T* to = rs.base + at[1];
        for (std::int64_t i = 0; i < n; ++i) to[i * step[1]] = T{0};
      });
      for_each_run(nest, [&](const auto& at, std::int64_t n, const auto& step) {
        const T* from = xs.base + at[0];
        T* to = rs.base + at[1];
        for (std::int64_t i = 0; i < n; ++i) to[i * step[1]] += from[i * step[0]];
      });
    }
  });
  count_fast();
}

// linear_grad_w as one GEMM, C[out × in] = gᵀ·x: the call's index dims of extent > 1 must be one
// batch dim (the result does not move along it), one `out` dim (x does not) and one `in` dim (g
// does not), with unit strides along out in g and along in in x and the result — one batch dim,
// and any other dims of extent 1 (a split reduction's block dim in each of its applications).
void linear_grad_w_kernel(const KernelCall& call) {
  const InputPort* x = unit_port(call.inputs, "x");
  const InputPort* g = unit_port(call.inputs, "d_result");
  const OutputPort* r = unit_port(call.outputs, "result");
  const std::optional<DType> dtype = uniform_dtype(call);
  if (x == nullptr || g == nullptr || r == nullptr || !dtype || call.index.is_empty() ||
      !ir::is_float(*dtype) || !is_executable(*dtype)) {
    return run_reference(call);
  }
  bool ran = false;
  visit_dtype(*dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const Strided<const T> xs = strided<const T>(*x, call.index);
      const Strided<const T> gs = strided<const T>(*g, call.index);
      const Strided<T> rs = strided<T>(*r, call.index);
      std::int64_t m = 1, n = 1, k = 1, lda = 0, ldb = 0, ldc = 0;
      int found_m = 0, found_n = 0, found_k = 0;
      for (std::size_t d = 0; d < call.index.rank(); ++d) {
        const std::int64_t e = call.index.extent(d);
        if (e == 1) continue;
        const std::int64_t cx = xs.coef[d], cg = gs.coef[d], cr = rs.coef[d];
        if (cr == 0 && cx != 0 && cg != 0) {  // batch
          k = e, lda = cg, ldb = cx, ++found_k;
        } else if (cx == 0 && cg == 1 && cr != 0) {  // out
          m = e, ldc = cr, ++found_m;
        } else if (cg == 0 && cx == 1 && cr == 1) {  // in
          n = e, ++found_n;
        } else {
          return;
        }
      }
      if (found_m > 1 || found_n > 1 || found_k > 1) return;
      if ((found_k != 0 && (lda < m || ldb < n)) || (found_m != 0 && ldc < n)) return;
      const GemmArgs args{.m = m,
                          .n = n,
                          .k = k,
                          .trans_a = true,
                          .trans_b = false,
                          .lda = std::max(lda, m),
                          .ldb = std::max(ldb, n),
                          .ldc = std::max(ldc, n)};
      if (!fits_blas(args)) return;
      gemm(args, gs.base, xs.base, T{0}, rs.base);
      ran = true;
    }
  });
  if (!ran) return run_reference(call);
  count_fast();
}

}  // namespace

void register_fast_autodiff(ExecutableKernels& registry) {
  registry.add("relu_grad", &pointwise_grad_kernel<scalar::ReluGrad>);
  registry.add("gelu_grad", &pointwise_grad_kernel<scalar::GeluGrad>);
  registry.add("tanh_grad", &pointwise_grad_kernel<scalar::TanhGrad>);
  registry.add("sigmoid_grad", &pointwise_grad_kernel<scalar::SigmoidGrad>);
  registry.add("sqrt_grad", &pointwise_grad_kernel<scalar::SqrtGrad>);
  registry.add("broadcast", &repeat_kernel);
  registry.add("expand", &repeat_kernel);
  registry.add("linear_grad_w", &linear_grad_w_kernel);
  registry.add("sum_to", &sum_to_kernel);
  registry.add("ones_like", &fill_kernel<1>);
  registry.add("zeros_like", &fill_kernel<0>);
}

}  // namespace tapestry::runtime::fast
