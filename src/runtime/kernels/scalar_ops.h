// Private to the runtime: the scalar formula of every elementwise operation — the one definition
// that both kernel sets evaluate. The reference kernels (elementwise.cpp, softmax.cpp) call these
// once per index point; the fast kernels (fast/elementwise_ops.h, fast/softmax.cpp) call them in
// loops over raw pointers that the compiler vectorises where it can. The two sets therefore
// compute the same bits for every element by construction, not by keeping two copies in step.
//
// Accuracy (docs/runtime.md, "Accuracy of the elementwise kernels"; measured by
// tests/runtime/elementwise_accuracy_test.cpp against a long double evaluation):
//
//   relu, neg, add, sub, mul, div, maximum   exact or correctly rounded (IEEE operations)
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
// 1–3.5 ulp). Multiplies and adds stay separate (multiply_add, not std::fma: see there).
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
//     t² (x²/2 from x's split halves) and corrects its other roundings to first order; f64
//     carries t as t_hi + t_lo and adds the first-order term −t_lo · 2/√π · e^(−t_hi²), and below
//     x = −36 uses the asymptotic series, which keeps the results that are subnormal exact to
//     the last place.
//   * f32 gelu takes erfc from a branch-free fit (gelu_f32) instead of libm's erfc, whose
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
#include <limits>
#include <type_traits>
#include <vector>

#include "kernel_support.h"

namespace tapestry::runtime::kernels::scalar {

// ---- double-double helpers --------------------------------------------------------------------

/// The rounding error of p = fl(a·b): a·b = p + two_product_error(a, b, p) exactly (Dekker's
/// algorithm; a, b finite with |a·b| far from overflow and underflow). The runtime is built with
/// -ffp-contract=off, so every operation below rounds as written.
inline double two_product_error(double a, double b, double p) {
  constexpr double kSplit = 134217729.0;  // 2^27 + 1: splits a double into two 26-bit halves
  const double ca = kSplit * a;
  const double ah = ca - (ca - a);
  const double al = a - ah;
  const double cb = kSplit * b;
  const double bh = cb - (cb - b);
  const double bl = b - bh;
  return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

/// The rounding error of s = fl(a + b): a + b = s + two_sum_error(a, b, s) exactly (Knuth;
/// a, b, s finite).
inline double two_sum_error(double a, double b, double s) {
  const double bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

// 1/√2 = kInvSqrt2 + kInvSqrt2Lo (to 2^−107), 2/√π and 1/√(2π).
inline constexpr double kInvSqrt2 = 0x1.6a09e667f3bcdp-1;
inline constexpr double kInvSqrt2Lo = -0x1.bdd3413b26456p-55;
inline constexpr double kTwoOverSqrtPi = 0x1.20dd750429b6dp+0;
inline constexpr double kInvSqrt2Pi = 0x1.9884533d43651p-2;

/// gelu(x) for x < −36 (f64): x·Φ(x) = −φ(x)·(1 − u + 3u² − 15u³ + …), u = 1/x², φ the normal
/// density (the asymptotic series of Mills' ratio; at |x| ≥ 36 the first term left out is below
/// 2^−68). e^(−x²/2) is e^(−h/2)·(1 − l/2) with x² = h + l exactly, and the one product that may be
/// subnormal comes last, so subnormal results round once.
inline double gelu_tail(double x) {
  if (x < -40.0) return -0.0;  // |gelu(x)| < 2^−1075: rounds to −0 (and x = −∞ gives −0)
  const double u = 1.0 / (x * x);
  constexpr double kCoef[] = {2027025, -135135, 10395, -945, 105, -15, 3, -1};
  double series = kCoef[0];
  for (int k = 1; k < 8; ++k) series = series * u + kCoef[k];
  series = series * u + 1.0;  // 1 − u + 3u² − … + 2027025u⁸
  const double h = x * x;
  const double l = two_product_error(x, x, h);
  const double scale = -kInvSqrt2Pi * (series - 0.5 * l * series);
  return scale * std::exp(-0.5 * h);
}

/// gelu(x) in f64 (see the file comment).
inline double gelu_f64(double x) {
  const double th = -x * kInvSqrt2;
  if (!(x < 0.0)) return 0.5 * x * std::erfc(th);  // erfc ∈ [1, 2]: well conditioned; NaN, +∞
  if (x < -36.0) return gelu_tail(x);
  // t = −x/√2 = th + tl; erfc(th + tl) = erfc(th) − tl·(2/√π)·e^(−th²) + O(tl²·th·e^(−th²)).
  const double tl = two_product_error(-x, kInvSqrt2, th) + (-x) * kInvSqrt2Lo;
  const double erfc_t = std::erfc(th) - tl * kTwoOverSqrtPi * std::exp(-th * th);
  return 0.5 * x * erfc_t;
}

/// `if_negative` when x's sign bit is set (−0 and negative NaNs included), else `otherwise`;
/// without a branch, which random signs mispredict half of the time (f32 sigmoid on N(0, 1)
/// inputs, on this shared 2-core machine: 16–24 ns per element with the branch, 4–5 without).
template <std::floating_point T>
T select_if_negative(T x, T if_negative, T otherwise) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  const Bits mask = Bits{0} - (std::bit_cast<Bits>(x) >> (8 * sizeof(T) - 1));
  return std::bit_cast<T>((std::bit_cast<Bits>(if_negative) & mask) |
                          (std::bit_cast<Bits>(otherwise) & ~mask));
}

/// std::exp(x), without libm's underflow and overflow paths where its result is +0 or +∞
/// anyway: below kExpZeroBelow<T> (f32: e^−104 < 2^−150, f64: e^−746 < 2^−1075, each half the
/// smallest subnormal, so they round to +0) and above kExpInfAbove<T> (f32: e^89 > FLT_MAX, f64:
/// e^710 > DBL_MAX) glibc reports the range error through errno, ~3× the cost of an ordinary
/// exp; softmax rows of widely spread logits and sigmoid of large |x| hit it for most entries.
/// Bitwise equal to std::exp for every x (a test checks every f32 around both bounds).
template <std::floating_point T>
inline constexpr T kExpZeroBelow = std::is_same_v<T, float> ? T{-104} : T{-746};
template <std::floating_point T>
inline constexpr T kExpInfAbove = std::is_same_v<T, float> ? T{89} : T{710};

template <std::floating_point T>
T exp_fast_underflow(T x) {
  if (x < kExpZeroBelow<T>) return T{0};
  if (x > kExpInfAbove<T>) return std::numeric_limits<T>::infinity();
  return std::exp(x);
}

/// a·b + c, rounded twice (the product, then the sum): -ffp-contract=off keeps it two operations
/// in every build, so the reference kernels and each clone of the fast loops
/// (fast/elementwise_vector.cpp) compute the same bits. A std::fma here would be one instruction
/// in the AVX2 and AVX-512 clones but a call to glibc's fma in the reference kernels and the
/// baseline clone (it made the reference f32 gelu 17× slower when these formulas were in f64), and
/// the clones would no longer agree bit for bit.
template <std::floating_point F>
[[gnu::always_inline]] inline F multiply_add(F a, F b, F c) {
  return a * b + c;
}

/// The rounding error of s = fl(a + b) in f32: a + b = s + two_sum_error(a, b, s) exactly.
inline float two_sum_error(float a, float b, float s) {
  const float bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

/// `result`, or x's own NaN (quieted) when x is NaN. A NaN argument reaches both operands of some
/// operations with different signs (k and −k), and which operand's NaN comes out depends on the
/// operand order the compiler picks for each clone (it did with fused multiply-adds, which these
/// formulas once used): so the branch-free functions below return x's NaN itself, the same bits
/// in every kernel set and clone.
template <std::floating_point T, std::floating_point R>
[[gnu::always_inline]] inline R nan_or(T x, R result) {
  return x != x ? static_cast<R>(x + x) : result;  // NOLINT(misc-redundant-expression): NaN test
}

/// x^M for M a power of two, by squaring.
template <std::size_t M, std::floating_point F>
[[gnu::always_inline]] inline F power_of_two_power(F x) {
  if constexpr (M == 1) {
    return x;
  } else {
    const F h = power_of_two_power<M / 2>(x);
    return h * h;
  }
}

/// c[B] + c[B+1]·x + … + c[B+N−1]·x^(N−1) by Estrin's scheme: lo(x) + x^M·hi(x) with M the
/// largest power of two below N, recursively. Its dependency chain is ~log2(N) multiply-adds
/// deep where Horner's is N: in a vectorised loop the core overlaps the independent halves
/// instead of waiting on one chain (an f64 erfc fit took 22 ns per element with Horner).
template <std::size_t B, std::size_t N, std::floating_point F>
[[gnu::always_inline]] inline F estrin(const F* c, F x) {
  if constexpr (N == 1) {
    return c[B];
  } else {
    constexpr std::size_t kM = std::bit_floor(N - 1);
    return multiply_add(power_of_two_power<kM>(x), estrin<B + kM, N - kM>(c, x),
                        estrin<B, kM>(c, x));
  }
}

// ---- float32 lanes ----------------------------------------------------------------------------
// The f32 transcendentals compute in f32, so that a vector holds 16 lanes with AVX-512 (8 with
// AVX2) — twice as many as when they computed in f64 and rounded once. Each is branch-free
// (selects, no libm call) so its loops vectorise, and uses only IEEE adds, multiplies, divides,
// square roots and integer bit operations, no FMA: every kernel set and clone computes the same
// bits. Their errors (a few f32 roundings each, ≤ 1–3.5 ulp) are measured over the whole domain by
// tests/runtime/elementwise_accuracy_test.cpp and tabled in docs/runtime.md.
//
// e^a = 2^k · e^r: k = round(a·log2 e), r = a − k·ln2 by Cody–Waite (k·kLn2HiF is exact for
// |k| < 2^9: kLn2HiF has 15 significant bits; a − k·kLn2HiF is then exact as well, the two being
// within a factor 2 of each other or |k| ≤ 1), |r| ≤ ln2/2 + 2^−9.

inline constexpr float kLog2eF = 0x1.715476p+0f;
inline constexpr float kLn2HiF = 0x1.62e4p-1f;
inline constexpr float kLn2LoF = 0x1.7f7d1cp-20f;  // ln 2 − kLn2HiF, rounded
inline constexpr float kShifterF = 0x1.8p23f;      // adding it rounds to an integer in the low bits

/// k = round(a·log2 e) for |a| < 2^21, as kShifterF + k (an f32 whose low bits hold k).
[[gnu::always_inline]] inline float exp_shifted_f32(float a) {
  return multiply_add(a, kLog2eF, kShifterF);
}

/// The integer k of exp_shifted_f32's result.
[[gnu::always_inline]] inline std::int32_t shifted_integer_f32(float shifted) {
  return std::bit_cast<std::int32_t>(shifted) - std::bit_cast<std::int32_t>(kShifterF);
}

/// e^r − 1 for |r| ≤ 0.35 (the Cody–Waite remainder): r + r²·Q(r), Q the Taylor polynomial of
/// (e^r − 1 − r)/r² of degree 5 (truncation r^8/8! < 2^−27.5 relative to e^r at |r| = 0.35). The
/// sum keeps r exact and adds the small r²·Q(r): no cancellation for small r.
[[gnu::always_inline]] inline float expm1_reduced_f32(float r) {
  static constexpr float kQ[] = {0x1p-1f,        0x1.555556p-3f,  0x1.555556p-5f,
                                 0x1.111112p-7f, 0x1.6c16c2p-10f, 0x1.a01a02p-13f};
  return multiply_add(r * r, estrin<0, std::size(kQ)>(kQ, r), r);
}

/// 2^k for k ∈ [−126, 127], written into the exponent bits.
[[gnu::always_inline]] inline float power_of_two_f32(std::int32_t k) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23);
}

/// m·2^k for k ∈ [−252, 254] and m·2^⌊k/2⌋ normal, rounded once: two exact-power steps, the first
/// exact, so a subnormal (or overflowing) result is rounded by the second multiply alone.
[[gnu::always_inline]] inline float scale_by_power_of_two_f32(float m, std::int32_t k) {
  const std::int32_t half = k >> 1;  // ⌊k/2⌋
  return (m * power_of_two_f32(half)) * power_of_two_f32(k - half);
}

/// The high half of a float's significand (its low 12 bits cleared): the product of two such
/// halves is exact in f32, and x − high_half_f32(x) is exact too (Dekker's split, without FMA).
[[gnu::always_inline]] inline float high_half_f32(float x) {
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) & 0xfffff000u);
}

/// e^a for f32 a ∈ [−104, 89] or NaN: Cody–Waite reduction, 1 + expm1_reduced_f32(r), scaled by
/// 2^k in two steps so that results in the subnormal range (a < −87.3) round once and those above
/// FLT_MAX (a > 88.72) become +∞.
[[gnu::always_inline]] inline float exp_in_range_f32(float a) {
  const float shifted = exp_shifted_f32(a);
  const float k = shifted - kShifterF;
  const float r = multiply_add(-k, kLn2LoF, multiply_add(-k, kLn2HiF, a));
  return scale_by_power_of_two_f32(1.0f + expm1_reduced_f32(r), shifted_integer_f32(shifted));
}

/// e^x for f32 x: exp_in_range_f32 of x clamped to [−104, 89] (e^−104 < 2^−150 rounds to +0 like
/// every smaller result; e^89 > FLT_MAX). −∞ → +0, +∞ → +∞, NaN → NaN. ≤ 1.1 ulp.
[[gnu::always_inline]] inline float exp_f32(float x) {
  float a = x < kExpZeroBelow<float> ? kExpZeroBelow<float> : x;  // NaN stays NaN
  a = a > kExpInfAbove<float> ? kExpInfAbove<float> : a;
  return nan_or(x, exp_in_range_f32(a));
}

/// sigmoid(x) for f32 x: e = e^−|x| (exp_in_range_f32, −|x| clamped to −104: 0 below), then
/// (x < 0 ? e : 1) / (1 + e) — no overflow, and full relative accuracy for x ≪ 0 down to the
/// underflow. ±∞ → 0 and 1, ±0 → 0.5, NaN → NaN.
[[gnu::always_inline]] inline float sigmoid_f32(float x) {
  const float a = -std::fabs(x);
  const float e = exp_in_range_f32(a < kExpZeroBelow<float> ? kExpZeroBelow<float> : a);
  return nan_or(x, select_if_negative(x, e, 1.0f) / (1.0f + e));
}

/// tanh(x) for f32 x: with m = e^(−2|x|) − 1 ∈ (−1, 0], tanh(|x|) = −m / (2 + m), the sign
/// copied from x. m = 2^k·(e^r − 1) + (2^k − 1) from the Cody–Waite reduction, so m ≈ −2|x| keeps
/// full relative accuracy for small |x| (no 1 − e cancellation); 2^k − 1 is exact for k ≥ −24.
/// |x| > 10 is taken as 10 (tanh = 1 − 4e−9 rounds to 1). ±0 → ±0, ±∞ → ±1, NaN → NaN.
[[gnu::always_inline]] inline float tanh_f32(float x) {
  float a = -2.0f * std::fabs(x);
  a = a < -20.0f ? -20.0f : a;
  const float shifted = exp_shifted_f32(a);
  const float k = shifted - kShifterF;
  const float r = multiply_add(-k, kLn2LoF, multiply_add(-k, kLn2HiF, a));
  const float two_k = power_of_two_f32(shifted_integer_f32(shifted));
  const float m = multiply_add(two_k, expm1_reduced_f32(r), two_k - 1.0f);
  return nan_or(x, std::copysign(-m / (2.0f + m), x));
}

/// gelu(x) = x·Φ(x) for f32 x, with Φ(x) = erfc(z)/2 for x < 0 and 1 − erfc(z)/2 otherwise,
/// z = |x|/√2 (no 1 + erf(x/√2) cancellation for x ≪ 0). erfc(z) = t·e^(P(u) − z²), t = 2/(2 + z),
/// u = 2t − 1, P a degree-10 fit of log(erfc(z)/t) + z² on z ∈ [0, 15/√2] (absolute error
/// 0.15·2^−24 with its f32 coefficients; the constant term carried as hi + lo). Three things keep
/// the f32 evaluation accurate where erfc is ill-conditioned (a relative error δ in z costs
/// ≈ 2z²·δ in erfc(z): 200 ulp at x = −14):
///   * z² is never rounded: z² = x²/2 with x² = h + l (h the square of x's high half, exact;
///     l = x_lo·(x_hi + x) the small rest), and h, l enter the Cody–Waite reduction separately;
///   * t's own rounding (2 + z and the division: up to ~1 ulp, which erfc's slope in t would
///     amplify ×1.2–2.3) is measured exactly — ρ = 2 − t·(2 + z) by the split product, with
///     z's rounding from 1/√2's split — as the z′ = 2/t − 2 the fit was evaluated at, and
///     corrected to first order, erfc(z) ≈ erfc(z′)·e^(−g·(z′ − z)) with g = d log erfcx/dz
///     = 2z − (2/√π)/erfcx(z) from a cubic in u (within 3.7%: the correction is ~2^−24);
///   * 2^k multiplies last, after x/2, so results in the subnormal range (x ∈ [−14.1, −13.2])
///     round once.
/// |x| > 15 is taken as 15 inside erfc (erfc(15/√2) < 1e−49: gelu(x) rounds to −0 below
/// x ≈ −14.1 and to x above ≈ 5.9). −∞ → −0, +∞ → +∞, ±0 → ±0, NaN → NaN. ≤ 3.5 ulp.
[[gnu::always_inline]] inline float gelu_f32(float x) {
  static constexpr float kP[] = {0.0f,
                                 0x1.5864b2p-1f,
                                 0x1.83d4c6p-5f,
                                 -0x1.802b50p-5f,
                                 -0x1.433088p-7f,
                                 0x1.20facap-7f,
                                 0x1.bf8784p-10f,
                                 -0x1.2c65fcp-9f,
                                 -0x1.538426p-15f,
                                 0x1.0bf22ap-11f,
                                 -0x1.219e20p-13f};
  constexpr float kP0Hi = -0x1.57f564p-1f;  // P's constant term, hi + lo
  constexpr float kP0Lo = -0x1.5cdafcp-26f;
  constexpr float kInvSqrt2F = 0x1.6a09e6p-1f;
  constexpr float kInvSqrt2Hi = 0x1.6ap-1f;       // 1/√2's high half
  constexpr float kInvSqrt2Lo = 0x1.3cccfep-14f;  // 1/√2 − kInvSqrt2Hi, rounded
  const float xc = x < -15.0f ? -15.0f : x;       // NaN stays NaN
  float w = std::fabs(xc);
  w = w > 15.0f ? 15.0f : w;
  const float w_hi = high_half_f32(w);
  const float w_lo = w - w_hi;
  // z = w/√2 − z_err; d = 2 + z − d_err (exact: d − 2 is, and z − (d − 2) by Sterbenz).
  const float z = w * kInvSqrt2F;
  const float z_err = ((w_hi * kInvSqrt2Hi - z) + w_hi * kInvSqrt2Lo) + w_lo * kInvSqrt2F;
  const float d = 2.0f + z;
  const float d_err = z - (d - 2.0f);
  const float t = 2.0f / d;
  // ρ = 2 − t·d: t_hi·d_hi is exact and within 2^−11 of 2, so 2 − t_hi·d_hi is exact too.
  const float t_hi = high_half_f32(t);
  const float d_hi = high_half_f32(d);
  const float rho = (2.0f - t_hi * d_hi) - (t_hi * (d - d_hi) + (t - t_hi) * d);
  // z′ − w/√2, z′ = 2/t − 2 = z + (ρ − t·d_err)/t, with 1/t ≈ d/2.
  const float dz = (rho - t * d_err) * (0.5f * d) - z_err;
  static constexpr float kG[] = {-0x1.ad304p-2f, -0x1.3a1b08p-1f, -0x1.4d79f8p-3f, 0x1.0b13a4p-4f};
  const float u = 2.0f * t - 1.0f;
  const float g = estrin<0, std::size(kG)>(kG, u);
  // The exponent P(u) − z² − g·dz = P(u) − h/2 − l/2 − g·dz, reduced by k·ln2 without rounding h.
  const float h = w_hi * w_hi;
  const float l = w_lo * (w_hi + w);
  const float p = estrin<0, std::size(kP)>(kP, u) + kP0Hi;
  const float shifted = exp_shifted_f32(multiply_add(-0.5f, h, p));
  const float k = shifted - kShifterF;
  const float r = (multiply_add(-k, kLn2HiF, -0.5f * h) + p) +
                  (multiply_add(-k, kLn2LoF, -0.5f * l) + (kP0Lo - g * dz));
  // y = x/2·erfc(z) (x clamped to ±15) = q·e^r·2^k, q = x/2·t, summed as q + q·(e^r − 1): two
  // roundings fewer than rounding e^r and t·e^r first. gelu(x) = y for x < 0, x − y otherwise;
  const float q = (0.5f * select_if_negative(x, xc, x > 15.0f ? 15.0f : x)) * t;
  const float y = scale_by_power_of_two_f32(multiply_add(q, expm1_reduced_f32(r), q),
                                            shifted_integer_f32(shifted));
  // y takes x's sign (for x = −0, q + q·(e^r − 1) is −0 + (+0) = +0).
  return nan_or(x, select_if_negative(x, std::copysign(y, x), x - y));
}

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

/// The bits of x as a signed integer in the order of the values: for x, y not NaN, x < y ⇔
/// ordered_bits(x) < ordered_bits(y), and −0 < +0. IEEE floats are sign-magnitude, so a negative
/// x has its magnitude bits flipped: −1.0f = 0xbf800000 → −0x3f800001 (as int32), −0 → −1,
/// +0 → 0. The map is its own inverse.
template <std::floating_point T>
[[gnu::always_inline]] inline auto ordered_bits(T x) {
  using Int = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  const Int i = std::bit_cast<Int>(x);
  return i ^ ((i >> (8 * sizeof(T) - 1)) & std::numeric_limits<Int>::max());
}

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

/// The partial sums of a softmax row: e_j goes to lane j mod kSoftmaxLanes, and the lanes
/// combine in the fixed tree ((0+1) + (2+3)) + ((4+5) + (6+7)). The order depends on n alone:
/// not on the build (the runtime is compiled without -ffast-math and with -ffp-contract=off, so
/// GCC keeps the written order whether it vectorises the lanes or not), nor on the thread count or
/// the plan (a row is never split), nor on the kernel set (both call softmax_row). Eight f64 lanes
/// are four SSE2 vectors (two AVX2 ones): independent add chains that hide the adder's latency.
inline constexpr std::int64_t kSoftmaxLanes = 8;

/// A sum and the exact error of the additions that formed it.
struct CompensatedSum {
  double sum = 0.0;
  double err = 0.0;
};

/// Σ_j e_j for j < n in kSoftmaxLanes lanes. Plain f64 adds for f32 rows (terms in [0, 1], one of
/// them 1: within n·2^−53 relative, 2^−29 at n = 2^24, far below an f32 ulp); for f64 rows every
/// add carries its exact error (two_sum_error), and so does the tree, so the result is within
/// ~2 f64 roundings of the exact sum for any n and any spread.
template <bool kCompensated>
[[gnu::always_inline]] inline double softmax_sum(const double* e, std::int64_t n) {
  CompensatedSum lane[kSoftmaxLanes];
  const auto add = [](CompensatedSum& a, double v) {
    const double s = a.sum + v;
    if constexpr (kCompensated) a.err += two_sum_error(a.sum, v, s);
    a.sum = s;
  };
  std::int64_t j = 0;
  for (; j + kSoftmaxLanes <= n; j += kSoftmaxLanes) {
    for (std::int64_t l = 0; l < kSoftmaxLanes; ++l) add(lane[l], e[j + l]);
  }
  for (std::int64_t l = 0; j + l < n; ++l) add(lane[l], e[j + l]);
  const auto combine = [](CompensatedSum a, CompensatedSum b) {
    const double s = a.sum + b.sum;
    if constexpr (!kCompensated) return CompensatedSum{s, 0.0};
    return CompensatedSum{s, (a.err + b.err) + two_sum_error(a.sum, b.sum, s)};
  };
  const CompensatedSum total =
      combine(combine(combine(lane[0], lane[1]), combine(lane[2], lane[3])),
              combine(combine(lane[4], lane[5]), combine(lane[6], lane[7])));
  return total.sum + total.err;
}

/// The smallest f32 τ whose term is live, fl(τ − m) ≥ −104 in f64 (the rounding is monotone, so
/// x_j < τ ⇔ x_j − m < −104 in f64; softmax_exp_f32 gives +0 exactly there): found from
/// f32(m − 104) in an ulp or two. m = +∞ gives τ = +∞ (finite x_j − ∞ = −∞: dead); m NaN or −∞
/// gives −∞ (every d is NaN).
inline float softmax_live_from(float m) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (!(m > -kInf)) return -kInf;
  const auto live = [m](float t) {
    return !(static_cast<double>(t) - static_cast<double>(m) < kExpZeroBelow<float>);
  };
  auto t = static_cast<float>(static_cast<double>(m) + kExpZeroBelow<float>);
  // Both loops end: m is finite or +∞ here, so t = −∞ is dead (−∞ − m = −∞) and t = m is live
  // (m − m = 0, +∞ − +∞ = NaN).
  while (live(t)) t = std::nextafter(t, -kInf);
  while (!live(t)) t = std::nextafter(t, kInf);
  return t;
}

/// e^(x − m) for an f32 softmax term in f32 lanes: +0 where x < live_from =
/// softmax_live_from(m) (the true term e^(x − m)/Σ < 2^−150 rounds to +0: x − m < −104); else
/// d = x − m carried as d + err (two-sum: exact, so no |d|·2^−24 relative error from rounding d —
/// 60 ulp near e^−80), reduced as (d − k·ln2_hi) + (err − k·ln2_lo), and 2^k·e^r as exp_f32's
/// (≤ 1.1 ulp; subnormal from d < −87.3, rounded once). A live d is ≥ −104.0001 or NaN (x or m
/// NaN, or x = m = +∞), and NaN stays NaN.
[[gnu::always_inline]] inline float softmax_exp_f32(float x, float m, float live_from) {
  const float d = x - m;
  const float err = two_sum_error(x, -m, d);
  const float shifted = exp_shifted_f32(d);
  const float k = shifted - kShifterF;
  const float r = multiply_add(-k, kLn2HiF, d) + multiply_add(-k, kLn2LoF, err);
  const float e =
      scale_by_power_of_two_f32(1.0f + expm1_reduced_f32(r), shifted_integer_f32(shifted));
  return x < live_from ? 0.0f : nan_or(d, e);
}

/// The f32 terms e_j = softmax_exp_f32(x_j, m, τ) for j < n, widened to f64 for the sum, by
/// blocks of kSoftmaxBlock: a block whose every x_j < τ = softmax_live_from(m) is written as
/// zeros without evaluating the exponential — the same bits, since softmax_exp_f32 gives +0
/// there. Such blocks are common: rows of widely spread logits are nearly one-hot
/// (transformer_large's generated scores span ~2,000: 99.5% of their terms are 0), masked entries
/// are −∞. The test runs on the f32 values (a compare the loop vectorises); a NaN x_j counts as
/// live.
inline constexpr std::int64_t kSoftmaxBlock = 32;

[[gnu::always_inline]] inline void softmax_exps_f32(const float* x, std::int64_t sx, float m,
                                                    double* e, std::int64_t n) {
  const float live_from = softmax_live_from(m);
  for (std::int64_t b = 0; b < n; b += kSoftmaxBlock) {
    const std::int64_t end = std::min(n, b + kSoftmaxBlock);
    std::int32_t live = 0;
    for (std::int64_t j = b; j < end; ++j) live |= !(x[j * sx] < live_from);
    if (live != 0) {
      for (std::int64_t j = b; j < end; ++j) e[j] = softmax_exp_f32(x[j * sx], m, live_from);
    } else {
      for (std::int64_t j = b; j < end; ++j) e[j] = 0.0;
    }
  }
}

/// softmax_row with the strides as arguments: called with literal unit strides its loops
/// vectorise; the operations and their order are the same for any strides.
template <std::floating_point T>
[[gnu::always_inline]] inline void softmax_row_strided(const T* x, std::int64_t sx, T* r,
                                                       std::int64_t sr, std::int64_t n, double* e) {
  const T m = softmax_max(x, sx, n);
  if constexpr (std::is_same_v<T, float>) {
    softmax_exps_f32(x, sx, m, e, n);
    const double inverse = 1.0 / softmax_sum<false>(e, n);
    for (std::int64_t j = 0; j < n; ++j) r[j * sr] = static_cast<float>(e[j] * inverse);
  } else {
    for (std::int64_t j = 0; j < n; ++j) {
      const double d = x[j * sx] - m;
      double v = exp_fast_underflow(d);
      if (v != 0.0) v += v * two_sum_error(x[j * sx], -m, d);  // d finite or NaN here
      e[j] = v;
    }
    const double sum = softmax_sum<true>(e, n);
    for (std::int64_t j = 0; j < n; ++j) r[j * sr] = e[j] / sum;
  }
}

/// One softmax row: r[j·sr] = e^(x_j − m) / Σ_k e^(x_k − m), m = max_j x_j, for j < n (n ≥ 1).
/// `scratch` is working memory (resized here; reuse it across rows).
///
/// Both dtypes sum e^(x_j − m) in f64 and round each result once; the sum runs in
/// kSoftmaxLanes lanes in a fixed order. The difference d = x_j − m is not rounded to T (that
/// would cost |x_j − m|·2^−p relative: 60 f32 ulps on results near e^−80):
///   * f32 takes e^(x_j − m) from softmax_exp_f32 (in f32 lanes, d carried as d + err: ≤ 1.1 ulp),
///     widens it to f64 and multiplies by 1/Σ (two f64 roundings, 2^−52, instead of one
///     division: the f32 result has 29 bits to spare). Nothing branches, so all four loops
///     vectorise. Each result is within 1.1 f32 ulp + n·2^−53 relative of the truth, rounded once:
///     ≤ 1.6 ulp + n·2^−29 ulp.
///   * f64 carries d as d + err (two_sum_error) and takes e^d·(1 + err) from std::exp (through
///     exp_fast_underflow: no errno path below −746, bitwise std::exp otherwise), whose
///     ≤ 0.5-ulp result a branch-free f64 exp (≤ 4.3 ulp) did not match; the sum is compensated
///     (softmax_sum<true>) and the results divided, so the error grows neither with n nor with
///     the spread of x. Its max and sum loops are the same as f32's; its exponential is libm's.
/// A NaN anywhere, a +∞, or a row of −∞ gives NaN in the whole row (the limit is undefined); a
/// −∞ entry among finite ones gives 0.
template <std::floating_point T>
void softmax_row(const T* x, std::int64_t sx, T* r, std::int64_t sr, std::int64_t n,
                 std::vector<double>& scratch) {
  scratch.resize(static_cast<std::size_t>(n));
  if (sx == 1 && sr == 1) {
    softmax_row_strided(x, 1, r, 1, n, scratch.data());
  } else {
    softmax_row_strided(x, sx, r, sr, n, scratch.data());
  }
}

// ---- moments ----------------------------------------------------------------------------------

/// Σ_j x[j·sx] for j < n in float64, ascending j; f64 with Neumaier's compensation, so the
/// error does not grow with n (f32 values carry 29 spare bits in f64: n ≤ 2^29 sums stay within
/// one f64 rounding of the exact sum per term's ulp, far below an f32 ulp). A sum that is ±inf
/// or NaN is returned as it is: its compensation (inf − inf) would turn −inf into NaN.
template <std::floating_point T>
double row_sum(const T* x, std::int64_t sx, std::int64_t n) {
  double sum = 0.0, compensation = 0.0;
  for (std::int64_t j = 0; j < n; ++j) {
    const double v = x[j * sx];
    const double s = sum + v;
    if constexpr (std::is_same_v<T, double>)
      compensation += std::fabs(sum) >= std::fabs(v) ? (sum - s) + v : (v - s) + sum;
    sum = s;
  }
  return std::isfinite(sum) ? sum + compensation : sum;
}

/// The mean of a row of n ≥ 1 values, in float64.
template <std::floating_point T>
double row_mean(const T* x, std::int64_t sx, std::int64_t n) {
  return row_sum(x, sx, n) / static_cast<double>(n);
}

/// The population variance Σ_j (x_j − m)² / n of a row of n ≥ 1 values, m its mean: two passes
/// in float64 (no E[x²] − m² cancellation). An error δ in m adds only δ² (Σ(x_j − m) = 0).
template <std::floating_point T>
double row_variance(const T* x, std::int64_t sx, std::int64_t n) {
  const double m = row_mean(x, sx, n);
  double sum = 0.0, compensation = 0.0;
  for (std::int64_t j = 0; j < n; ++j) {
    const double d = static_cast<double>(x[j * sx]) - m;
    const double v = d * d;
    const double s = sum + v;
    compensation += (sum >= v) ? (sum - s) + v : (v - s) + sum;  // both terms ≥ 0
    sum = s;
  }
  return (std::isfinite(sum) ? sum + compensation : sum) / static_cast<double>(n);
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

}  // namespace tapestry::runtime::kernels::scalar
