// Private: the elementwise functions of the fast kernels, written so that -O3 vectorises their
// loops, and the run loops shared by the elementwise kernels and the fused epilogue.
//
// Each function computes exactly what the reference computes (kernels/elementwise.cpp), with
// the same operations in the same order, so results are bitwise equal:
//   relu(x)       = x < 0 ? 0 : x        (NaN and -0.0 pass through, as max(x, 0) does there)
//   maximum(a, b) = NaN if either is NaN (a's first), else a < b ? b : a
//   exp, tanh, sigmoid, gelu call the same std:: functions as the reference, element by element
//   (glibc offers no vector variants without -ffast-math, so these loops stay scalar).
// Integer add/sub/mul/neg wrap (unsigned arithmetic, kernels/kernel_support.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <string_view>

#include "../kernel_support.h"

namespace tapestry::runtime::fast {

enum class UnaryOp { kRelu, kNeg, kExp, kTanh, kSigmoid, kGelu };

/// The unary op a kernel name denotes (relu, neg, exp, tanh, sigmoid, gelu), or nullopt.
std::optional<UnaryOp> parse_unary_op(std::string_view kernel);

/// True for the ops defined on floats only.
constexpr bool is_float_only(UnaryOp op) {
  return op != UnaryOp::kRelu && op != UnaryOp::kNeg;
}

template <UnaryOp Op, typename T>
inline T unary(T x) {
  if constexpr (Op == UnaryOp::kRelu) {
    return x < T{0} ? T{0} : x;
  } else if constexpr (Op == UnaryOp::kNeg) {
    return kernels::neg(x);
  } else if constexpr (Op == UnaryOp::kExp) {
    return std::exp(x);
  } else if constexpr (Op == UnaryOp::kTanh) {
    return std::tanh(x);
  } else if constexpr (Op == UnaryOp::kSigmoid) {
    return T{1} / (T{1} + std::exp(-x));
  } else {
    return T{0.5} * x * (T{1} + std::erf(x / std::numbers::sqrt2_v<T>));
  }
}

/// result[i·sr] = op(x[i·sx]) for i < n; the contiguous case is a separate, vectorised loop.
template <UnaryOp Op, typename T>
void unary_run(const T* x, std::int64_t sx, T* r, std::int64_t sr, std::int64_t n) {
  if (sx == 1 && sr == 1) {
    const T* __restrict xs = x;
    T* __restrict rs = r;
    for (std::int64_t i = 0; i < n; ++i) rs[i] = unary<Op>(xs[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) r[i * sr] = unary<Op>(x[i * sx]);
  }
}

/// In place: p[i·s] = op(p[i·s]).
template <UnaryOp Op, typename T>
void unary_in_place(T* p, std::int64_t s, std::int64_t n) {
  if (s == 1) {
    for (std::int64_t i = 0; i < n; ++i) p[i] = unary<Op>(p[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) p[i * s] = unary<Op>(p[i * s]);
  }
}

/// Dispatches `op` to unary_in_place (T a float type unless op is relu or neg).
template <typename T>
void unary_in_place(UnaryOp op, T* p, std::int64_t s, std::int64_t n) {
  switch (op) {
    case UnaryOp::kRelu:
      return unary_in_place<UnaryOp::kRelu>(p, s, n);
    case UnaryOp::kNeg:
      return unary_in_place<UnaryOp::kNeg>(p, s, n);
    case UnaryOp::kExp:
      if constexpr (kernels::kIsFloat<T>) return unary_in_place<UnaryOp::kExp>(p, s, n);
      break;
    case UnaryOp::kTanh:
      if constexpr (kernels::kIsFloat<T>) return unary_in_place<UnaryOp::kTanh>(p, s, n);
      break;
    case UnaryOp::kSigmoid:
      if constexpr (kernels::kIsFloat<T>) return unary_in_place<UnaryOp::kSigmoid>(p, s, n);
      break;
    case UnaryOp::kGelu:
      if constexpr (kernels::kIsFloat<T>) return unary_in_place<UnaryOp::kGelu>(p, s, n);
      break;
  }
}

// ---- binary -----------------------------------------------------------------------------------

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kMaximum };

template <BinaryOp Op, typename T>
inline T binary(T a, T b) {
  if constexpr (Op == BinaryOp::kAdd) {
    return kernels::add(a, b);
  } else if constexpr (Op == BinaryOp::kSub) {
    return kernels::sub(a, b);
  } else if constexpr (Op == BinaryOp::kMul) {
    return kernels::mul(a, b);
  } else if constexpr (Op == BinaryOp::kDiv) {
    return a / b;  // floats only: integer division goes to the reference kernel
  } else {
    T r = a < b ? b : a;
    if constexpr (kernels::kIsFloat<T>) {
      r = b != b ? b : r;  // NOLINT: NaN test that vectorises
      r = a != a ? a : r;  // NOLINT
    }
    return r;
  }
}

/// r[i·sr] = op(a[i·sa], b[i·sb]); the dense and the broadcast-scalar cases vectorise.
template <BinaryOp Op, typename T>
void binary_run(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* r, std::int64_t sr,
                std::int64_t n) {
  if (sr == 1 && sa == 1 && sb == 1) {
    const T* __restrict as = a;
    const T* __restrict bs = b;
    T* __restrict rs = r;
    for (std::int64_t i = 0; i < n; ++i) rs[i] = binary<Op>(as[i], bs[i]);
  } else if (sr == 1 && sa == 1 && sb == 0) {
    const T* __restrict as = a;
    T* __restrict rs = r;
    const T bv = *b;
    for (std::int64_t i = 0; i < n; ++i) rs[i] = binary<Op>(as[i], bv);
  } else if (sr == 1 && sa == 0 && sb == 1) {
    const T* __restrict bs = b;
    T* __restrict rs = r;
    const T av = *a;
    for (std::int64_t i = 0; i < n; ++i) rs[i] = binary<Op>(av, bs[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) r[i * sr] = binary<Op>(a[i * sa], b[i * sb]);
  }
}

/// In place: p[i·sp] = p[i·sp] + b[i·sb] (a bias row; sb 0 broadcasts one value).
template <typename T>
void add_in_place(T* p, std::int64_t sp, const T* b, std::int64_t sb, std::int64_t n) {
  if (sp == 1 && sb == 1) {
    T* __restrict ps = p;
    const T* __restrict bs = b;
    for (std::int64_t i = 0; i < n; ++i) ps[i] = kernels::add(ps[i], bs[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) p[i * sp] = kernels::add(p[i * sp], b[i * sb]);
  }
}

}  // namespace tapestry::runtime::fast
