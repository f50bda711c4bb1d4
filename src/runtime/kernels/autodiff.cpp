// Reference kernels of kernels/autodiff.yaml: what the VJPs of the other kernels need (docs/
// training.md). Every one loops over the index points and addresses cells through the IPFs, as
// the other reference kernels do; the pointwise derivatives are the functors of scalar_ops.h,
// shared with the fast kernels (kernels/fast/autodiff.cpp).
#include "kernel_support.h"
#include "reference_kernels.h"
#include "scalar_ops.h"

namespace tapestry::runtime {

namespace {

using kernels::kIsFloat;
namespace scalar = kernels::scalar;

constexpr std::string_view kX = "x";
constexpr std::string_view kDResult = "d_result";
constexpr std::string_view kResult = "result";

// ones_like (param `value`, default 1), zeros_like: result = the fill; x is read for its shape.
template <int kDefault>
void fill_kernel(const KernelCall& call) {
  kernels::require_unit_cells(call);
  double value = kDefault;
  if (call.params != nullptr && call.params->is_object() && call.params->contains("value")) {
    value = call.params->at("value").get<double>();
  }
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() {
    const Operand<T> result(call.output(kResult));
    const auto fill = static_cast<T>(value);
    for (const Point& p : call.index.points()) *result.cell(p) = fill;
  });
}

// broadcast, expand, unpad: result[p] = x[IPF_x(p)] (the IPF repeats x along the new dim, or
// shifts it by the padding).
void repeat_kernel(const KernelCall& call) {
  kernels::require_unit_cells(call);
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() {
    const Operand<const T> x(call.input(kX));
    const Operand<T> result(call.output(kResult));
    for (const Point& p : call.index.points()) *result.cell(p) = *x.cell(p);
  });
}

// sum_to: the result's cells start at 0 and every index point adds its x cell, in ascending
// order of the points (row-major), so each cell sums its reduced points in ascending order.
void sum_to_kernel(const KernelCall& call) {
  kernels::require_unit_cells(call);
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() {
    const Operand<const T> x(call.input(kX));
    const Operand<T> result(call.output(kResult));
    for (const Point& p : call.index.points()) *result.cell(p) = T{0};
    for (const Point& p : call.index.points()) {
      *result.cell(p) = kernels::add(*result.cell(p), *x.cell(p));
    }
  });
}

// unslice: the point at coordinate i along `dim` reads x's window (the whole dim) at i − start.
void unslice_kernel(const KernelCall& call) {
  const auto dim = static_cast<std::size_t>(call.param_int("dim", 0));
  const std::int64_t start = call.param_int("start", 0);
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() {
    const Operand<const T> x(call.input(kX));
    const Operand<T> result(call.output(kResult));
    const std::int64_t m = x.window(dim);
    const std::int64_t stride = x.stride(dim);
    for (const Point& p : call.index.points()) {
      const std::int64_t at = p[dim] - start;
      *result.cell(p) = at >= 0 && at < m ? x.cell(p)[at * stride] : T{0};
    }
  });
}

// mul_scalar: x · (factor / divisor), the quotient in float64.
void scale_kernel(const KernelCall& call) {
  kernels::require_unit_cells(call);
  const DType dtype = kernels::common_dtype(call);
  kernels::require_float(call, dtype);
  double factor = 1.0;
  if (call.params != nullptr && call.params->contains("factor")) {
    factor = call.params->at("factor").get<double>();
  }
  factor /= static_cast<double>(call.param_int("divisor", 1));
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const Operand<const T> x(call.input(kX));
      const Operand<T> result(call.output(kResult));
      const auto f = static_cast<T>(factor);
      for (const Point& p : call.index.points()) *result.cell(p) = *x.cell(p) * f;
    }
  });
}

// relu_grad … sqrt_grad: result = Op(x or y, g), g the cotangent d_result.
template <typename Op>
void pointwise_grad_kernel(const KernelCall& call) {
  kernels::require_unit_cells(call);
  const DType dtype = kernels::common_dtype(call);
  if (Op::kFloatOnly) kernels::require_float(call, dtype);
  const std::string_view forward = call.find_input("y") != nullptr ? "y" : kX;
  visit_dtype(dtype, [&]<typename T>() {
    if constexpr (!Op::kFloatOnly || kIsFloat<T>) {
      const Operand<const T> x(call.input(forward));
      const Operand<const T> g(call.input(kDResult));
      const Operand<T> result(call.output(kResult));
      const Op op;
      for (const Point& p : call.index.points()) *result.cell(p) = op(*x.cell(p), *g.cell(p));
    }
  });
}

// maximum_grad_a / _b: g (d_result) where maximum(a, b) took a (a ≥ b, or a is NaN) / b (the rest).
template <bool kForA>
void maximum_grad_kernel(const KernelCall& call) {
  kernels::require_unit_cells(call);
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() {
    const Operand<const T> a(call.input("a"));
    const Operand<const T> b(call.input("b"));
    const Operand<const T> g(call.input(kDResult));
    const Operand<T> result(call.output(kResult));
    const scalar::Maximum max;
    for (const Point& p : call.index.points()) {
      const T av = *a.cell(p);
      const T m = max(av, *b.cell(p));
      // NOLINTNEXTLINE(misc-redundant-expression): m != m is the NaN test
      const bool took_a = m == av || (m != m && av != av);
      *result.cell(p) = took_a == kForA ? *g.cell(p) : T{0};
    }
  });
}

// linear_grad_w: result[o, i] = Σ_b g[b, o] · x[b, i] (g: d_result), the batch points (the
// reductions) in ascending order per cell — the order of the index points, as linear's sum over
// `in`.
void linear_grad_w_kernel(const KernelCall& call) {
  kernels::require_unit_cells(call);
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() {
    const Operand<const T> x(call.input(kX));
    const Operand<const T> g(call.input(kDResult));
    const Operand<T> result(call.output(kResult));
    for (const Point& p : call.index.points()) *result.cell(p) = T{0};
    for (const Point& p : call.index.points()) {
      T* r = result.cell(p);
      *r = kernels::add(*r, kernels::mul(*g.cell(p), *x.cell(p)));
    }
  });
}

}  // namespace

void register_autodiff_kernels(ExecutableKernels& registry) {
  registry.add("ones_like", &fill_kernel<1>);
  registry.add("zeros_like", &fill_kernel<0>);
  registry.add("sum_to", &sum_to_kernel);
  registry.add("broadcast", &repeat_kernel);
  registry.add("expand", &repeat_kernel);
  registry.add("unslice", &unslice_kernel);
  registry.add("unpad", &repeat_kernel);
  registry.add("mul_scalar", &scale_kernel);
  registry.add("relu_grad", &pointwise_grad_kernel<scalar::ReluGrad>);
  registry.add("gelu_grad", &pointwise_grad_kernel<scalar::GeluGrad>);
  registry.add("tanh_grad", &pointwise_grad_kernel<scalar::TanhGrad>);
  registry.add("sigmoid_grad", &pointwise_grad_kernel<scalar::SigmoidGrad>);
  registry.add("sqrt_grad", &pointwise_grad_kernel<scalar::SqrtGrad>);
  registry.add("maximum_grad_a", &maximum_grad_kernel<true>);
  registry.add("maximum_grad_b", &maximum_grad_kernel<false>);
  registry.add("linear_grad_w", &linear_grad_w_kernel);
}

}  // namespace tapestry::runtime
