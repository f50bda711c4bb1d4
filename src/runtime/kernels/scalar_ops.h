// Private to the runtime: the scalar formula of every elementwise operation — the one definition
// that both kernel sets evaluate (the formulas the CUDA kernels share as well — the f32 lanes, f64
// gelu, the softmax terms — are in scalar_math.h, which nvcc compiles). The reference kernels
// (elementwise.cpp, softmax.cpp) call these once per index point; the fast kernels
// (fast/elementwise_ops.h, fast/softmax.cpp) call them in loops over raw pointers that the compiler
// vectorises where it can. The two sets therefore compute the same bits for every element by
// construction, not by keeping two copies in step.
//
// Accuracy (docs/runtime.md, "Accuracy of the elementwise kernels"; measured by
// tests/runtime/elementwise_accuracy_test.cpp against a long double evaluation):
//
//   relu, neg, add, sub, mul, div, maximum   exact or correctly rounded (IEEE operations)
//   pow        std::pow in the dtype (glibc: < 1 ulp)
//   exp        f32: exp_f32 (f32 lanes, Cody–Waite); f64: std::exp    f32 ≤ 1.1, f64 ≤ 0.52 ulp
//   tanh       f32: tanh_f32 (f32 lanes, expm1 form); f64: std::tanh    f32 ≤ 3, f64 ≤ 2.5 ulp
//   sigmoid    e = exp(−|x|);  (x < 0 ? e : 1) / (1 + e)                f32 ≤ 2, f64 ≤ 3 ulp
//   gelu       x/2 · erfc(−x/√2); f32: gelu_f32 (f32 lanes)             f32 ≤ 3.5, f64 ≤ 4 ulp
//   softmax    see softmax_row                                       f32 ≤ 1.6, f64 ≤ 3 ulp
//
// Every f32 transcendental computes in f32 lanes without branches (the section "float32 lanes"
// below): 16 lanes with AVX-512 (fast/elementwise_vector.cpp compiles the loops for AVX-512, AVX2
// and the baseline and picks one by cpuid; no libm call is left in them). They were f64 formulas
// rounded once (≤ 0.51 ulp) until session 13: twice the work per element for the same vector
// width, which kept exp, sigmoid, softmax and gelu 1.3–4.3× behind PyTorch's f32 lanes (Sleef,
// 1–3.5 ulp). exp, tanh and sigmoid keep multiplies and adds separate (multiply_add); gelu and
// softmax's exponential use fused multiply-adds (fused_multiply_add: correctly rounded in every
// kernel set and clone, so the bits stay the same), which give exact products and remainders in
// one operation (session 16: gelu from ~130 operations per 16 lanes to ~60; session 17: ~40, from
// a table of polynomials that the AVX-512 and AVX2 clones index with permutes).
//
// Why these forms:
//   * sigmoid as 1 / (1 + e^−x) overflows e^−x below x ≈ −88.7 (f32) and returns 0 where the
//     true value e^x is still representable; with e = e^−|x| ≤ 1 nothing overflows, and for
//     x < 0 the quotient e / (1 + e) keeps full relative accuracy down to the underflow. f64
//     stays in its own dtype (std::exp; f64's exp costs ~4× f32's expf on this machine).
//   * gelu as x/2 · (1 + erf(x/√2)) cancels for x ≪ 0 (1 + erf → 0: 11% error at x = −5.24 in
//     f32, −0 instead of ≈ −6e-9 below −6). erfc(−x/√2) = 1 + erf(x/√2) without the subtraction.
//     The form is still ill-conditioned for x ≪ 0: a relative error δ in t = −x/√2 becomes
//     ≈ 2t²·δ in erfc(t) (≈ 200 ulp at x = −14, 1,400 at x = −37). f32 (gelu_f32) never rounds
//     x² (its FMA rest is carried) and takes the rest of Φ as a smooth factor, w·Φ(−w)·e^(w²/2),
//     from a table of polynomials; f64
//     carries t as t_hi + t_lo and adds the first-order term −t_lo · 2/√π · e^(−t_hi²), and below
//     x = −36 uses the asymptotic series, which keeps the results that are subnormal exact to
//     the last place.
//   * f32 gelu takes Φ from branch-free fits (gelu_f32) instead of libm's erfc, whose
//     interval branches mispredict on random signs (18 ns per element on N(0, 1.5) inputs on
//     this machine): its loops vectorise.
//   * f32 tanh is −m/(2 + m)·sign(x) with m = e^(−2|x|) − 1 from a branch-free expm1 (tanh_f32):
//     no cancellation near 0 (m ≈ −2|x| to full relative accuracy), none for large |x|; it was
//     std::tanh in f64, rounded once (3.9 ms for 262,144 elements, 8× PyTorch).

// Integer add, sub, mul and neg wrap (kernel_support.h); integer div rounds toward zero, wraps
// INT_MIN / −1 and throws on a zero divisor (the fast kernels leave integer division to the
// reference kernel for that reason).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernel_support.h"
#include "scalar_math.h"

namespace tapestry::runtime::kernels::scalar {

// ---- unary ------------------------------------------------------------------------------------

/// max(x, 0); NaN and −0 pass through (as max(x, 0) returns its first operand there).
struct Relu {
  static constexpr bool kFloatOnly = false;
  template <Element T>
  [[gnu::always_inline]] T operator()(T x) const {
    return x < T{0} ? T{0} : x;
  }
};

/// −x: exact for floats (neg(0) = −0), wrapping for integers (neg(INT_MIN) = INT_MIN).
struct Neg {
  static constexpr bool kFloatOnly = false;
  template <Element T>
  [[gnu::always_inline]] T operator()(T x) const {
    if constexpr (kIsFloat<T>) {
      return -x;
    } else {
      return kernels::neg(x);
    }
  }
};

// The f32 cases are branch-free f64 functions, inlined so that loops over them vectorise.
struct Exp {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  [[gnu::always_inline]] T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) {
      return exp_f32(x);
    } else {
      return exp_fast_underflow(x);
    }
  }
};

struct Tanh {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  [[gnu::always_inline]] T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) {
      return tanh_f32(x);
    } else {
      return std::tanh(x);
    }
  }
};

struct Sigmoid {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  [[gnu::always_inline]] T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) {
      return sigmoid_f32(x);
    } else {
      const T e = exp_fast_underflow(-std::fabs(x));  // ∈ [0, 1]: never overflows
      return select_if_negative(x, e, T{1}) / (T{1} + e);
    }
  }
};

struct Gelu {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  [[gnu::always_inline]] T operator()(T x) const {  // inlined, f32 loops over it vectorise
    if constexpr (std::is_same_v<T, double>) {
      return gelu_f64(x);
    } else {
      return gelu_f32(x);
    }
  }
};

/// IEEE square root: correctly rounded; NaN below 0, −0 for −0.
struct Sqrt {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  [[gnu::always_inline]] T operator()(T x) const {
    return std::sqrt(x);
  }
};

// The C library's log (glibc: logf within 0.82 ulp, log within 0.52; measured by
// elementwise_accuracy_test).
struct Log {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  [[gnu::always_inline]] T operator()(T x) const {
    return std::log(x);
  }
};

// ---- binary -----------------------------------------------------------------------------------

struct Add {
  template <Element T>
  T operator()(T a, T b) const {
    return kernels::add(a, b);
  }
};

struct Sub {
  template <Element T>
  T operator()(T a, T b) const {
    return kernels::sub(a, b);
  }
};

struct Mul {
  template <Element T>
  T operator()(T a, T b) const {
    return kernels::mul(a, b);
  }
};

/// Floats: IEEE division. Integers: C division, rounding toward zero (elementwise_binary.yaml);
/// the overflowing INT_MIN / −1 wraps; division by zero throws an Error.
struct Div {
  template <Element T>
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) {
      return a / b;
    } else {
      if (b == 0) throw Error("integer division by zero");
      if (b == -1) return kernels::neg(a);
      return a / b;
    }
  }
};

/// a^b. Floats: std::pow in the operands' dtype (C's special cases: pow(x, ±0) = 1 even for a
/// NaN x, pow(1, y) = 1, a negative base with a non-integer exponent is NaN). Integers: exact
/// repeated squaring that wraps like mul (pow(3, 2) = 9); a negative exponent is an Error
/// (numpy's rule: the result is not an integer) except for the bases 1 and −1.
struct Pow {
  template <Element T>
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) {
      return std::pow(a, b);
    } else {
      if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b % 2 == 0) ? T{1} : T{-1};
        throw Error("integer pow with a negative exponent (the result is not an integer)");
      }
      T result = 1;
      T base = a;
      for (T e = b; e > 0; e /= 2) {
        if (e % 2 == 1) result = kernels::mul(result, base);
        if (e > 1) base = kernels::mul(base, base);
      }
      return result;
    }
  }
};

/// NaN if either operand is NaN (a's first), else the larger (a when equal: max(−0, 0) = −0).
/// Written as selects so that loops over it vectorise.
struct Maximum {
  template <Element T>
  T operator()(T a, T b) const {
    T r = a < b ? b : a;
    if constexpr (kIsFloat<T>) {
      r = b != b ? b : r;  // NOLINT(misc-redundant-expression): the NaN test that vectorises
      r = a != a ? a : r;  // NOLINT(misc-redundant-expression)
    }
    return r;
  }
};

// ---- argmax, argmin (kernels/reductions.yaml)
// ----------------------------------------------------

/// The position in 0..n−1 of the largest (kMin: smallest) of row[0], row[stride], …,
/// row[(n−1)·stride], n ≥ 1: the first one, or the last when `last` (select_last_index). A NaN
/// beats every number (numpy's argmax and argmin), and the first NaN (`last`: the last) wins.
/// Example: {1, 5, 5} → 1, last → 2; {1, NaN, 9, NaN} → 1, last → 3.
template <bool kMin, typename T>
std::int64_t arg_extreme(const T* row, std::int64_t stride, std::int64_t n, bool last) {
  std::int64_t best = 0;
  T b = row[0];
  bool nan = false;
  if constexpr (kIsFloat<T>) nan = b != b;  // NOLINT(misc-redundant-expression)
  for (std::int64_t r = 1; r < n; ++r) {
    const T v = row[r * stride];
    if constexpr (kIsFloat<T>) {
      const bool v_nan = v != v;  // NOLINT(misc-redundant-expression)
      if (nan || v_nan) {
        if (v_nan && (!nan || last)) {
          best = r;
          nan = true;
        }
        continue;
      }
    }
    const bool better = kMin ? (last ? v <= b : v < b) : (last ? v >= b : v > b);
    if (better) {
      best = r;
      b = v;
    }
  }
  return best;
}

// ---- autodiff: the derivatives of the unary kernels (kernels/autodiff.yaml) -------------------
// Each takes what the forward operation had (its input x or its result y) and the cotangent g
// of its result, and returns the cotangent of x. The float-only ones compute in their dtype.

/// g where x > 0, else 0 (relu's derivative at 0 is taken as 0, as PyTorch does).
struct ReluGrad {
  static constexpr bool kFloatOnly = false;
  template <Element T>
  T operator()(T x, T g) const {
    return x > T{0} ? g : T{0};
  }
};

/// g · (Φ(x) + x·φ(x)): exact GELU's derivative, Φ(x) = erfc(−x/√2)/2, φ the normal density.
struct GeluGrad {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  T operator()(T x, T g) const {
    const double w = x;
    const double cdf = 0.5 * std::erfc(-w * kInvSqrt2);
    const double pdf = kInvSqrt2Pi * std::exp(-0.5 * w * w);
    return static_cast<T>(static_cast<double>(g) * (cdf + w * pdf));
  }
};

/// g · (1 − y²), y = tanh(x).
struct TanhGrad {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  T operator()(T y, T g) const {
    return g * (T{1} - y * y);
  }
};

/// g · y · (1 − y), y = sigmoid(x).
struct SigmoidGrad {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  T operator()(T y, T g) const {
    return g * (y * (T{1} - y));
  }
};

/// g / (2·y), y = √x.
struct SqrtGrad {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  T operator()(T y, T g) const {
    return g / (T{2} * y);
  }
};

// ---- softmax ----------------------------------------------------------------------------------

/// max_j x[j·sx] for n ≥ 1; a quiet NaN if any x_j is NaN; +0 when the largest are ±0. GCC does
/// not vectorise a floating-point max reduction without -ffinite-math-only (with NaN and ±0 its
/// result depends on the order), so the max is an integer one over ordered_bits: exact and
/// independent of the order, so the vectoriser's lanes (4 for f32 with SSE2) cannot change it.
template <std::floating_point T>
[[gnu::always_inline]] inline T softmax_max(const T* x, std::int64_t sx, std::int64_t n) {
  auto m = ordered_bits(x[0]);
  decltype(m) nan = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const T v = x[j * sx];
    const auto o = ordered_bits(v);
    m = m < o ? o : m;
    nan |= v != v;  // NOLINT(misc-redundant-expression): the NaN test that vectorises
  }
  const T largest =
      std::bit_cast<T>(m ^ ((m >> (8 * sizeof(T) - 1)) & std::numeric_limits<decltype(m)>::max()));
  return nan != 0 ? std::numeric_limits<T>::quiet_NaN() : largest;
}

/// The partial sums of a float64 softmax row: e_j goes to lane j mod kSoftmaxLanes, and the lanes
/// combine in the fixed tree ((0+1) + (2+3)) + ((4+5) + (6+7)). The order depends on n alone:
/// not on the build (the runtime is compiled without -ffast-math and with -ffp-contract=off, so
/// GCC keeps the written order whether it vectorises the lanes or not), nor on the thread count or
/// the plan (a row is never split), nor on the kernel set (both call softmax_row). Eight f64 lanes
/// are four SSE2 vectors (two AVX2 ones): independent add chains that hide the adder's latency.
inline constexpr std::int64_t kSoftmaxLanes = 8;

/// A sum and the exact error of the additions that formed it.
template <std::floating_point T>
struct CompensatedSum {
  T sum = 0;
  T err = 0;
};

/// a + b with the error of every addition carried: (a.sum + b.sum, a.err + b.err + its error).
template <std::floating_point T>
[[gnu::always_inline]] inline CompensatedSum<T> combine(CompensatedSum<T> a, CompensatedSum<T> b) {
  const T s = a.sum + b.sum;
  return {s, (a.err + b.err) + two_sum_error(a.sum, b.sum, s)};
}

/// Σ_j e_j for j < n of a float64 row in kSoftmaxLanes lanes, every add carrying its exact error
/// (two_sum_error), and so does the tree: within ~2 f64 roundings of the exact sum for any n and
/// any spread.
[[gnu::always_inline]] inline double softmax_sum(const double* e, std::int64_t n) {
  CompensatedSum<double> lane[kSoftmaxLanes];
  const auto add = [](CompensatedSum<double>& a, double v) {
    const double s = a.sum + v;
    a.err += two_sum_error(a.sum, v, s);
    a.sum = s;
  };
  std::int64_t j = 0;
  for (; j + kSoftmaxLanes <= n; j += kSoftmaxLanes) {
    for (std::int64_t l = 0; l < kSoftmaxLanes; ++l) add(lane[l], e[j + l]);
  }
  for (std::int64_t l = 0; j + l < n; ++l) add(lane[l], e[j + l]);
  const CompensatedSum<double> total =
      combine(combine(combine(lane[0], lane[1]), combine(lane[2], lane[3])),
              combine(combine(lane[4], lane[5]), combine(lane[6], lane[7])));
  return total.sum + total.err;
}

/// The sum of a float32 row's terms, as an unevaluated pair sum + err, in f32: e_j goes to lane
/// j mod kSoftmaxLanesF32 of a block of kSoftmaxSumBlock terms; every lane adds with its exact
/// error (Knuth's two-sum) into a second f32 accumulator; at the end of a block the lanes combine
/// in a fixed tree (lane l with lane l + 8, then l + 4, l + 2, l + 1, each with its error) and
/// the block's pair into the row's, the same way. The order depends on n alone (see
/// kSoftmaxLanes). The lanes are a GCC vector of 16 floats, which each clone lowers to its own
/// registers (one AVX-512 vector, two AVX2 ones, four SSE2 ones) with the same elementwise
/// operations; a block's last partial group is padded with +0, which leaves a lane's pair as it
/// is (s + 0 = s, error 0).
///
/// Error: every addition of the sums is exact with its error; only the error accumulators
/// round. The terms are in [0, 1], so a lane's errors within a block are each ≤ 2^−24 of the
/// block's sum S_b, at most 256 of them: their own rounding is ≤ 256·2^−24·256·2^−24·S_b =
/// 2^−32·S_b, and the tree and the blocks add a few more such; so sum + err is within ~2^−31
/// relative of the exact Σ_j e_j for any n (the widened f64 sum it replaces: n·2^−53).
inline constexpr std::int64_t kSoftmaxLanesF32 = 16;
inline constexpr std::int64_t kSoftmaxSumBlock = 256 * kSoftmaxLanesF32;

[[gnu::always_inline]] inline CompensatedSum<float> softmax_sum_f32(const float* e,
                                                                    std::int64_t n) {
  using Lanes = float __attribute__((vector_size(kSoftmaxLanesF32 * sizeof(float))));
  CompensatedSum<float> total;
  for (std::int64_t b = 0; b < n; b += kSoftmaxSumBlock) {
    const std::int64_t end = std::min(n, b + kSoftmaxSumBlock);
    Lanes sum = {}, err = {};
    const auto add = [&sum, &err](const Lanes& v) {
      const Lanes s = sum + v;
      const Lanes bb = s - sum;
      err += (sum - (s - bb)) + (v - bb);
      sum = s;
    };
    std::int64_t j = b;
    for (; j + kSoftmaxLanesF32 <= end; j += kSoftmaxLanesF32) {
      Lanes v;
      std::memcpy(&v, e + j, sizeof v);
      add(v);
    }
    if (j < end) {
      float rest[kSoftmaxLanesF32] = {};
      std::copy(e + j, e + end, rest);
      Lanes v;
      std::memcpy(&v, rest, sizeof v);
      add(v);
    }
    float lane_sum[kSoftmaxLanesF32], lane_err[kSoftmaxLanesF32];
    std::memcpy(lane_sum, &sum, sizeof sum);
    std::memcpy(lane_err, &err, sizeof err);
    for (std::int64_t width = kSoftmaxLanesF32 / 2; width >= 1; width /= 2) {
      for (std::int64_t l = 0; l < width; ++l) {
        const CompensatedSum<float> c =
            combine<float>({lane_sum[l], lane_err[l]}, {lane_sum[l + width], lane_err[l + width]});
        lane_sum[l] = c.sum;
        lane_err[l] = c.err;
      }
    }
    total = combine(total, {lane_sum[0], lane_err[0]});
  }
  return total;
}

/// The f32 terms e_j = softmax_exp_f32(x_j, m, τ) for j < n, by blocks of kSoftmaxBlock: a block
/// whose every x_j < τ = softmax_live_from(m) is written as zeros without evaluating the
/// exponential — the same bits, since softmax_exp_f32 gives +0 there. Such blocks are common:
/// rows of widely spread logits are nearly one-hot (transformer_large's generated scores span
/// ~2,000: 99.5% of their terms are 0), masked entries are −∞. The test runs on the f32 values
/// (a compare the loop vectorises); a NaN x_j counts as live.
inline constexpr std::int64_t kSoftmaxBlock = 32;

[[gnu::always_inline]] inline void softmax_exps_f32(const float* x, std::int64_t sx, float m,
                                                    float* e, std::int64_t n) {
  const float live_from = softmax_live_from(m);
  for (std::int64_t b = 0; b < n; b += kSoftmaxBlock) {
    const std::int64_t end = std::min(n, b + kSoftmaxBlock);
    std::int32_t live = 0;
    for (std::int64_t j = b; j < end; ++j) live |= !(x[j * sx] < live_from);
    if (live != 0) {
      for (std::int64_t j = b; j < end; ++j) e[j] = softmax_exp_f32(x[j * sx], m, live_from);
    } else {
      for (std::int64_t j = b; j < end; ++j) e[j] = 0.0f;
    }
  }
}

/// softmax_row with the strides as arguments: called with literal unit strides its loops
/// vectorise; the operations and their order are the same for any strides.
template <std::floating_point T>
[[gnu::always_inline]] inline void softmax_row_strided(const T* x, std::int64_t sx, T* r,
                                                       std::int64_t sr, std::int64_t n, T* e) {
  const T m = softmax_max(x, sx, n);
  if constexpr (std::is_same_v<T, float>) {
    softmax_exps_f32(x, sx, m, e, n);
    // 1/Σ as inv + inv_lo, Σ = sum + err: inv = fl(1/sum), 1 − inv·Σ = fma(−inv, sum, 1) (exact)
    // − inv·err, and 1/Σ = inv/(1 − δ) ≈ inv + inv·δ (the δ² left out is < 2^−46).
    const CompensatedSum<float> sum = softmax_sum_f32(e, n);
    const float inv = 1.0f / sum.sum;
    const float delta = fused_multiply_add(-inv, sum.err, fused_multiply_add(-inv, sum.sum, 1.0f));
    const float inv_lo = inv * delta;
    for (std::int64_t j = 0; j < n; ++j) r[j * sr] = fused_multiply_add(e[j], inv, e[j] * inv_lo);
  } else {
    for (std::int64_t j = 0; j < n; ++j) {
      const double d = x[j * sx] - m;
      double v = exp_fast_underflow(d);
      if (v != 0.0) v += v * two_sum_error(x[j * sx], -m, d);  // d finite or NaN here
      e[j] = v;
    }
    const double sum = softmax_sum(e, n);
    for (std::int64_t j = 0; j < n; ++j) r[j * sr] = e[j] / sum;
  }
}

/// One softmax row: r[j·sr] = e^(x_j − m) / Σ_k e^(x_k − m), m = max_j x_j, for j < n (n ≥ 1).
/// `scratch` is working memory (resized here; reuse it across rows).
///
/// Each dtype sums e^(x_j − m) in its own precision with the error of every addition carried,
/// in lanes in a fixed order, and rounds each result once. The difference d = x_j − m is not
/// rounded to T (that would cost |x_j − m|·2^−p relative: 60 f32 ulps on results near e^−80):
///   * f32 takes e^(x_j − m) from softmax_exp_f32 (in f32 lanes, d carried as d + err: ≤ 1.1 ulp),
///     sums the terms in f32 as a pair sum + err (softmax_sum_f32: within ~2^−31 relative), forms
///     1/Σ as a pair inv + inv_lo (within 2^−30) and each result as fma(e_j, inv, e_j·inv_lo):
///     e_j·(1/Σ) rounded once. Nothing branches and nothing widens to f64, so all four loops
///     vectorise in f32 lanes. Each result is within 1.1 f32 ulp of e_j's, plus 2^−30 relative,
///     of the truth, rounded once: ≤ 1.6 ulp.
///   * f64 carries d as d + err (two_sum_error) and takes e^d·(1 + err) from std::exp (through
///     exp_fast_underflow: no errno path below −746, bitwise std::exp otherwise), whose
///     ≤ 0.5-ulp result a branch-free f64 exp (≤ 4.3 ulp) did not match; the sum is compensated
///     (softmax_sum) and the results divided, so the error grows neither with n nor with the
///     spread of x. Its exponential is libm's.
/// A NaN anywhere, a +∞, or a row of −∞ gives NaN in the whole row (the limit is undefined); a
/// −∞ entry among finite ones gives 0.
template <std::floating_point T>
void softmax_row(const T* x, std::int64_t sx, T* r, std::int64_t sr, std::int64_t n,
                 std::vector<T>& scratch) {
  scratch.resize(static_cast<std::size_t>(n));
  if (sx == 1 && sr == 1) {
    softmax_row_strided(x, 1, r, 1, n, scratch.data());
  } else {
    softmax_row_strided(x, sx, r, sr, n, scratch.data());
  }
}

// log Σ_k exp(x_k) of one row of n cells `stride` apart, in float64 with the row maximum
// subtracted first (cross_entropy and its gradient, both kernel sets); ±inf or NaN when the
// maximum is.
template <typename T>
double log_sum_exp(const T* x, std::int64_t stride, std::int64_t n) {
  double m = -INFINITY;
  for (std::int64_t k = 0; k < n; ++k) m = std::max(m, static_cast<double>(x[k * stride]));
  if (!std::isfinite(m)) return m;
  double sum = 0;
  for (std::int64_t k = 0; k < n; ++k) sum += std::exp(static_cast<double>(x[k * stride]) - m);
  return m + std::log(sum);
}

// ---- rounding to integers (floor, ceil, round: ONNX Floor, Ceil, Round) ----------------------
// Exact in both float dtypes. round is half to even: std::nearbyint under the default rounding
// mode (round to nearest even), which Tapestry never changes.

struct Floor {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  [[gnu::always_inline]] T operator()(T x) const {
    return std::floor(x);
  }
};

struct Ceil {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  [[gnu::always_inline]] T operator()(T x) const {
    return std::ceil(x);
  }
};

struct RoundHalfEven {
  static constexpr bool kFloatOnly = true;
  template <std::floating_point T>
  [[gnu::always_inline]] T operator()(T x) const {
    return std::nearbyint(x);
  }
};

// ---- masks: comparisons, boolean logic, where (kernels/masks.yaml) ---------------------------
// A mask is 0/1 in the dtype of the values it was computed from (a Tapestry graph holds no
// boolean tensors); a logical operand is true where it is not 0 (NaN is true, as in numpy).
// Every one is exact: IEEE comparisons and selects, no rounding. Comparisons with a NaN operand
// are false (equal too); −0 equals 0. Written as selects so that their loops vectorise.

/// 1 where a == b, else 0.
struct Equal {
  template <Element T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return a == b ? T{1} : T{0};
  }
};

/// 1 where a < b, else 0.
struct Less {
  template <Element T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return a < b ? T{1} : T{0};
  }
};

/// 1 where a ≤ b, else 0.
struct LessEqual {
  template <Element T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return a <= b ? T{1} : T{0};
  }
};

/// 1 where a > b, else 0.
struct Greater {
  template <Element T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return a > b ? T{1} : T{0};
  }
};

/// 1 where a ≥ b, else 0.
struct GreaterEqual {
  template <Element T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return a >= b ? T{1} : T{0};
  }
};

/// 1 where a ≠ 0 and b ≠ 0, else 0.
struct LogicalAnd {
  template <Element T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return (a != T{0}) & (b != T{0}) ? T{1} : T{0};
  }
};

/// 1 where a ≠ 0 or b ≠ 0, else 0.
struct LogicalOr {
  template <Element T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return (a != T{0}) | (b != T{0}) ? T{1} : T{0};
  }
};

/// 1 where exactly one of a, b is ≠ 0, else 0.
struct LogicalXor {
  template <Element T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return (a != T{0}) != (b != T{0}) ? T{1} : T{0};
  }
};

/// 1 where x = 0, else 0 (NaN is true, so not(NaN) = 0).
struct LogicalNot {
  static constexpr bool kFloatOnly = false;
  template <Element T>
  [[gnu::always_inline]] T operator()(T x) const {
    return x == T{0} ? T{1} : T{0};
  }
};

/// where(cond, a, b): a where cond ≠ 0 (NaN included), else b — a select, so an ±inf or NaN in
/// the branch not taken never reaches the result (unlike a·c + b·(1 − c)). cond may have
/// another dtype than a and b.
struct Where {
  template <Element C, Element T>
  [[gnu::always_inline]] T operator()(C cond, T a, T b) const {
    return cond != C{0} ? a : b;
  }
};

}  // namespace tapestry::runtime::kernels::scalar
