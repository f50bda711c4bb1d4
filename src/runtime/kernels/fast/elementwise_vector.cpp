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

// ---- float32 gelu on AVX-512 and AVX2: the table's coefficients by permutes ------------------
// gelu_f32 (../scalar_math.h) takes its coefficients from a table of 32 intervals; vectorised
// from the scalar formula, each lookup becomes a gather (six per vector), which costs more on
// this machine (AMD Zen 4) than the rest of the formula. Here the table lives in registers and
// permutes fetch each lane's coefficients: AVX-512 holds a coefficient's 32 entries in two zmm
// registers and one vpermt2ps reads them (its five index bits are bits 20–24 of v = w + 1,
// gelu_f32's index); AVX2 holds them in four ymm registers, and four vpermps (three index bits)
// and two levels of blends on bits 3 and 4 pick one. Every other operation is gelu_f32's, in its
// order, each rounded as there (fused multiply-adds are correctly rounded), so the bits are the
// reference kernel's (EveryInstructionSetGivesTheReferenceBits). The baseline clone vectorises
// gelu_f32 itself.
//
// The formula is written once, with GCC vector operators (the intrinsics' float vectors __m512
// and __m256 are GCC vectors; U32x16 and U32x8 their integer lanes, and casts between them are
// bit casts); only the fused multiply-add, the lookup and an unsigned min (which GCC does not
// find in a select) are the clone's own.
using U32x16 = std::uint32_t __attribute__((vector_size(64)));
using U32x8 = std::uint32_t __attribute__((vector_size(32)));

struct Zmm {
  using F = __m512;
  using U = U32x16;
  struct Table {
    __m512 lo[6], hi[6];
  };
};

[[TAPESTRY_AVX512]] Zmm::Table zmm_table() {
  const auto& h = scalar::gelu_f32_coefficients().h;
  Zmm::Table t;
  for (int j = 0; j < 6; ++j) {
    t.lo[j] = _mm512_loadu_ps(h[j]);
    t.hi[j] = _mm512_loadu_ps(h[j] + 16);
  }
  return t;
}

[[gnu::always_inline, TAPESTRY_AVX512]] inline __m512 fmadd(__m512 a, __m512 b, __m512 c) {
  return _mm512_fmadd_ps(a, b, c);
}

[[gnu::always_inline, TAPESTRY_AVX512]] inline U32x16 min(U32x16 a, U32x16 b) {
  // The zero-masking form: GCC 12 warns that the plain one's undefined passthrough (its
  // avx512fintrin.h) may be used uninitialized; with every lane kept it is the same vpminud.
  return reinterpret_cast<U32x16>(_mm512_maskz_min_epu32(
      static_cast<__mmask16>(0xffff), reinterpret_cast<__m512i>(a), reinterpret_cast<__m512i>(b)));
}

[[gnu::always_inline, TAPESTRY_AVX512]] inline __m512 lookup(const Zmm::Table& t, int j,
                                                             U32x16 index) {
  return _mm512_permutex2var_ps(t.lo[j], reinterpret_cast<__m512i>(index), t.hi[j]);
}

struct Ymm {
  using F = __m256;
  using U = U32x8;
  struct Table {
    __m256 q[6][4];  // entries 8i to 8i + 7 in q[j][i]
  };
};

[[TAPESTRY_AVX2]] Ymm::Table ymm_table() {
  const auto& h = scalar::gelu_f32_coefficients().h;
  Ymm::Table t;
  for (int j = 0; j < 6; ++j) {
    for (int i = 0; i < 4; ++i) t.q[j][i] = _mm256_loadu_ps(h[j] + 8 * i);
  }
  return t;
}

[[gnu::always_inline, TAPESTRY_AVX2]] inline __m256 fmadd(__m256 a, __m256 b, __m256 c) {
  return _mm256_fmadd_ps(a, b, c);
}

[[gnu::always_inline, TAPESTRY_AVX2]] inline U32x8 min(U32x8 a, U32x8 b) {
  return reinterpret_cast<U32x8>(
      _mm256_min_epu32(reinterpret_cast<__m256i>(a), reinterpret_cast<__m256i>(b)));
}

[[gnu::always_inline, TAPESTRY_AVX2]] inline __m256 lookup(const Ymm::Table& t, int j,
                                                           U32x8 index) {
  const auto i = reinterpret_cast<__m256i>(index);
  const auto bit3 = reinterpret_cast<__m256>(index << 28);  // into the sign bit blendv reads
  const auto bit4 = reinterpret_cast<__m256>(index << 27);
  const __m256 low = _mm256_blendv_ps(_mm256_permutevar8x32_ps(t.q[j][0], i),
                                      _mm256_permutevar8x32_ps(t.q[j][1], i), bit3);
  const __m256 high = _mm256_blendv_ps(_mm256_permutevar8x32_ps(t.q[j][2], i),
                                       _mm256_permutevar8x32_ps(t.q[j][3], i), bit3);
  return _mm256_blendv_ps(low, high, bit4);
}

// gelu_f32 on the lanes of L (Zmm or Ymm), line for line. A macro, expanded once per clone:
// each expansion needs its clone's `target`, which a function template cannot vary by instance.
#define TAPESTRY_GELU_LANES(L, TARGET)                                                         \
  [[gnu::always_inline, TARGET]] inline L::F gelu_lanes(L::F x, const L::Table& t) {           \
    using F = L::F;                                                                            \
    using U = L::U;                                                                            \
    const auto& p = scalar::gelu_f32_coefficients().p;                                         \
    const U x_bits = reinterpret_cast<U>(x);                                                   \
    const U w_bits = x_bits & 0x7fffffffu;                                                     \
    const F w = reinterpret_cast<F>(min(w_bits, U{} + 0x41680000u));                           \
    const U v_bits = reinterpret_cast<U>(w + 1.0f);                                            \
    const U interval = v_bits >> 20; /* the permutes read the low bits: & 31 */                \
    const F delta = w - (reinterpret_cast<F>(v_bits & 0xfff00000u) - 1.0f);                    \
    F h = lookup(t, 5, interval);                                                              \
    for (int j = 4; j >= 0; --j) h = fmadd(h, delta, lookup(t, j, interval));                  \
    const F big = w * w;                                                                       \
    const F rest = fmadd(w, w, -big);                                                          \
    const F shifted = fmadd(big, F{} + -0.5f * scalar::kLog2eF, F{} + scalar::kShifterF);      \
    const F k = shifted - scalar::kShifterF;                                                   \
    const F s = fmadd(-k, F{} + 2.0f * scalar::kLn2HiF, -big) +                                \
                fmadd(-k, F{} + 2.0f * scalar::kLn2LoF, -rest);                                \
    F e = F{} + p[std::size(p) - 1];                                                           \
    for (std::size_t j = std::size(p) - 1; j-- > 0;) e = fmadd(e, s, F{} + p[j]);              \
    const U power =                                                                            \
        (reinterpret_cast<U>(shifted) - std::bit_cast<std::uint32_t>(scalar::kShifterF) + 64u) \
        << 23;                                                                                 \
    const F y = (h * reinterpret_cast<F>(reinterpret_cast<U>(e) + power)) * 0x1p-64f;          \
    const F signed_y = reinterpret_cast<F>((reinterpret_cast<U>(y) & 0x7fffffffu) |            \
                                           (x_bits & 0x80000000u)); /* copysign(y, x) */       \
    const F result = (x_bits >> 31) != 0 ? signed_y : x - y;                                   \
    return x != x ? x + x : result;                                                            \
  }

TAPESTRY_GELU_LANES(Zmm, TAPESTRY_AVX512)
TAPESTRY_GELU_LANES(Ymm, TAPESTRY_AVX2)
#undef TAPESTRY_GELU_LANES

// r[i] = gelu_f32(x[i]) for i < n, a vector a step; x may be r. AVX-512 masks its last step;
// AVX2 finishes with gelu_f32 itself (the same bits).
[[TAPESTRY_AVX512]] void gelu_avx512(const float* x, float* r, std::int64_t n) {
  const Zmm::Table t = zmm_table();
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(r + j, gelu_lanes(_mm512_loadu_ps(x + j), t));
  if (j < n) {
    const auto m = static_cast<__mmask16>((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(r + j, m, gelu_lanes(_mm512_maskz_loadu_ps(m, x + j), t));
  }
}

[[TAPESTRY_AVX2]] void gelu_avx2(const float* x, float* r, std::int64_t n) {
  const Ymm::Table t = ymm_table();
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(r + j, gelu_lanes(_mm256_loadu_ps(x + j), t));
  for (; j < n; ++j) r[j] = scalar::gelu_f32(x[j]);
}

// 16-bit cells for gelu_avx512 / gelu_avx2: widened into a block, computed, rounded (x may be r).
template <void (*kGelu)(const float*, float*, std::int64_t), typename H>
[[gnu::always_inline]] inline void gelu_half_blocks(const H* x, H* r, std::int64_t n) {
  constexpr std::int64_t kBlock = 256;
  float block[kBlock];
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const std::int64_t m = std::min(kBlock, n - b);
    for (std::int64_t j = 0; j < m; ++j) block[j] = to_float(x[b + j]);
    kGelu(block, block, m);
    for (std::int64_t j = 0; j < m; ++j) r[b + j] = narrow_float<H>(block[j]);
  }
}

// Whether the clones of Op on T are gelu_avx512 and gelu_avx2.
template <typename Op, typename T>
inline constexpr bool kGeluF32 = std::is_same_v<Op, scalar::Gelu>&& std::is_same_v<T, float>;

template <typename Op, typename T>
[[TAPESTRY_AVX512]] void map_avx512(const T* x, T* r, std::int64_t n) {
  if constexpr (kGeluF32<Op, T>) return gelu_avx512(x, r, n);
  map_loop<Op>(x, r, n);
}
template <typename Op, typename T>
[[TAPESTRY_AVX2]] void map_avx2(const T* x, T* r, std::int64_t n) {
  if constexpr (kGeluF32<Op, T>) return gelu_avx2(x, r, n);
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
  if constexpr (kGeluF32<Op, T>) return gelu_avx2(p, p, n);
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
  if constexpr (std::is_same_v<Op, scalar::Gelu>) return gelu_half_blocks<gelu_avx512>(x, r, n);
  if (x == r) return map_half_loop<Op>(r, r, n);  // the loop versions on overlap otherwise
  map_half_loop<Op>(x, r, n);
}
template <typename Op, typename H>
[[TAPESTRY_AVX2]] void map_half_avx2(const H* x, H* r, std::int64_t n) {
  if constexpr (std::is_same_v<Op, scalar::Gelu>) return gelu_half_blocks<gelu_avx2>(x, r, n);
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
