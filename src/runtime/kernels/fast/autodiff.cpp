// Fast kernels of kernels/autodiff.yaml: the pointwise derivatives as vectorisable loops over the
// shared formulas (scalar_ops.h, so both sets agree bitwise), broadcast and expand as strided
// copies, sum_to as strided runs in the reference's order, linear_grad_w as one GEMM (gᵀ·x) when
// the batch is one dim. The others — and every call outside these shapes — run the reference
// kernel (a counted fallback, fast_registry.cpp).
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

// result = Op(x or y, g) over runs of the innermost loop.
template <typename Op>
void pointwise_grad_kernel(const KernelCall& call) {
  const InputPort* x = unit_port(call.inputs, call.find_input("y") != nullptr ? "y" : "x");
  const InputPort* g = unit_port(call.inputs, "g");
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

// linear_grad_w with one batch dim: C[out × in] = gᵀ·x, g stored [batch × out] (trans_a), x
// [batch × in], both with unit inner strides.
void linear_grad_w_kernel(const KernelCall& call) {
  const InputPort* x = unit_port(call.inputs, "x");
  const InputPort* g = unit_port(call.inputs, "g");
  const OutputPort* r = unit_port(call.outputs, "result");
  const std::optional<DType> dtype = uniform_dtype(call);
  if (x == nullptr || g == nullptr || r == nullptr || !dtype || call.index.is_empty() ||
      call.index.rank() != 3 || !ir::is_float(*dtype) || !is_executable(*dtype) ||
      x->view.rank() != 2 || g->view.rank() != 2 || r->view.rank() != 2 || x->view.stride(1) != 1 ||
      g->view.stride(1) != 1 || r->view.stride(1) != 1) {
    return run_reference(call);
  }
  const GemmArgs args{.m = call.index.extent(1),
                      .n = call.index.extent(2),
                      .k = call.index.extent(0),
                      .trans_a = true,
                      .trans_b = false,
                      .lda = g->view.stride(0),
                      .ldb = x->view.stride(0),
                      .ldc = r->view.stride(0)};
  if (!fits_blas(args)) return run_reference(call);
  visit_dtype(*dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const Strided<const T> xs = strided<const T>(*x, call.index);
      const Strided<const T> gs = strided<const T>(*g, call.index);
      const Strided<T> rs = strided<T>(*r, call.index);
      gemm(args, gs.base, xs.base, T{0}, rs.base);
    }
  });
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
}

}  // namespace tapestry::runtime::fast
