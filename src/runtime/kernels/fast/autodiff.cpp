// Fast kernels of kernels/autodiff.yaml: the pointwise derivatives and maximum's masks as
// vectorisable loops over the shared formulas (scalar_ops.h, so both sets agree bitwise),
// mul_scalar as a strided scale, broadcast, expand and unpad as strided copies, unslice as strided
// copies along its dim with zeros around, sum_to and the fills as strided runs (sum_to in the
// reference's order), linear_grad_w as one GEMM (gᵀ·x) when the batch is one dim. Every call
// outside these shapes runs the reference kernel (a counted fallback).
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

// broadcast, expand, unpad: result[p] = x[IPF_x(p)], x's stride 0 along the repeated dim (or
// shifted by the padding).
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

// maximum_grad_a / _b: g (d_result) where maximum(a, b) took a (a ≥ b, or a is NaN) / b, the
// reference's test; broadcasting is a zero coefficient.
template <bool kForA>
void maximum_grad_kernel(const KernelCall& call) {
  const InputPort* a = unit_port(call.inputs, "a");
  const InputPort* b = unit_port(call.inputs, "b");
  const InputPort* g = unit_port(call.inputs, "d_result");
  const OutputPort* r = unit_port(call.outputs, "result");
  const std::optional<DType> dtype = uniform_dtype(call);
  if (a == nullptr || b == nullptr || g == nullptr || r == nullptr || !dtype ||
      call.index.is_empty() || !is_executable(*dtype)) {
    return run_reference(call);
  }
  visit_dtype(*dtype, [&]<typename T>() {
    const Strided<const T> as = strided<const T>(*a, call.index);
    const Strided<const T> bs = strided<const T>(*b, call.index);
    const Strided<const T> gs = strided<const T>(*g, call.index);
    const Strided<T> rs = strided<T>(*r, call.index);
    const scalar::Maximum max;
    for_each_run(make_nest<4>(call.index, {&as.coef, &bs.coef, &gs.coef, &rs.coef}),
                 [&](const auto& at, std::int64_t n, const auto& step) {
                   const T* ap = as.base + at[0];
                   const T* bp = bs.base + at[1];
                   const T* gp = gs.base + at[2];
                   T* rp = rs.base + at[3];
                   for (std::int64_t i = 0; i < n; ++i) {
                     const T av = ap[i * step[0]];
                     const T m = max(av, bp[i * step[1]]);
                     // NOLINTNEXTLINE(misc-redundant-expression): m != m is the NaN test
                     const bool took_a = m == av || (m != m && av != av);
                     rp[i * step[3]] = took_a == kForA ? gp[i * step[2]] : T{0};
                   }
                 });
  });
  count_fast();
}

// mul_scalar: x · (factor / divisor), the quotient formed in float64 and rounded once (as the
// reference, so both agree bitwise).
void scale_kernel(const KernelCall& call) {
  const InputPort* x = unit_port(call.inputs, "x");
  const OutputPort* r = unit_port(call.outputs, "result");
  const std::optional<DType> dtype = uniform_dtype(call);
  if (x == nullptr || r == nullptr || !dtype || call.index.is_empty() || !ir::is_float(*dtype) ||
      !is_executable(*dtype)) {
    return run_reference(call);
  }
  double factor = 1.0;
  if (call.params != nullptr && call.params->contains("factor")) {
    factor = call.params->at("factor").get<double>();
  }
  factor /= static_cast<double>(call.param_int("divisor", 1));
  visit_dtype(*dtype, [&]<typename T>() {
    if constexpr (kernels::kIsFloat<T>) {
      const Strided<const T> xs = strided<const T>(*x, call.index);
      const Strided<T> rs = strided<T>(*r, call.index);
      const auto f = static_cast<T>(factor);
      for_each_run(make_nest<2>(call.index, {&xs.coef, &rs.coef}),
                   [&](const auto& at, std::int64_t n, const auto& step) {
                     const T* from = xs.base + at[0];
                     T* to = rs.base + at[1];
                     for (std::int64_t i = 0; i < n; ++i) to[i * step[1]] = from[i * step[0]] * f;
                   });
    }
  });
  count_fast();
}

// unslice: x's IPF selects its whole dim `dim` (window `*`, coefficient 0 along it), so the loops
// run over the other dims and, per run cell, along `dim`: the result's cell i reads x's window
// at i − start, or is 0 outside it.
void unslice_kernel(const KernelCall& call) {
  const auto xs_list = call.inputs.list("x");
  const OutputPort* r = unit_port(call.outputs, "result");
  const std::optional<DType> dtype = uniform_dtype(call);
  const std::int64_t dim_param = call.param_int("dim", 0);
  if (xs_list.size() != 1 || r == nullptr || !dtype || call.index.is_empty() ||
      !is_executable(*dtype) || dim_param < 0 ||
      static_cast<std::size_t>(dim_param) >= call.index.rank()) {
    return run_reference(call);
  }
  const InputPort& x = xs_list[0];
  const auto dim = static_cast<std::size_t>(dim_param);
  const zspace::Point& window = x.ipf->shape();
  if (window.rank() != call.index.rank()) return run_reference(call);
  for (std::size_t k = 0; k < window.rank(); ++k) {
    if (k != dim && window[k] != 1) return run_reference(call);
  }
  const std::int64_t m = window[dim];
  const std::int64_t start = call.param_int("start", 0);
  const std::int64_t lo = call.index.start()[dim];
  const std::int64_t count = call.index.extent(dim);
  std::vector<bool> skip(call.index.rank(), false);
  skip[dim] = true;
  visit_dtype(*dtype, [&]<typename T>() {
    const Strided<const T> xs = strided<const T>(x, call.index);
    const Strided<T> rs = strided<T>(*r, call.index);
    if (xs.coef[dim] != 0) return run_reference(call);
    const std::int64_t x_step = x.view.stride(dim);
    const std::int64_t r_step = rs.coef[dim];
    for_each_run(make_nest<2>(call.index, {&xs.coef, &rs.coef}, skip),
                 [&](const auto& at, std::int64_t n, const auto& step) {
                   for (std::int64_t k = 0; k < n; ++k) {
                     const T* from = xs.base + at[0] + k * step[0];
                     T* to = rs.base + at[1] + k * step[1];
                     for (std::int64_t i = 0; i < count; ++i) {
                       const std::int64_t in = lo + i - start;
                       to[i * r_step] = in >= 0 && in < m ? from[in * x_step] : T{0};
                     }
                   }
                 });
    count_fast();
  });
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
  registry.add("unpad", &repeat_kernel);
  registry.add("unslice", &unslice_kernel);
  registry.add("mul_scalar", &scale_kernel);
  registry.add("maximum_grad_a", &maximum_grad_kernel<true>);
  registry.add("maximum_grad_b", &maximum_grad_kernel<false>);
  registry.add("linear_grad_w", &linear_grad_w_kernel);
  registry.add("sum_to", &sum_to_kernel);
  registry.add("ones_like", &fill_kernel<1>);
  registry.add("zeros_like", &fill_kernel<0>);
}

}  // namespace tapestry::runtime::fast
