// Private: the run loops of the fast elementwise kernels and of the fused epilogue, written so
// that -O3 vectorises them.
//
// The per-element formulas are not here: every loop applies a functor of ../scalar_ops.h, the
// definition the reference kernels evaluate too, so the two sets are bitwise equal by
// construction. The binary maps and maximum (written as selects) vectorise for the baseline
// x86-64; the dense unary loops go to elementwise_vector.h, compiled for AVX-512, AVX2 and the
// baseline and chosen by cpuid: their f32 transcendentals are branch-free f64 formulas with no
// libm call, so they vectorise. The f64 exp, tanh and sigmoid call libm (glibc offers no vector
// variants without -ffast-math) and stay scalar.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "../kernel_support.h"
#include "../scalar_ops.h"
#include "elementwise_vector.h"

namespace tapestry::runtime::fast {

namespace scalar = kernels::scalar;

/// A unary op chosen at run time (the fused epilogue's steps).
enum class UnaryOp { kRelu, kNeg, kExp, kTanh, kSigmoid, kGelu };

/// The unary op a kernel name denotes (relu, neg, exp, tanh, sigmoid, gelu), or nullopt.
std::optional<UnaryOp> parse_unary_op(std::string_view kernel);

/// Whether elementwise_vector.cpp instantiates its dense loops for Op on T.
template <typename Op, typename T>
inline constexpr bool kHasDenseLoops = kHasClones<Op> &&
                                       (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                        std::is_same_v<T, std::int32_t> ||
                                        std::is_same_v<T, std::int64_t>);

/// result[i·sr] = op(x[i·sx]) for i < n; the contiguous case runs elementwise_vector.h's loop
/// (x and r distinct or equal).
template <typename Op, typename T>
void unary_run(const T* x, std::int64_t sx, T* r, std::int64_t sr, std::int64_t n) {
  const Op op;
  if constexpr (kHasDenseLoops<Op, T>) {
    if (sx == 1 && sr == 1) {
      if (x == r) return unary_dense_in_place<Op>(r, n);
      return unary_dense<Op>(x, r, n);
    }
  }
  if (sx == 1 && sr == 1) {
    const T* __restrict xs = x;
    T* __restrict rs = r;
    for (std::int64_t i = 0; i < n; ++i) rs[i] = op(xs[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) r[i * sr] = op(x[i * sx]);
  }
}

/// In place: p[i·s] = op(p[i·s]).
template <typename Op, typename T>
void unary_in_place(T* p, std::int64_t s, std::int64_t n) {
  const Op op;
  if constexpr (kHasDenseLoops<Op, T>) {
    if (s == 1) return unary_dense_in_place<Op>(p, n);
  }
  if (s == 1) {
    for (std::int64_t i = 0; i < n; ++i) p[i] = op(p[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) p[i * s] = op(p[i * s]);
  }
}

/// Dispatches `op` to unary_in_place (T a float type unless op is relu or neg).
template <typename T>
void unary_in_place(UnaryOp op, T* p, std::int64_t s, std::int64_t n) {
  switch (op) {
    case UnaryOp::kRelu:
      return unary_in_place<scalar::Relu>(p, s, n);
    case UnaryOp::kNeg:
      return unary_in_place<scalar::Neg>(p, s, n);
    case UnaryOp::kExp:
      if constexpr (kernels::kIsFloat<T>) return unary_in_place<scalar::Exp>(p, s, n);
      break;
    case UnaryOp::kTanh:
      if constexpr (kernels::kIsFloat<T>) return unary_in_place<scalar::Tanh>(p, s, n);
      break;
    case UnaryOp::kSigmoid:
      if constexpr (kernels::kIsFloat<T>) return unary_in_place<scalar::Sigmoid>(p, s, n);
      break;
    case UnaryOp::kGelu:
      if constexpr (kernels::kIsFloat<T>) return unary_in_place<scalar::Gelu>(p, s, n);
      break;
  }
}

// ---- 16-bit cells ----------------------------------------------------------------------------
// bfloat16 and float16 (docs/runtime.md, "bfloat16 and float16"): the float32 functor on each
// cell widened in a register, the result rounded once to nearest even into its 16-bit cell —
// bit for bit what the float32 kernel computes on widened copies, with no float32 block.

/// Calls fn.template operator()<H>() with H the storage type of a 16-bit float dtype.
template <typename Fn>
void visit_half_float(DType dtype, Fn&& fn) {
  if (dtype == DType::kBFloat16) {
    fn.template operator()<BFloat16>();
  } else {
    fn.template operator()<Float16>();
  }
}

/// r[i·sr] = round(op(widen(x[i·sx]))) for i < n (x and r distinct or equal).
template <typename Op, typename H>
void unary_run_half(const H* x, std::int64_t sx, H* r, std::int64_t sr, std::int64_t n) {
  if constexpr (kHasClones<Op>) {
    if (sx == 1 && sr == 1) return unary_dense_half<Op>(x, r, n);
  }
  const Op op;
  for (std::int64_t i = 0; i < n; ++i) r[i * sr] = narrow_float<H>(op(to_float(x[i * sx])));
}

/// r[i·sr] = round(op(widen(a[i·sa]), widen(b[i·sb]))); dense and broadcast runs of the
/// arithmetic maps go to elementwise_vector.h's clones.
template <typename Op, typename H>
void binary_run_half(const H* a, std::int64_t sa, const H* b, std::int64_t sb, H* r,
                     std::int64_t sr, std::int64_t n) {
  if constexpr (kHasBinaryClones<Op>) {
    if (sr == 1 && (sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {
      return binary_dense_half<Op>(a, sa, b, sb, r, n);
    }
  }
  const Op op;
  for (std::int64_t i = 0; i < n; ++i) {
    r[i * sr] = narrow_float<H>(op(to_float(a[i * sa]), to_float(b[i * sb])));
  }
}

// ---- binary -----------------------------------------------------------------------------------

/// r[i·sr] = op(a[i·sa], b[i·sb]); the dense and the broadcast-scalar cases vectorise.
template <typename Op, typename T>
void binary_run(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* r, std::int64_t sr,
                std::int64_t n) {
  const Op op;
  if (sr == 1 && sa == 1 && sb == 1) {
    const T* __restrict as = a;
    const T* __restrict bs = b;
    T* __restrict rs = r;
    for (std::int64_t i = 0; i < n; ++i) rs[i] = op(as[i], bs[i]);
  } else if (sr == 1 && sa == 1 && sb == 0) {
    const T* __restrict as = a;
    T* __restrict rs = r;
    const T bv = *b;
    for (std::int64_t i = 0; i < n; ++i) rs[i] = op(as[i], bv);
  } else if (sr == 1 && sa == 0 && sb == 1) {
    const T* __restrict bs = b;
    T* __restrict rs = r;
    const T av = *a;
    for (std::int64_t i = 0; i < n; ++i) rs[i] = op(av, bs[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) r[i * sr] = op(a[i * sa], b[i * sb]);
  }
}

/// In place: p[i·sp] = p[i·sp] + b[i·sb] (a bias row; sb 0 broadcasts one value).
template <typename T>
void add_in_place(T* p, std::int64_t sp, const T* b, std::int64_t sb, std::int64_t n) {
  const scalar::Add add;
  if (sp == 1 && sb == 1) {
    T* __restrict ps = p;
    const T* __restrict bs = b;
    for (std::int64_t i = 0; i < n; ++i) ps[i] = add(ps[i], bs[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) p[i * sp] = add(p[i * sp], b[i * sb]);
  }
}

}  // namespace tapestry::runtime::fast
