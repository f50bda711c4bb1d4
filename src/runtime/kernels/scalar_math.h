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

/// gelu_f32's coefficients: h[j][i] is c_j of the polynomial of h on w's interval i (stored at
/// column (i + 24) mod 32, see gelu_f32), p[j] that of e^(s/2). A function-local static, so that
/// device code (nvcc) indexes it as the host does, and the AVX-512 clone
/// (fast/elementwise_vector.cpp) loads the same numbers into its registers.
struct GeluF32Coefficients {
  float h[6][32];
  float p[7];
};

TAPESTRY_HD inline const GeluF32Coefficients& gelu_f32_coefficients() {
  static constexpr GeluF32Coefficients kCoefficients = {
      {
          {0x1.0bdb2ep-2f, 0x1.275f8ap-2f, 0x1.3c144p-2f,  0x1.4bef66p-2f, 0x1.5845dcp-2f,
           0x1.62039ap-2f, 0x1.69cee6p-2f, 0x1.701efp-2f,  0x1.754a76p-2f, 0x1.7d241ap-2f,
           0x1.82b4bcp-2f, 0x1.86c626p-2f, 0x1.89d3acp-2f, 0x1.8c2b88p-2f, 0x1.8e010ep-2f,
           0x1.8f76dep-2f, 0x1.90a4fcp-2f, 0x1.926972p-2f, 0x1.93a64ep-2f, 0x1.948c6ep-2f,
           0x1.95389ep-2f, 0x1.95bcb4p-2f, 0x1.96242ep-2f, 0x1.9676b8p-2f, 0.0f,
           0x1.d0af2cp-5f, 0x1.a7f808p-4f, 0x1.238944p-3f, 0x1.66027ap-3f, 0x1.9de55ap-3f,
           0x1.cd2836p-3f, 0x1.f5595p-3f},
          {0x1.fcc81cp-4f,  0x1.7b7ac6p-4f,  0x1.204072p-4f,  0x1.bd44c8p-5f,  0x1.5d31bap-5f,
           0x1.15a9a2p-5f,  0x1.bf3d52p-6f,  0x1.6c5ec4p-6f,  0x1.2c067p-6f,   0x1.a2a1d8p-7f,
           0x1.2dd7b6p-7f,  0x1.bfc3bcp-8f,  0x1.542966p-8f,  0x1.07e9acp-8f,  0x1.a0de46p-9f,
           0x1.4eb24cp-9f,  0x1.106b1ep-9f,  0x1.76296ap-10f, 0x1.0b7bcep-10f, 0x1.8ae2dp-11f,
           0x1.2b8f9cp-11f, 0x1.d0e13cp-12f, 0x1.6fd63ep-12f, 0x1.27d41cp-12f, 0x1p-1f,
           0x1.a4e154p-2f,  0x1.5c5676p-2f,  0x1.222f48p-2f,  0x1.e68266p-3f,  0x1.9a4556p-3f,
           0x1.5bf774p-3f,  0x1.28be4ep-3f},
          {-0x1.343e64p-4f,  -0x1.aef75ep-5f,  -0x1.33294p-5f,   -0x1.bdde6ep-6f,  -0x1.49d27ap-6f,
           -0x1.ee50bep-7f,  -0x1.794316p-7f,  -0x1.22c0a6p-7f,  -0x1.c5d25cp-8f,  -0x1.1f1dbep-8f,
           -0x1.789144p-9f,  -0x1.0110c4p-9f,  -0x1.66c5e6p-10f, -0x1.0300ep-10f,  -0x1.787008p-11f,
           -0x1.1ed97ap-11f, -0x1.b3c67ep-12f, -0x1.0972d8p-12f, -0x1.57105ep-13f, -0x1.c5c992p-14f,
           -0x1.3ad4b4p-14f, -0x1.c03a56p-15f, -0x1.4adedp-15f,  -0x1.ea6468p-16f, -0x1.988436p-2f,
           -0x1.441e3ap-2f,  -0x1.02fbbp-2f,   -0x1.a0ba9p-3f,   -0x1.517d48p-3f,  -0x1.12dd14p-3f,
           -0x1.c29a3cp-4f,  -0x1.737f22p-4f},
          {0x1.2ef29p-5f,   0x1.92b65ep-6f,  0x1.0de556p-6f,  0x1.6e1beap-7f,  0x1.084ac2p-7f,
           0x1.6b8bcep-8f,  0x1.168566p-8f,  0x1.8af93ap-9f,  0x1.1f2cp-9f,    0x1.539d98p-10f,
           0x1.8c403ep-11f, 0x1.0ae8e4p-11f, 0x1.43e62p-12f,  0x1.daca18p-13f, 0x1.ee9c0cp-14f,
           0x1.fb171p-14f,  0x1.3a6976p-14f, 0x1.4eb8bcp-15f, 0x1.a90cc2p-16f, 0x1.9ee83p-17f,
           0x1.03e7e6p-17f, 0x1.3181c4p-18f, 0x1.eab854p-19f, 0x1.e4708ap-20f, 0x1.ffeec2p-3f,
           0x1.897f3cp-3f,  0x1.31280ep-3f,  0x1.de0326p-4f,  0x1.796638p-4f,  0x1.2551eep-4f,
           0x1.d0142cp-5f,  0x1.7082cp-5f},
          {-0x1.fb62fap-7f,  -0x1.5735aap-7f, -0x1.a3396cp-8f,  -0x1.d8ba04p-9f,  -0x1.ba801ep-9f,
           -0x1.91e092p-10f, -0x1.05adbap-9f, -0x1.0510eep-10f, -0x1.25d21ep-11f, -0x1.7bd82cp-12f,
           -0x1.4373eep-13f, -0x1.4f13ep-13f, -0x1.db1e1ep-15f, -0x1.3afc94p-14f, 0x1.a38938p-16f,
           -0x1.e1b592p-15f, -0x1.d6353p-17f, -0x1.9ab718p-18f, -0x1.700776p-18f, -0x1.08abep-23f,
           0x1.fa402ap-24f,  0x1.6b2e3p-21f,  -0x1.3d2318p-24f, 0x1.7ef2bcp-21f,  -0x1.0ebb88p-3f,
           -0x1.8f9de2p-4f,  -0x1.3191eap-4f, -0x1.eddb44p-5f,  -0x1.991c96p-5f,  -0x1.d517e4p-6f,
           -0x1.3f1d4ep-6f,  -0x1.8dd104p-7f},
          {0x1.3669cp-8f,    0x1.04b78ap-8f,   0x1.08ff38p-9f,   0x1.cc7e7ap-12f,  0x1.b8481ap-10f,
           0x1.299d2ep-16f,  0x1.65d1cap-10f,  0x1.7a70bap-12f,  0x1.4de29ep-14f,  0x1.674ed6p-14f,
           0x1.786fd4p-17f,  0x1.d9e86ap-15f,  0x1.339a66p-18f,  0x1.07b414p-15f,  -0x1.1720bap-15f,
           0x1.099bfcp-15f,  0x1.2ef1eep-19f,  0x1.a797b2p-21f,  0x1.46feaap-20f,  -0x1.aa8e24p-22f,
           -0x1.4955dcp-22f, -0x1.b7e688p-22f, -0x1.508036p-24f, -0x1.6117e2p-22f, 0x1.c1ea74p-5f,
           0x1.265222p-5f,   0x1.e3ec18p-6f,   0x1.0b8aacp-5f,   0x1.2593bep-5f,   -0x1.63f9bp-10f,
           -0x1.2b0e46p-7f,  -0x1.084de8p-6f},
      },
      {0x1p+0f, 0x1p-1f, 0x1.fffff8p-4f, 0x1.555486p-6f, 0x1.555b7ep-9f, 0x1.1241cap-12f,
       0x1.687b72p-16f}};
  return kCoefficients;
}

/// gelu(x) = x·Φ(x) for f32 x, Φ the normal distribution function, from y = w·Φ(−w), w = |x|:
/// gelu(x) = −y for x < 0 and x − y otherwise — no 1 + erf(x/√2) cancellation for x ≪ 0, and
/// for x ≥ 0, y ≤ x/2 is subtracted without cancellation. y = h(w)·e^(−w²/2) with
/// h(w) = w·Φ(−w)·e^(w²/2) = w·erfcx(w/√2)/2, a smooth function (≈ w/2 near 0, → 1/√(2π)):
///   * h from a table of 32 degree-5 polynomials in δ = w − a, a the left end of w's interval:
///     the intervals are those of v = w + 1 by its exponent and 3 leading fraction bits (w in
///     [0, 1) by eighths, [1, 3) by quarters, [3, 7) by halves, [7, 15) by ones), so the interval
///     index is bits 20–24 of v's bits and a = (v's bits with the rest cleared) − 1, both without
///     a division or a conversion; δ = w − a is exact (a ≥ w/2, or a = 0). Each polynomial is a
///     fit relative to h (2^−28, with c0 rounded to f32: 2^−24.6); the first has c0 = 0 (h(0) = 0,
///     and h(w) ≈ w/2 keeps full relative accuracy down to the subnormals). Horner's scheme with
///     fused multiply-adds: 5 operations. The AVX-512 and AVX2 clones take each lane's
///     coefficients from registers by permutes (gelu_f32_coefficients).
///   * e^(−w²/2) with w² never rounded: H = fl(w·w) and the rest L = w·w − H (one FMA, exact);
///     k = round(−H/2·log2 e), and twice the reduced argument s = −H − L − 2k·ln2 ∈ [−ln2, ln2]
///     (−H − 2k·ln2_hi is exact), so e^(−w²/2) = 2^k·e^(s/2), e^(s/2) a degree-6 fit (2^−27.9
///     relative) by Horner's scheme;
///   * y = (h·(e^(s/2)·2^(k+64)))·2^−64, the power added to the exponent bits of e^(s/2) ∈
///     [0.70, 1.42] (k ≥ −152 keeps it normal), so the only rounding that can land in the
///     subnormal range (x ∈ [−14.4, −13.2], or |x| < 2^−125) is the last multiply.
/// |x| > 14.5 is taken as 14.5 (gelu(x) rounds to −0 below x ≈ −14.4, and to x above ≈ 5.9).
/// −∞ → −0, +∞ → +∞, ±0 → ±0, NaN → NaN. ≤ 3.5 ulp (measured over every f32: see
/// docs/runtime.md). 19 multiplies and FMAs, ~15 other operations and 6 table lookups per
/// lane (session 16's erfc-form fit took 32, ~30 and a division; session 13's, ~130).
[[gnu::always_inline]] TAPESTRY_HD inline float gelu_f32(float x) {
  // w = min(|x|, 14.5) as an integer min of the bits (NaN gives 14.5; nan_or returns x's NaN).
  const std::uint32_t w_bits = std::bit_cast<std::uint32_t>(x) & 0x7fffffffu;
  const float w = std::bit_cast<float>(w_bits < 0x41680000u ? w_bits : 0x41680000u);
  const std::uint32_t v_bits = std::bit_cast<std::uint32_t>(w + 1.0f);
  const std::uint32_t interval = (v_bits >> 20) & 31u;
  const float delta = w - (std::bit_cast<float>(v_bits & 0xfff00000u) - 1.0f);
  const GeluF32Coefficients& c = gelu_f32_coefficients();
  float h = c.h[5][interval];  // Horner's scheme, written out: GCC vectorises no inner loop
  h = fused_multiply_add(h, delta, c.h[4][interval]);
  h = fused_multiply_add(h, delta, c.h[3][interval]);
  h = fused_multiply_add(h, delta, c.h[2][interval]);
  h = fused_multiply_add(h, delta, c.h[1][interval]);
  h = fused_multiply_add(h, delta, c.h[0][interval]);
  const float big = w * w;
  const float rest = fused_multiply_add(w, w, -big);
  const float shifted = fused_multiply_add(big, -0.5f * kLog2eF, kShifterF);
  const float k = shifted - kShifterF;
  const float s =
      fused_multiply_add(-k, 2.0f * kLn2HiF, -big) + fused_multiply_add(-k, 2.0f * kLn2LoF, -rest);
  const float p = horner<std::extent_v<decltype(c.p)>>(c.p, s);  // e^(s/2)
  // Unsigned: where w² overflows (|x| > 1.8e19, y = 0 below) the exponent bits wrap, which
  // would be undefined in int32.
  const float scaled =
      std::bit_cast<float>(std::bit_cast<std::uint32_t>(p) +
                           (static_cast<std::uint32_t>(shifted_integer_f32(shifted) + 64) << 23));
  const float y = (h * scaled) * 0x1p-64f;
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
