// The dense elementwise loops, one clone per instruction set (elementwise_vector.h).
//
// Each entry point is a table of three function pointers, one per VectorIsa, filled by the same
// template compiled under three `target` attributes; the call indexes it by vector_isa(). The
// functors are always_inline, so each clone inlines (and vectorises) its own copy of the formula.
#include "elementwise_vector.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <string>

#include <immintrin.h>

#include "../kernel_support.h"
#include "../scalar_ops.h"
#include "tapestry/support/assert.h"

namespace tapestry::runtime::fast {

namespace scalar = kernels::scalar;

std::string_view isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kBaseline:
      return "baseline";
    case VectorIsa::kAvx2:
      return "avx2";
    case VectorIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

// What both clones' targets enable besides their vector width (see TAPESTRY_AVX2 below): a VM may
// report AVX2 without FMA or BMI2.
namespace {
bool avx2_fma_bmi2() {
  return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0 &&
         __builtin_cpu_supports("bmi2") != 0;
}
}  // namespace

bool cpu_supports(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kBaseline:
      return true;
    case VectorIsa::kAvx2:
      return avx2_fma_bmi2();
    case VectorIsa::kAvx512:
      return avx2_fma_bmi2() && __builtin_cpu_supports("avx512f") != 0 &&
             __builtin_cpu_supports("avx512dq") != 0 && __builtin_cpu_supports("avx512vl") != 0 &&
             __builtin_cpu_supports("avx512bw") != 0;
  }
  return false;
}

namespace {

VectorIsa best_isa() {
  if (cpu_supports(VectorIsa::kAvx512)) return VectorIsa::kAvx512;
  if (cpu_supports(VectorIsa::kAvx2)) return VectorIsa::kAvx2;
  return VectorIsa::kBaseline;
}

// -1: not forced; else the forced VectorIsa.
std::atomic<int> forced{-1};

}  // namespace

VectorIsa vector_isa() {
  static const VectorIsa best = best_isa();
  const int f = forced.load(std::memory_order_relaxed);
  return f < 0 ? best : static_cast<VectorIsa>(f);
}

void force_vector_isa(std::optional<VectorIsa> isa) {
  TAPESTRY_ASSERT(!isa || cpu_supports(*isa), "this CPU cannot run the forced instruction set");
  forced.store(isa ? static_cast<int>(*isa) : -1, std::memory_order_relaxed);
}

namespace {

// The loops, written once. GCC vectorises each under the caller's target.
template <typename Op, typename T>
[[gnu::always_inline]] inline void map_loop(const T* __restrict x, T* __restrict r,
                                            std::int64_t n) {
  const Op op;
  for (std::int64_t i = 0; i < n; ++i) r[i] = op(x[i]);
}

template <typename Op, typename T>
[[gnu::always_inline]] inline void map_in_place_loop(T* p, std::int64_t n) {
  const Op op;
  for (std::int64_t i = 0; i < n; ++i) p[i] = op(p[i]);
}

// GCC's tuning for AVX-512 CPUs prefers 256-bit vectors unless told; clang (the fuzz preset)
// takes no prefer-vector-width in `target` and would ignore the whole attribute.
#if defined(__clang__)
#define TAPESTRY_AVX512 gnu::target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,bmi2")
#else
#define TAPESTRY_AVX512 \
  gnu::target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,bmi2,prefer-vector-width=512")
#endif
#define TAPESTRY_AVX2 gnu::target("avx2,fma,bmi2")

// ---- float32 gelu on AVX-512: the table's coefficients by permutes ---------------------------
// gelu_f32 (../scalar_math.h) takes its coefficients from a table of 32 intervals; vectorised
// from the scalar formula, each lookup becomes a gather (six per 16 lanes), which costs more on
// this machine (AMD Zen 4) than the rest of the formula. Here the table lives in 12 registers (the
// 32 entries of each coefficient in two) and one vpermt2ps per coefficient fetches each lane's:
// the interval index is bits 20–24 of v = w + 1, the five bits vpermt2ps reads. Every other
// operation is gelu_f32's, in its order, each rounded as there (fused multiply-adds are
// correctly rounded; −(a·b) − c rounds the same exact value as fma(−a, b, −c)), so the bits are
// the reference kernel's (EveryInstructionSetGivesTheReferenceBits). The AVX2 and baseline clones
// vectorise gelu_f32 itself.
// GCC 12 reports its own avx512fintrin.h (the _mm512_undefined_* passthrough of the unmasked
// integer intrinsics, GCC bug 105593) as maybe-uninitialized once they inline here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
struct GeluTableRegisters {
  __m512 lo[6], hi[6];
};

[[TAPESTRY_AVX512]] GeluTableRegisters gelu_table_registers() {
  const auto& table = scalar::gelu_f32_coefficients().h;
  GeluTableRegisters t;
  for (int j = 0; j < 6; ++j) {
    t.lo[j] = _mm512_loadu_ps(table[j]);
    t.hi[j] = _mm512_loadu_ps(table[j] + 16);
  }
  return t;
}

[[gnu::always_inline, TAPESTRY_AVX512]] inline __m512 splat(float c) {
  return _mm512_set1_ps(c);
}
[[gnu::always_inline, TAPESTRY_AVX512]] inline __m512i splat_bits(std::uint32_t c) {
  return _mm512_set1_epi32(static_cast<int>(c));
}

[[gnu::always_inline, TAPESTRY_AVX512]] inline __m512 gelu_f32x16(__m512 x,
                                                                  const GeluTableRegisters& t) {
  const __m512i x_bits = _mm512_castps_si512(x);
  const __m512 w = _mm512_castsi512_ps(
      _mm512_min_epu32(_mm512_and_si512(x_bits, splat_bits(0x7fffffffu)), splat_bits(0x41680000u)));
  const __m512i v_bits = _mm512_castps_si512(_mm512_add_ps(w, splat(1.0f)));
  const __m512i interval = _mm512_srli_epi32(v_bits, 20);  // vpermt2ps reads bits 0–4
  const __m512 delta = _mm512_sub_ps(
      w, _mm512_sub_ps(_mm512_castsi512_ps(_mm512_and_si512(v_bits, splat_bits(0xfff00000u))),
                       splat(1.0f)));
  __m512 h = _mm512_permutex2var_ps(t.lo[5], interval, t.hi[5]);
  for (int j = 4; j >= 0; --j)
    h = _mm512_fmadd_ps(h, delta, _mm512_permutex2var_ps(t.lo[j], interval, t.hi[j]));
  const __m512 big = _mm512_mul_ps(w, w);
  const __m512 rest = _mm512_fmsub_ps(w, w, big);
  const __m512 shifted =
      _mm512_fmadd_ps(big, splat(-0.5f * scalar::kLog2eF), splat(scalar::kShifterF));
  const __m512 k = _mm512_sub_ps(shifted, splat(scalar::kShifterF));
  const __m512 s = _mm512_add_ps(_mm512_fnmsub_ps(k, splat(2.0f * scalar::kLn2HiF), big),
                                 _mm512_fnmsub_ps(k, splat(2.0f * scalar::kLn2LoF), rest));
  const auto& kP = scalar::gelu_f32_coefficients().p;
  __m512 p = splat(kP[std::size(kP) - 1]);
  for (std::size_t j = std::size(kP) - 1; j-- > 0;) p = _mm512_fmadd_ps(p, s, splat(kP[j]));
  const __m512i power = _mm512_slli_epi32(
      _mm512_add_epi32(
          _mm512_sub_epi32(_mm512_castps_si512(shifted),
                           splat_bits(std::bit_cast<std::uint32_t>(scalar::kShifterF))),
          splat_bits(64)),
      23);
  const __m512 scaled = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), power));
  const __m512 y = _mm512_mul_ps(_mm512_mul_ps(h, scaled), splat(0x1p-64f));
  const __m512i sign = splat_bits(0x80000000u);
  const __m512 signed_y =
      _mm512_castsi512_ps(_mm512_or_si512(_mm512_andnot_si512(sign, _mm512_castps_si512(y)),
                                          _mm512_and_si512(sign, x_bits)));  // copysign(y, x)
  const __m512 result =
      _mm512_mask_blend_ps(_mm512_movepi32_mask(x_bits), _mm512_sub_ps(x, y), signed_y);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), result, _mm512_add_ps(x, x));
}

// r[i] = gelu_f32(x[i]) for i < n, 16 lanes a step, the last partial step masked; x may be r.
[[TAPESTRY_AVX512]] void gelu_avx512(const float* x, float* r, std::int64_t n) {
  const GeluTableRegisters t = gelu_table_registers();
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(r + j, gelu_f32x16(_mm512_loadu_ps(x + j), t));
  if (j < n) {
    const auto m = static_cast<__mmask16>((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(r + j, m, gelu_f32x16(_mm512_maskz_loadu_ps(m, x + j), t));
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// Whether the AVX-512 clone of Op on T is gelu_avx512.
template <typename Op, typename T>
inline constexpr bool kGeluF32 = std::is_same_v<Op, scalar::Gelu>&& std::is_same_v<T, float>;

template <typename Op, typename T>
[[TAPESTRY_AVX512]] void map_avx512(const T* x, T* r, std::int64_t n) {
  if constexpr (kGeluF32<Op, T>) return gelu_avx512(x, r, n);
  map_loop<Op>(x, r, n);
}
template <typename Op, typename T>
[[TAPESTRY_AVX2]] void map_avx2(const T* x, T* r, std::int64_t n) {
  map_loop<Op>(x, r, n);
}
template <typename Op, typename T>
void map_baseline(const T* x, T* r, std::int64_t n) {
  map_loop<Op>(x, r, n);
}

template <typename Op, typename T>
[[TAPESTRY_AVX512]] void in_place_avx512(T* p, std::int64_t n) {
  if constexpr (kGeluF32<Op, T>) return gelu_avx512(p, p, n);
  map_in_place_loop<Op>(p, n);
}
template <typename Op, typename T>
[[TAPESTRY_AVX2]] void in_place_avx2(T* p, std::int64_t n) {
  map_in_place_loop<Op>(p, n);
}
template <typename Op, typename T>
void in_place_baseline(T* p, std::int64_t n) {
  map_in_place_loop<Op>(p, n);
}

// 16-bit cells: widened, computed and rounded in registers (no restrict: x may be r).
template <typename Op, typename H>
[[gnu::always_inline]] inline void map_half_loop(const H* x, H* r, std::int64_t n) {
  const Op op;
  for (std::int64_t i = 0; i < n; ++i) r[i] = narrow_float<H>(op(to_float(x[i])));
}

template <typename Op, typename H>
[[gnu::always_inline]] inline void binary_half_loop(const H* __restrict a, std::int64_t sa,
                                                    const H* __restrict b, std::int64_t sb,
                                                    H* __restrict r, std::int64_t n) {
  const Op op;
  if (sa == 1 && sb == 1) {
    for (std::int64_t i = 0; i < n; ++i) r[i] = narrow_float<H>(op(to_float(a[i]), to_float(b[i])));
  } else if (sa == 1) {
    const float bv = to_float(*b);
    for (std::int64_t i = 0; i < n; ++i) r[i] = narrow_float<H>(op(to_float(a[i]), bv));
  } else if (sb == 1) {
    const float av = to_float(*a);
    for (std::int64_t i = 0; i < n; ++i) r[i] = narrow_float<H>(op(av, to_float(b[i])));
  } else {
    const H v = narrow_float<H>(op(to_float(*a), to_float(*b)));
    for (std::int64_t i = 0; i < n; ++i) r[i] = v;
  }
}

template <typename Op, typename H>
[[TAPESTRY_AVX512]] void map_half_avx512(const H* x, H* r, std::int64_t n) {
  if constexpr (std::is_same_v<Op, scalar::Gelu>) {  // widened into a block, gelu_avx512, rounded
    constexpr std::int64_t kBlock = 256;
    float block[kBlock];
    for (std::int64_t b = 0; b < n; b += kBlock) {
      const std::int64_t m = std::min(kBlock, n - b);
      for (std::int64_t j = 0; j < m; ++j) block[j] = to_float(x[b + j]);
      gelu_avx512(block, block, m);
      for (std::int64_t j = 0; j < m; ++j) r[b + j] = narrow_float<H>(block[j]);
    }
    return;
  }
  if (x == r) return map_half_loop<Op>(r, r, n);  // the loop versions on overlap otherwise
  map_half_loop<Op>(x, r, n);
}
template <typename Op, typename H>
[[TAPESTRY_AVX2]] void map_half_avx2(const H* x, H* r, std::int64_t n) {
  if (x == r) return map_half_loop<Op>(r, r, n);
  map_half_loop<Op>(x, r, n);
}
template <typename Op, typename H>
void map_half_baseline(const H* x, H* r, std::int64_t n) {
  if (x == r) return map_half_loop<Op>(r, r, n);
  map_half_loop<Op>(x, r, n);
}

template <typename Op, typename H>
[[TAPESTRY_AVX512]] void binary_half_avx512(const H* a, std::int64_t sa, const H* b,
                                            std::int64_t sb, H* r, std::int64_t n) {
  binary_half_loop<Op>(a, sa, b, sb, r, n);
}
template <typename Op, typename H>
[[TAPESTRY_AVX2]] void binary_half_avx2(const H* a, std::int64_t sa, const H* b, std::int64_t sb,
                                        H* r, std::int64_t n) {
  binary_half_loop<Op>(a, sa, b, sb, r, n);
}
template <typename Op, typename H>
void binary_half_baseline(const H* a, std::int64_t sa, const H* b, std::int64_t sb, H* r,
                          std::int64_t n) {
  binary_half_loop<Op>(a, sa, b, sb, r, n);
}

template <typename T>
[[TAPESTRY_AVX512]] void softmax_avx512(const T* x, T* r, std::int64_t n, T* e) {
  scalar::softmax_row_strided(x, std::int64_t{1}, r, std::int64_t{1}, n, e);
}
template <typename T>
[[TAPESTRY_AVX2]] void softmax_avx2(const T* x, T* r, std::int64_t n, T* e) {
  scalar::softmax_row_strided(x, std::int64_t{1}, r, std::int64_t{1}, n, e);
}
template <typename T>
void softmax_baseline(const T* x, T* r, std::int64_t n, T* e) {
  scalar::softmax_row_strided(x, std::int64_t{1}, r, std::int64_t{1}, n, e);
}

#undef TAPESTRY_AVX512
#undef TAPESTRY_AVX2

// Indexed by VectorIsa.
template <typename F>
using Clones = std::array<F*, 3>;

}  // namespace

template <typename Op, typename T>
void unary_dense(const T* x, T* r, std::int64_t n) {
  static constexpr Clones<void(const T*, T*, std::int64_t)> kClones = {
      &map_baseline<Op, T>, &map_avx2<Op, T>, &map_avx512<Op, T>};
  kClones[static_cast<std::size_t>(vector_isa())](x, r, n);
}

template <typename Op, typename T>
void unary_dense_in_place(T* p, std::int64_t n) {
  static constexpr Clones<void(T*, std::int64_t)> kClones = {
      &in_place_baseline<Op, T>, &in_place_avx2<Op, T>, &in_place_avx512<Op, T>};
  kClones[static_cast<std::size_t>(vector_isa())](p, n);
}

template <typename Op, typename H>
void unary_dense_half(const H* x, H* r, std::int64_t n) {
  static constexpr Clones<void(const H*, H*, std::int64_t)> kClones = {
      &map_half_baseline<Op, H>, &map_half_avx2<Op, H>, &map_half_avx512<Op, H>};
  kClones[static_cast<std::size_t>(vector_isa())](x, r, n);
}

template <typename Op, typename H>
void binary_dense_half(const H* a, std::int64_t sa, const H* b, std::int64_t sb, H* r,
                       std::int64_t n) {
  static constexpr Clones<void(const H*, std::int64_t, const H*, std::int64_t, H*, std::int64_t)>
      kClones = {&binary_half_baseline<Op, H>, &binary_half_avx2<Op, H>,
                 &binary_half_avx512<Op, H>};
  kClones[static_cast<std::size_t>(vector_isa())](a, sa, b, sb, r, n);
}

template <typename T>
void softmax_row_dense(const T* x, T* r, std::int64_t n, std::vector<T>& scratch) {
  static constexpr Clones<void(const T*, T*, std::int64_t, T*)> kClones = {
      &softmax_baseline<T>, &softmax_avx2<T>, &softmax_avx512<T>};
  scratch.resize(static_cast<std::size_t>(n));
  kClones[static_cast<std::size_t>(vector_isa())](x, r, n, scratch.data());
}

// ---- instantiations ---------------------------------------------------------------------------

#define TAPESTRY_UNARY(Op, T)                                           \
  template void unary_dense<scalar::Op, T>(const T*, T*, std::int64_t); \
  template void unary_dense_in_place<scalar::Op, T>(T*, std::int64_t);
#define TAPESTRY_UNARY_FLOAT(Op) TAPESTRY_UNARY(Op, float) TAPESTRY_UNARY(Op, double)
#define TAPESTRY_UNARY_ANY(Op) \
  TAPESTRY_UNARY_FLOAT(Op) TAPESTRY_UNARY(Op, std::int32_t) TAPESTRY_UNARY(Op, std::int64_t)

TAPESTRY_UNARY_ANY(Relu)
TAPESTRY_UNARY_ANY(Neg)
TAPESTRY_UNARY_FLOAT(Exp)
TAPESTRY_UNARY_FLOAT(Tanh)
TAPESTRY_UNARY_FLOAT(Sigmoid)
TAPESTRY_UNARY_FLOAT(Gelu)
TAPESTRY_UNARY_FLOAT(Sqrt)

#undef TAPESTRY_UNARY_ANY
#undef TAPESTRY_UNARY_FLOAT
#undef TAPESTRY_UNARY

#define TAPESTRY_HALF(Op)                                                                         \
  template void unary_dense_half<scalar::Op, BFloat16>(const BFloat16*, BFloat16*, std::int64_t); \
  template void unary_dense_half<scalar::Op, Float16>(const Float16*, Float16*, std::int64_t);
TAPESTRY_HALF(Relu)
TAPESTRY_HALF(Neg)
TAPESTRY_HALF(Exp)
TAPESTRY_HALF(Tanh)
TAPESTRY_HALF(Sigmoid)
TAPESTRY_HALF(Gelu)
TAPESTRY_HALF(Sqrt)
#undef TAPESTRY_HALF

#define TAPESTRY_BINARY_HALF(Op, H)                                                              \
  template void binary_dense_half<scalar::Op, H>(const H*, std::int64_t, const H*, std::int64_t, \
                                                 H*, std::int64_t);
#define TAPESTRY_BINARY_HALVES(Op) \
  TAPESTRY_BINARY_HALF(Op, BFloat16) TAPESTRY_BINARY_HALF(Op, Float16)
TAPESTRY_BINARY_HALVES(Add)
TAPESTRY_BINARY_HALVES(Sub)
TAPESTRY_BINARY_HALVES(Mul)
TAPESTRY_BINARY_HALVES(Div)
TAPESTRY_BINARY_HALVES(Maximum)
#undef TAPESTRY_BINARY_HALVES
#undef TAPESTRY_BINARY_HALF

template void softmax_row_dense<float>(const float*, float*, std::int64_t, std::vector<float>&);
template void softmax_row_dense<double>(const double*, double*, std::int64_t, std::vector<double>&);

}  // namespace tapestry::runtime::fast
