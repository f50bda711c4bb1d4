// Private to the runtime: the scalar formulas of the elementwise operations that both the CPU and
// the GPU evaluate — the double-double helpers, the float32 lanes (exp, sigmoid, tanh, gelu), f64
// gelu and the softmax terms. scalar_ops.h builds the kernels' functors on them; the CUDA kernels
// (src/gpu/kernels/) call them from device code, so the GPU computes the CPU's formulas and meets
// the same ulp bounds (CUDA's own expf and erfcf are less accurate than the bars).
//
// This header depends on the standard library alone, so nvcc can compile it: TAPESTRY_HD is
// `__host__ __device__` under nvcc and empty for the host compiler. Both compile without
// contraction (-ffp-contract=off; nvcc --fmad=false), so every operation rounds as written and a
// float32-lane function gives the same bits on both. The f64 functions that call the C library
// (std::exp, std::erfc) get CUDA's device versions on the GPU: within CUDA's documented ulp bounds
// (exp 1 ulp, erfc 4 ulp), not bitwise the same as glibc's.
#pragma once

#include <bit>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>

#ifdef __CUDACC__
#define TAPESTRY_HD __host__ __device__
#else
#define TAPESTRY_HD
#endif

namespace tapestry::runtime::kernels::scalar {

// ---- double-double helpers --------------------------------------------------------------------

/// The rounding error of p = fl(a·b): a·b = p + two_product_error(a, b, p) exactly (Dekker's
/// algorithm; a, b finite with |a·b| far from overflow and underflow). The runtime is built with
/// -ffp-contract=off, so every operation below rounds as written.
TAPESTRY_HD inline double two_product_error(double a, double b, double p) {
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
TAPESTRY_HD inline double two_sum_error(double a, double b, double s) {
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
TAPESTRY_HD inline double gelu_tail(double x) {
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
TAPESTRY_HD inline double gelu_f64(double x) {
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
TAPESTRY_HD T select_if_negative(T x, T if_negative, T otherwise) {
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
TAPESTRY_HD T exp_fast_underflow(T x) {
  if (x < kExpZeroBelow<T>) return T{0};
  if (x > kExpInfAbove<T>) return std::numeric_limits<T>::infinity();
  return std::exp(x);
}

/// a·b + c, rounded twice (the product, then the sum): -ffp-contract=off keeps it two operations
/// in every build, so the reference kernels and each clone of the fast loops
/// (fast/elementwise_vector.cpp) compute the same bits. What must never happen is a contraction
/// the compiler applies in one instantiation and not another; an explicit single rounding is
/// fused_multiply_add below (exp_f32, tanh_f32 and sigmoid_f32 keep this form, in which their
/// bounds were measured).
template <std::floating_point F>
[[gnu::always_inline]] TAPESTRY_HD inline F multiply_add(F a, F b, F c) {
  return a * b + c;
}

/// a·b + c rounded once (IEEE fusedMultiplyAdd): the exact product and sum, one rounding. It is
/// correctly rounded wherever it runs, so every kernel set and clone still computes the same
/// bits: one instruction in the AVX2 and AVX-512 clones (their targets enable FMA), a call to
/// the C library's fmaf/fma in the reference kernels and the baseline clone (glibc's is correctly
/// rounded; on a CPU with FMA its ifunc resolves to the instruction, elsewhere to a software
/// emulation), the fmaf instruction under nvcc. Its point is the exact rest of a product,
/// fused_multiply_add(a, b, −fl(a·b)) = a·b − fl(a·b), and an exact division remainder,
/// fused_multiply_add(−fl(c/d), d, c), each one operation (without FMA: a 12-bit split,
/// ~6 operations). Example: fused_multiply_add(1 + 2^−12, 1 + 2^−12, −(1 + 2^−11)) = 2^−24
/// (multiply_add gives 0).
template <std::floating_point F>
[[gnu::always_inline]] TAPESTRY_HD inline F fused_multiply_add(F a, F b, F c) {
  return std::fma(a, b, c);
}

/// The rounding error of s = fl(a + b) in f32: a + b = s + two_sum_error(a, b, s) exactly.
TAPESTRY_HD inline float two_sum_error(float a, float b, float s) {
  const float bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

/// `result`, or x's own NaN (quieted) when x is NaN. A NaN argument reaches both operands of some
/// operations with different signs (k and −k), and which operand's NaN comes out depends on the
/// operand order the compiler picks for each clone (it did with fused multiply-adds, which these
/// formulas once used): so the branch-free functions below return x's NaN itself, the same bits
/// in every kernel set and clone.
template <std::floating_point T, std::floating_point R>
[[gnu::always_inline]] TAPESTRY_HD inline R nan_or(T x, R result) {
  return x != x ? static_cast<R>(x + x) : result;  // NOLINT(misc-redundant-expression): NaN test
}

/// x^M for M a power of two, by squaring.
template <std::size_t M, std::floating_point F>
[[gnu::always_inline]] TAPESTRY_HD inline F power_of_two_power(F x) {
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
[[gnu::always_inline]] TAPESTRY_HD inline F estrin(const F* c, F x) {
  if constexpr (N == 1) {
    return c[B];
  } else {
    constexpr std::size_t kM = std::bit_floor(N - 1);
    return multiply_add(power_of_two_power<kM>(x), estrin<B + kM, N - kM>(c, x),
                        estrin<B, kM>(c, x));
  }
}

/// c[0] + c[1]·x + … + c[N−1]·x^(N−1) by Horner's scheme with fused_multiply_add: N − 1
/// operations (Estrin's needs the powers of x besides); in a long formula whose loop is bound by
/// the multiply-add pipes rather than by latency (gelu_f32), the fewer operations win.
template <std::size_t N, std::floating_point F>
[[gnu::always_inline]] TAPESTRY_HD inline F horner(const F* c, F x) {
  F acc = c[N - 1];
  for (std::size_t i = N - 1; i-- > 0;) acc = fused_multiply_add(acc, x, c[i]);
  return acc;
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
[[gnu::always_inline]] TAPESTRY_HD inline float exp_shifted_f32(float a) {
  return multiply_add(a, kLog2eF, kShifterF);
}

/// The integer k of exp_shifted_f32's result.
[[gnu::always_inline]] TAPESTRY_HD inline std::int32_t shifted_integer_f32(float shifted) {
  return std::bit_cast<std::int32_t>(shifted) - std::bit_cast<std::int32_t>(kShifterF);
}

/// e^r − 1 for |r| ≤ 0.35 (the Cody–Waite remainder): r + r²·Q(r). The sum keeps r exact and
/// adds the small r²·Q(r): no cancellation for small r.
///   * kFused = false (exp_f32, sigmoid_f32, tanh_f32): Q the Taylor polynomial of
///     (e^r − 1 − r)/r² of degree 5 (truncation r^8/8! < 2^−27.5 relative to e^r at |r| = 0.35),
///     by Estrin's scheme with multiply_add;
///   * kFused = true (softmax_exp_f32): Q a minimax fit of degree 4 (2^−27.3 relative to e^r over
///     |r| ≤ 0.35), by Horner's scheme with fused_multiply_add: 6 operations instead of 13.
template <bool kFused = false>
[[gnu::always_inline]] TAPESTRY_HD inline float expm1_reduced_f32(float r) {
  if constexpr (kFused) {
    static constexpr float kQ[] = {0x1p-1f, 0x1.555488p-3f, 0x1.555454p-5f, 0x1.124136p-7f,
                                   0x1.6dbc4cp-10f};
    return fused_multiply_add(r * r, horner<std::size(kQ)>(kQ, r), r);
  } else {
    static constexpr float kQ[] = {0x1p-1f,        0x1.555556p-3f,  0x1.555556p-5f,
                                   0x1.111112p-7f, 0x1.6c16c2p-10f, 0x1.a01a02p-13f};
    return multiply_add(r * r, estrin<0, std::size(kQ)>(kQ, r), r);
  }
}

/// 2^k for k ∈ [−126, 127], written into the exponent bits.
[[gnu::always_inline]] TAPESTRY_HD inline float power_of_two_f32(std::int32_t k) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23);
}

/// m·2^k for k ∈ [−252, 254] and m·2^⌊k/2⌋ normal, rounded once: two exact-power steps, the first
/// exact, so a subnormal (or overflowing) result is rounded by the second multiply alone.
[[gnu::always_inline]] TAPESTRY_HD inline float scale_by_power_of_two_f32(float m, std::int32_t k) {
  const std::int32_t half = k >> 1;  // ⌊k/2⌋
  return (m * power_of_two_f32(half)) * power_of_two_f32(k - half);
}

/// e^a for f32 a ∈ [−104, 89] or NaN: Cody–Waite reduction, 1 + expm1_reduced_f32(r), scaled by
/// 2^k in two steps so that results in the subnormal range (a < −87.3) round once and those above
/// FLT_MAX (a > 88.72) become +∞.
[[gnu::always_inline]] TAPESTRY_HD inline float exp_in_range_f32(float a) {
  const float shifted = exp_shifted_f32(a);
  const float k = shifted - kShifterF;
  const float r = multiply_add(-k, kLn2LoF, multiply_add(-k, kLn2HiF, a));
  return scale_by_power_of_two_f32(1.0f + expm1_reduced_f32(r), shifted_integer_f32(shifted));
}

/// e^x for f32 x: exp_in_range_f32 of x clamped to [−104, 89] (e^−104 < 2^−150 rounds to +0 like
/// every smaller result; e^89 > FLT_MAX). −∞ → +0, +∞ → +∞, NaN → NaN. ≤ 1.1 ulp.
[[gnu::always_inline]] TAPESTRY_HD inline float exp_f32(float x) {
  float a = x < kExpZeroBelow<float> ? kExpZeroBelow<float> : x;  // NaN stays NaN
  a = a > kExpInfAbove<float> ? kExpInfAbove<float> : a;
  return nan_or(x, exp_in_range_f32(a));
}

/// sigmoid(x) for f32 x: e = e^−|x| (exp_in_range_f32, −|x| clamped to −104: 0 below), then
/// (x < 0 ? e : 1) / (1 + e) — no overflow, and full relative accuracy for x ≪ 0 down to the
/// underflow. ±∞ → 0 and 1, ±0 → 0.5, NaN → NaN.
[[gnu::always_inline]] TAPESTRY_HD inline float sigmoid_f32(float x) {
  const float a = -std::fabs(x);
  const float e = exp_in_range_f32(a < kExpZeroBelow<float> ? kExpZeroBelow<float> : a);
  return nan_or(x, select_if_negative(x, e, 1.0f) / (1.0f + e));
}

/// tanh(x) for f32 x: with m = e^(−2|x|) − 1 ∈ (−1, 0], tanh(|x|) = −m / (2 + m), the sign
/// copied from x. m = 2^k·(e^r − 1) + (2^k − 1) from the Cody–Waite reduction, so m ≈ −2|x| keeps
/// full relative accuracy for small |x| (no 1 − e cancellation); 2^k − 1 is exact for k ≥ −24.
/// |x| > 10 is taken as 10 (tanh = 1 − 4e−9 rounds to 1). ±0 → ±0, ±∞ → ±1, NaN → NaN.
[[gnu::always_inline]] TAPESTRY_HD inline float tanh_f32(float x) {
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
/// z = w/√2, w = |x| (no 1 + erf(x/√2) cancellation for x ≪ 0). erfc(z) = τ·e^(F − w²/2) with
/// τ ≈ 3/(3 + w) and F = σ·(c0 + s·R(s))/2, σ = 2 − 2τ ∈ [0, 5/3], s = 1 − σ: a fit of
/// log(erfc(z)/τ) + z² on w ∈ [0, 14.5] (R of degree 8; absolute error 2^−26.5 with its f32
/// coefficients), exactly 0 at w = 0 and accurate relative to F near it. erfc is ill-conditioned
/// for x ≪ 0 (a relative error δ in w costs ≈ w²·δ in erfc: 200 ulp at x = −14), so every
/// rounding on the way to the exponent is measured exactly with fused multiply-adds and put back:
///   * w² is never rounded: H = fl(w·w) and the rest L = w·w − H (one FMA, exact) enter the
///     Cody–Waite reduction separately (the reduction runs on twice the exponent, 2F − H − L,
///     so that no halving costs a multiply);
///   * t = 3/(3 + w) is rounded (3 + w and the division), and τ is t rounded once more to a
///     multiple of 2^−24 (2^−23 above 1/2), so that σ and s are exact; the fit is evaluated at
///     the w′ that τ stands for exactly, 3/(3 + w′) = τ. w′ − w = ρ/τ − ε with ρ = 3 − τ·d (one
///     FMA: exact, ρ is tiny) and ε = 3 + w − d (exact: d − 3 is), ≈ (ρ·d − 3ε)/3; erfc at w
///     follows to first order, erfc(z) ≈ erfc(z′)·e^(−G·(w′ − w)), G = d log erfcx(w/√2)/dw
///     from a cubic in s (within 0.0013 absolute: the correction is ≤ 2^−17 of the exponent);
///   * F's big terms enter the reduced argument one FMA at a time (σ·c0, then σ·s·R), so they
///     are rounded at its size (< 0.7), not at F's (up to 1.14);
///   * the result is q·(2 + E)·2^−63 with q = w·(τ·2^(k+61)) (2^(k+61) added to τ's exponent
///     bits: τ ≥ 1/6 and k ≥ −170 keep it normal) and E = 2(e^(r/2) − 1), so the only rounding
///     that can land in the subnormal range (x ∈ [−14.4, −13.2]) is the last multiply.
/// |x| > 14.5 is taken as 14.5 inside erfc (gelu(x) rounds to −0 below x ≈ −14.4, and to x
/// above ≈ 5.9). −∞ → −0, +∞ → +∞, ±0 → ±0, NaN → NaN. ≤ 3.5 ulp (measured 1.94).
/// 32 multiplies and FMAs, ~30 other operations and a division per 16 lanes (the same formula
/// without FMA, computing the exact products from 12-bit halves, took ~130 operations).
[[gnu::always_inline]] TAPESTRY_HD inline float gelu_f32(float x) {
  static constexpr float kR[] = {-0x1.763550p-5f, 0x1.8e6634p-4f,   0x1.b74b62p-7f,
                                 -0x1.0ebb26p-6f, -0x1.6388fep-9f,  0x1.f7b408p-9f,
                                 0x1.2dd176p-12f, -0x1.9f70aep-11f, 0x1.e0d458p-14f};
  constexpr float kC0 = -0x1.715f84p+0f;
  // (2/3)·G(s); and E with 2(e^(v/2) − 1) = v + v²·E(v) on |v| ≤ 0.7 (a minimax fit, 2^−27.3
  // relative to e^(v/2)).
  static constexpr float kG[] = {-0x1.840b16p-3f, -0x1.2372dep-2f, -0x1.5b1808p-4f, 0x1.aa91dap-6f};
  static constexpr float kE[] = {0x1p-2f, 0x1.555488p-5f, 0x1.555454p-8f, 0x1.124136p-11f,
                                 0x1.6dbc4cp-15f};
  constexpr float kC = 3.0f;  // t = kC/(kC + w)
  // w = min(|x|, 14.5) as an integer min of the bits (NaN gives 14.5; nan_or returns x's NaN).
  const std::uint32_t w_bits = std::bit_cast<std::uint32_t>(x) & 0x7fffffffu;
  const float w = std::bit_cast<float>(w_bits < 0x41680000u ? w_bits : 0x41680000u);
  const float d = kC + w;
  const float eps = w - (d - kC);
  const float tau = (kC / d + 0.5f) - 0.5f;
  const float sigma = (1.0f - tau) + (1.0f - tau);
  const float s = 1.0f - sigma;
  const float rho = fused_multiply_add(-tau, d, kC);
  const float dw3 = fused_multiply_add(rho, d, -((eps + eps) + eps));  // 3·(w′ − w)
  const float g = horner<std::size(kG)>(kG, s);
  const float u = s * horner<std::size(kR)>(kR, s);
  // Twice the exponent, 2F − w² − 2G·(w′ − w) = σ·c0 + σ·u − H − L − g·dw3, reduced by 2k·ln2.
  const float big = w * w;
  const float rest = fused_multiply_add(w, w, -big);
  const float shifted =
      fused_multiply_add(fused_multiply_add(sigma, kC0 + u, -big), 0.5f * kLog2eF, kShifterF);
  const float k = shifted - kShifterF;
  const float r_big = fused_multiply_add(
      sigma, u, fused_multiply_add(sigma, kC0, fused_multiply_add(-k, 2.0f * kLn2HiF, -big)));
  const float r_small = fused_multiply_add(-g, dw3, fused_multiply_add(-k, 2.0f * kLn2LoF, -rest));
  const float r2 = r_big + r_small;  // 2r, |r| ≤ ln2/2 + 2^−17
  const float e = fused_multiply_add(r2 * r2, horner<std::size(kE)>(kE, r2), r2);  // 2(e^r − 1)
  // y = w/2·erfc(z) = w·τ·2^k·(2 + e)/4.
  const float q = w * std::bit_cast<float>(std::bit_cast<std::int32_t>(tau) +
                                           ((shifted_integer_f32(shifted) + 61) << 23));
  const float y = fused_multiply_add(q, e, q + q) * 0x1p-63f;
  // gelu(x) = −y for x < 0, x − y otherwise (y = +0 for x = −0: the copysign keeps −0).
  return nan_or(x, select_if_negative(x, std::copysign(y, x), x - y));
}

// ---- softmax terms ----------------------------------------------------------------------------

/// The bits of x as a signed integer in the order of the values: for x, y not NaN, x < y ⇔
/// ordered_bits(x) < ordered_bits(y), and −0 < +0. IEEE floats are sign-magnitude, so a negative
/// x has its magnitude bits flipped: −1.0f = 0xbf800000 → −0x3f800001 (as int32), −0 → −1,
/// +0 → 0. The map is its own inverse.
template <std::floating_point T>
[[gnu::always_inline]] TAPESTRY_HD inline auto ordered_bits(T x) {
  using Int = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  const Int i = std::bit_cast<Int>(x);
  return i ^ ((i >> (8 * sizeof(T) - 1)) & std::numeric_limits<Int>::max());
}

/// The smallest f32 τ whose term is live, fl(τ − m) ≥ −104 in f64 (the rounding is monotone, so
/// x_j < τ ⇔ x_j − m < −104 in f64; softmax_exp_f32 gives +0 exactly there): found from
/// f32(m − 104) in an ulp or two. m = +∞ gives τ = +∞ (finite x_j − ∞ = −∞: dead); m NaN or −∞
/// gives −∞ (every d is NaN).
TAPESTRY_HD inline float softmax_live_from(float m) {
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
/// 60 ulp near e^−80), reduced as (d − k·ln2_hi) + (err − k·ln2_lo) with fused multiply-adds,
/// e^r = 1 + expm1_reduced_f32<true>(r), and 2^k applied as (e^r·2^(k+64))·2^−64, the first step
/// by adding k + 64 to e^r's exponent bits (k ∈ [−150, 0] for a live d: normal), so a subnormal
/// term (d < −87.3) is rounded once, by the multiply. ≤ 1.1 ulp (measured 0.9). A live d is
/// ≥ −104.0001 or NaN (x or m NaN, or x = m = +∞), and NaN stays NaN.
[[gnu::always_inline]] TAPESTRY_HD inline float softmax_exp_f32(float x, float m, float live_from) {
  const float d = x - m;
  const float err = two_sum_error(x, -m, d);
  const float shifted = fused_multiply_add(d, kLog2eF, kShifterF);
  const float k = shifted - kShifterF;
  const float r = fused_multiply_add(-k, kLn2HiF, d) + fused_multiply_add(-k, kLn2LoF, err);
  const float p = 1.0f + expm1_reduced_f32<true>(r);  // ∈ [0.70, 1.42]
  // In unsigned arithmetic: for a dead term (x < live_from, discarded below) the exponent bits
  // may overflow, which wraps here and would be undefined in int32 (UBSan found it).
  const float e =
      std::bit_cast<float>(std::bit_cast<std::uint32_t>(p) +
                           (static_cast<std::uint32_t>(shifted_integer_f32(shifted) + 64) << 23)) *
      0x1p-64f;
  return x < live_from ? 0.0f : nan_or(d, e);
}

// ---- moments ----------------------------------------------------------------------------------
// T is float or double (or, in device code, a 16-bit float cell that converts to double: its
// exact value, as the CPU's widened float32 copy holds it).

/// Σ_j x[j·sx] for j < n in float64, ascending j; f64 with Neumaier's compensation, so the
/// error does not grow with n (f32 values carry 29 spare bits in f64: n ≤ 2^29 sums stay within
/// one f64 rounding of the exact sum per term's ulp, far below an f32 ulp). A sum that is ±inf
/// or NaN is returned as it is: its compensation (inf − inf) would turn −inf into NaN.
template <typename T>
TAPESTRY_HD double row_sum(const T* x, std::int64_t sx, std::int64_t n) {
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
template <typename T>
TAPESTRY_HD double row_mean(const T* x, std::int64_t sx, std::int64_t n) {
  return row_sum(x, sx, n) / static_cast<double>(n);
}

/// The population variance Σ_j (x_j − m)² / n of a row of n ≥ 1 values, m its mean: two passes
/// in float64 (no E[x²] − m² cancellation). An error δ in m adds only δ² (Σ(x_j − m) = 0).
template <typename T>
TAPESTRY_HD double row_variance(const T* x, std::int64_t sx, std::int64_t n) {
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

}  // namespace tapestry::runtime::kernels::scalar
