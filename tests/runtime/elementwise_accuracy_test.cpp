// Accuracy of the elementwise kernels and softmax over their whole domain, in both kernel sets
// (the reference kernels and fast_kernels()), run on the naive executor as a one-operation graph,
// against a long double evaluation; and reference vs fast bitwise over the same sweep.
//
// The ulp error of a result y against the true value t (long double) is |y − t| / ulp(t), where
// ulp(t) is the spacing of the dtype's numbers at |t|: 2^(e−p+1) for |t| in [2^e, 2^(e+1)) and
// the subnormal spacing (denorm_min) for |t| below the smallest normal — so zero and subnormal
// truths are measured in units of denorm_min. A truth beyond the largest finite value must give
// what rounding it gives (±∞ or ±max); a NaN truth must give NaN and nothing else may.
// docs/runtime.md ("Accuracy of the elementwise kernels") quotes the bounds below.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "fast/elementwise_vector.h"
#include "kernel_graphs.h"
#include "run_helpers.h"
#include "scalar_ops.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/half_float.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: test helpers
using LD = long double;

// ---- ulp error --------------------------------------------------------------------------------

template <typename T>
LD ulp_of(LD truth) {
  using L = std::numeric_limits<T>;
  const LD t = std::fabs(truth);
  if (t < L::min()) return L::denorm_min();
  int e = 0;
  (void)std::frexp(std::min(t, static_cast<LD>(L::max())), &e);  // t = m·2^e, m in [0.5, 1)
  return std::ldexp(LD{1}, e - L::digits);
}

constexpr LD kWrong = std::numeric_limits<LD>::infinity();

template <typename T>
LD ulp_error(T got, LD truth) {
  if (std::isnan(truth) || std::isnan(got))
    return std::isnan(truth) && std::isnan(got) ? 0 : kWrong;
  if (std::isinf(got) || std::fabs(truth) > std::numeric_limits<T>::max()) {
    return static_cast<LD>(got) == static_cast<LD>(static_cast<T>(truth)) ? 0 : kWrong;
  }
  return std::fabs(static_cast<LD>(got) - truth) / ulp_of<T>(truth);
}

TEST(UlpError, Definition) {
  EXPECT_EQ(ulp_error<float>(1.0f, 1.0L), 0);
  EXPECT_EQ(ulp_error<float>(std::nextafter(1.0f, 2.0f), 1.0L), 1);
  EXPECT_EQ(ulp_error<double>(1.0, 1.0L + 0x1p-53L), 0.5);
  EXPECT_EQ(ulp_error<float>(0.0f, 0.0L), 0);
  EXPECT_EQ(ulp_error<float>(FLT_TRUE_MIN, 0.0L), 1);               // zero: in denorm_min units
  EXPECT_EQ(ulp_error<double>(3 * DBL_TRUE_MIN, DBL_TRUE_MIN), 2);  // subnormal too
  EXPECT_EQ(ulp_error<float>(INFINITY, 1e39L), 0);                  // rounds to +inf
  EXPECT_EQ(ulp_error<float>(FLT_MAX, 1e39L), kWrong);
  EXPECT_EQ(ulp_error<float>(INFINITY, 3e38L), kWrong);
  EXPECT_EQ(ulp_error<float>(NAN, 1.0L), kWrong);
  EXPECT_EQ(ulp_error<float>(1.0f, NAN), kWrong);
  EXPECT_EQ(ulp_error<float>(NAN, NAN), 0);
}

// ---- the truth --------------------------------------------------------------------------------

// The rounding error of a + b in long double (Knuth's two-sum).
LD two_sum_error(LD a, LD b, LD s) {
  const LD bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

// gelu(x) = x/2 · erfc(t), t = −x/√2, with t carried as th + tl: the condition number of erfc at
// t is ≈ 2t² (≈ 1,400 at x = −37), more than long double's 11 bits over double could absorb.
LD gelu_truth(LD x) {
  if (std::isinf(x)) return x > 0 ? x : LD{0};
  const LD c = 0.707106781186547524400844362104849039L;  // 1/√2, rounded
  const LD c_lo = std::fma(-c, c, LD{0.5}) / (2 * c);    // 1/√2 − c
  const LD th = -x * c;
  const LD tl = std::fma(-x, c, -th) + (-x) * c_lo;
  const LD two_over_sqrt_pi = 1.12837916709551257389615890312154517L;
  return LD{0.5} * x * (std::erfc(th) - tl * two_over_sqrt_pi * std::exp(-th * th));
}

LD sigmoid_truth(LD x) {
  const LD e = std::exp(-std::fabs(x));
  return (x < 0 ? e : LD{1}) / (1 + e);
}

struct Unary {
  const char* kernel;
  LD (*truth)(LD);
  double bound_f32;  // the stated ulp bounds (docs/runtime.md); the measured maxima are printed
  double bound_f64;
};

const Unary kUnary[] = {
    {"relu", [](LD x) { return x < 0 ? LD{0} : x; }, 0, 0},
    {"neg", [](LD x) { return -x; }, 0, 0},
    {"exp", [](LD x) { return std::exp(x); }, 1.1, 0.52},
    {"tanh", [](LD x) { return std::tanh(x); }, 3, 2.5},
    {"sigmoid", sigmoid_truth, 2.5, 3},
    {"gelu", gelu_truth, 3.5, 4},
    {"sqrt", [](LD x) { return std::sqrt(x); }, 0.5, 0.5},  // IEEE: correctly rounded
    {"log", [](LD x) { return std::log(x); }, 0.8, 0.52},   // glibc's logf, log
};

// ---- the sweep --------------------------------------------------------------------------------

// ±0, ±∞, NaN, the extremes, subnormals, points where a formula switches (and each side of
// them), where exp overflows or underflows, and the examples.
template <typename T>
std::vector<T> special_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> xs = {T{0},
                       T{-0.0},
                       L::infinity(),
                       -L::infinity(),
                       L::quiet_NaN(),
                       L::max(),
                       L::lowest(),
                       L::min(),
                       -L::min(),
                       L::denorm_min(),
                       -L::denorm_min(),
                       L::min() / 2,
                       -L::min() / 3,
                       T{1e4},
                       T{-1e4},
                       T{-5.24},
                       T{-5.5},
                       T{-6},
                       T{-10.64},
                       T{-12.99},
                       T{-14.1},
                       T{-37.58},
                       T{-38.6},
                       T{88.72},
                       T{-88.72},
                       T{-103.9},
                       T{709.78},
                       T{-745.1},
                       static_cast<T>(FLT_MAX),
                       static_cast<T>(-FLT_MAX)};
  for (T at : {T{-36}, T{-40}, T{0}}) {  // gelu's switches
    xs.push_back(at);
    xs.push_back(std::nextafter(at, -L::infinity()));
    xs.push_back(std::nextafter(at, L::infinity()));
  }
  return xs;
}

// A dense grid over [−40, 40] (step 1/512; 1/4096 over [−1, 1]), the tails out to ±max, the special
// values, and random bit patterns (every magnitude equally often, subnormals included).
template <typename T>
std::vector<T> sweep() {
  using L = std::numeric_limits<T>;
  std::vector<T> xs = special_values<T>();
  for (int k = -40 * 512; k <= 40 * 512; ++k) xs.push_back(static_cast<T>(k / 512.0));
  for (int k = -4096; k <= 4096; ++k) xs.push_back(static_cast<T>(k / 4096.0));
  for (double m = 40; m < 1e300 && m < static_cast<double>(L::max()); m *= 1.07) {
    xs.push_back(static_cast<T>(m));
    xs.push_back(static_cast<T>(-m));
  }
  if (std::getenv("TAPESTRY_ACCURACY_SCAN") != nullptr) {  // the slow scan (CMakeLists.txt)
    for (double x = -41; x <= 5; x += 0x1p-15) xs.push_back(static_cast<T>(x));
    for (double x = -104; x <= 90; x += 0x1p-10) xs.push_back(static_cast<T>(x));
  }
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 20000; ++i) {
    const Bits bits = static_cast<Bits>(rng());
    T v;
    std::memcpy(&v, &bits, sizeof v);
    if (std::isfinite(v)) xs.push_back(v);
  }
  return xs;
}

template <typename T>
constexpr const char* dtype_name() {
  if constexpr (std::is_same_v<T, BFloat16>) return "bfloat16";
  if constexpr (std::is_same_v<T, Float16>) return "float16";
  return sizeof(T) == 4 ? "float32" : "float64";
}

// op(xs) on the given kernel set, as a one-operation graph [n] → [n].
template <typename T>
std::vector<T> run_unary(const std::string& kernel, const std::vector<T>& xs,
                         const ExecutableKernels& kernels) {
  GraphBuilder b;
  const Range range = Range::of_shape({static_cast<std::int64_t>(xs.size())});
  const Built op = add_unary(b, kernel, b.tensor("X", dtype_name<T>(), range));
  BufferMap in = bind_by_name(b.graph, {{"X", Buffer::from_values<T>(range, xs)}});
  reset_fast_kernel_counts();
  BufferMap out = NaiveExecutor(b.graph, kernels).run(std::move(in));
  if (&kernels == &fast_kernels()) {
    EXPECT_EQ(fast_kernel_counts().fallback_calls, 0u) << kernel << ": the fast path must run";
  }
  const auto span = out.at(op.result).values<T>();
  return {span.begin(), span.end()};
}

struct Worst {
  LD ulps = 0;
  LD at = 0;
};

template <typename T>
Worst max_ulp_error(const Unary& u, const std::vector<T>& xs, const std::vector<T>& got) {
  Worst worst;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const LD e = ulp_error<T>(got[i], u.truth(xs[i]));
    if (e > worst.ulps || std::isnan(e)) worst = {e, xs[i]};
  }
  return worst;
}

template <typename T>
void expect_accurate(const Unary& u) {
  const std::vector<T> xs = sweep<T>();
  const double bound = sizeof(T) == 4 ? u.bound_f32 : u.bound_f64;
  const std::pair<const char*, const ExecutableKernels*> sets[] = {
      {"reference", &ExecutableKernels::reference()}, {"fast", &fast_kernels()}};
  for (const auto& [set, kernels] : sets) {
    const std::vector<T> got = run_unary<T>(u.kernel, xs, *kernels);
    const Worst w = max_ulp_error(u, xs, got);
    std::cout << "[ accuracy ] " << u.kernel << " " << dtype_name<T>() << " " << set << ": max "
              << static_cast<double>(w.ulps) << " ulp at x = " << static_cast<double>(w.at) << " ("
              << xs.size() << " points)\n";
    EXPECT_LE(w.ulps, bound) << u.kernel << " " << dtype_name<T>() << " " << set
                             << " at x = " << static_cast<double>(w.at);
  }
}

TEST(ElementwiseAccuracy, UnaryFloat32WithinStatedUlps) {
  for (const Unary& u : kUnary) expect_accurate<float>(u);
}

TEST(ElementwiseAccuracy, UnaryFloat64WithinStatedUlps) {
  for (const Unary& u : kUnary) expect_accurate<double>(u);
}

// ---- bfloat16 and float16 ---------------------------------------------------------------------
// A 16-bit kernel call runs the f32 kernel on its inputs widened (exactly) and rounds each result
// once (half_float_kernel.cpp). With the f32 result y within b ulp_f32 of the truth t, the 16-bit
// result is within 0.5 ulp_16 of y, so within 0.5 + b·2^−(24−p) ulp_16 of t (p = 8 for bf16, 11
// for f16: an f32 ulp is 2^−16, resp. 2^−13, of theirs; near a power of two the binade of y may
// differ from t's, but then the 16-bit result is that power and its error at most |y − t|). Every
// one of the 65,536 bit patterns (±0, subnormals, ±∞, NaNs, the overflow to ∞) runs through both
// kernel sets, against the long double truth of the widened input.

template <typename H>
struct HalfFormat;
template <>
struct HalfFormat<BFloat16> {
  static constexpr int kDigits = 8;
  static constexpr LD kMin = 0x1p-126L, kDenormMin = 0x1p-133L, kMax = 0x1.fep127L;
};
template <>
struct HalfFormat<Float16> {
  static constexpr int kDigits = 11;
  static constexpr LD kMin = 0x1p-14L, kDenormMin = 0x1p-24L, kMax = 65504.0L;
};

template <typename H>
LD half_ulp_error(H cell, LD truth) {
  using F = HalfFormat<H>;
  const LD got = static_cast<float>(cell);
  if (std::isnan(truth) || std::isnan(got))
    return std::isnan(truth) && std::isnan(got) ? 0 : kWrong;
  if (std::isinf(got) || std::fabs(truth) > F::kMax) {  // rounds to ±∞ from max + ulp(max)/2 on
    const LD ulp_max = std::ldexp(LD{1}, std::ilogb(F::kMax) - (F::kDigits - 1));
    const LD rounded = std::fabs(truth) >= F::kMax + ulp_max / 2
                           ? std::copysign(LD{INFINITY}, truth)
                           : std::copysign(F::kMax, truth);
    return got == rounded ? 0 : kWrong;
  }
  const LD t = std::fabs(truth);
  const LD ulp = t < F::kMin ? F::kDenormMin : std::ldexp(LD{1}, std::ilogb(t) - (F::kDigits - 1));
  return std::fabs(got - truth) / ulp;
}

TEST(UlpError, HalfFloatDefinition) {
  EXPECT_EQ(half_ulp_error(to_bfloat16(1.0f), 1.0L), 0);
  EXPECT_EQ(half_ulp_error(BFloat16{0x3F81}, 1.0L), 1);     // 1 + 2^−7
  EXPECT_EQ(half_ulp_error(Float16{0x3C01}, 1.0L), 1);      // 1 + 2^−10
  EXPECT_EQ(half_ulp_error(Float16{0x0001}, 0.0L), 1);      // subnormal units
  EXPECT_EQ(half_ulp_error(Float16{0x7C00}, 65520.0L), 0);  // the tie rounds to +∞
  EXPECT_EQ(half_ulp_error(Float16{0x7BFF}, 65519.0L), 0);  // below it: 65504
  EXPECT_EQ(half_ulp_error(Float16{0x7BFF}, 65520.0L), kWrong);
  EXPECT_EQ(half_ulp_error(BFloat16{0x7FC0}, 1.0L), kWrong);  // NaN
}

template <typename H>
void expect_half_accurate(const Unary& u) {
  std::vector<H> xs;
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b) xs.push_back(H{static_cast<std::uint16_t>(b)});
  const double bound = 0.5 + u.bound_f32 * std::ldexp(1.0, HalfFormat<H>::kDigits -
                                                               std::numeric_limits<float>::digits);
  const std::pair<const char*, const ExecutableKernels*> sets[] = {
      {"reference", &ExecutableKernels::reference()}, {"fast", &fast_kernels()}};
  for (const auto& [set, kernels] : sets) {
    const std::vector<H> got = run_unary<H>(u.kernel, xs, *kernels);
    LD worst = 0;
    float at = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const float x = static_cast<float>(xs[i]);
      const LD e = half_ulp_error(got[i], u.truth(x));
      if (!(e <= worst)) worst = e, at = x;
    }
    std::cout << "[ accuracy ] " << u.kernel << " " << dtype_name<H>() << " " << set << ": max "
              << static_cast<double>(worst) << " ulp at x = " << at << " (bound " << bound << ")\n";
    EXPECT_LE(worst, bound) << u.kernel << " " << dtype_name<H>() << " " << set << " at x = " << at;
  }
}

TEST(ElementwiseAccuracy, UnaryBFloat16WithinStatedUlps) {
  for (const Unary& u : kUnary) expect_half_accurate<BFloat16>(u);
}

TEST(ElementwiseAccuracy, UnaryFloat16WithinStatedUlps) {
  for (const Unary& u : kUnary) expect_half_accurate<Float16>(u);
}

// The measurement catches the cancelling form this test was written for: x/2·(1 + erf(x/√2))
// is off by far more than gelu's bound (and −0 for x < −6 in f32 is an infinite error there).
TEST(ElementwiseAccuracy, SweepCatchesTheCancellingGelu) {
  const std::vector<float> xs = sweep<float>();
  std::vector<float> old(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    old[i] = 0.5f * xs[i] * (1.0f + std::erf(xs[i] / std::sqrt(2.0f)));
  }
  EXPECT_GT(max_ulp_error(kUnary[5], xs, old).ulps, 1e6);
}

// The limits the issue names, and the sign of zero where it is defined.
template <typename T>
void expect_limits(const ExecutableKernels& kernels) {
  using L = std::numeric_limits<T>;
  const std::vector<T> xs = {-L::infinity(), L::infinity(), L::quiet_NaN(), T{0}, T{-0.0}};
  const auto run = [&](const char* k) { return run_unary<T>(k, xs, kernels); };
  const std::vector<T> gelu = run("gelu"), sigmoid = run("sigmoid"), tanh = run("tanh"),
                       exp = run("exp"), neg = run("neg"), relu = run("relu");
  EXPECT_EQ(gelu[0], T{0});  // −0 or 0
  EXPECT_EQ(gelu[1], L::infinity());
  EXPECT_EQ(sigmoid[0], T{0});
  EXPECT_EQ(sigmoid[1], T{1});
  EXPECT_EQ(tanh[0], T{-1});
  EXPECT_EQ(tanh[1], T{1});
  EXPECT_EQ(exp[0], T{0});
  EXPECT_EQ(exp[1], L::infinity());
  EXPECT_EQ(relu[0], T{0});
  EXPECT_EQ(relu[1], L::infinity());
  EXPECT_EQ(neg[0], L::infinity());
  for (const auto* r : {&gelu, &sigmoid, &tanh, &exp, &neg, &relu})
    EXPECT_TRUE(std::isnan((*r)[2]));
  EXPECT_TRUE(std::signbit(neg[3]));  // −0: IEEE negation, not 0 − x
  EXPECT_FALSE(std::signbit(neg[4]));
  EXPECT_TRUE(std::signbit(relu[4]));  // relu(−0) = −0, as max(−0, 0)
  EXPECT_EQ(sigmoid[3], T{0.5});
  EXPECT_TRUE(std::signbit(gelu[4]));  // −0 · Φ(0)
}

TEST(ElementwiseAccuracy, Limits) {
  for (const ExecutableKernels* kernels : {&ExecutableKernels::reference(), &fast_kernels()}) {
    expect_limits<float>(*kernels);
    expect_limits<double>(*kernels);
  }
}

// ---- reference vs fast, bitwise ---------------------------------------------------------------

template <typename T>
void expect_bitwise(const std::vector<T>& ref, const std::vector<T>& fast,
                    const std::string& what) {
  ASSERT_EQ(ref.size(), fast.size()) << what;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    // A NaN's sign and payload are not results (IEEE 754 leaves them open, and which operand's
    // NaN an x86 operation passes on depends on the compiler's operand order: the sanitizer
    // build's softmax gave −nan where the release build gives +nan): any NaN matches any NaN.
    if (std::isnan(static_cast<double>(ref[i])) && std::isnan(static_cast<double>(fast[i])))
      continue;
    ASSERT_EQ(std::memcmp(&ref[i], &fast[i], sizeof(T)), 0)
        << what << " element " << i << ": reference " << ref[i] << " fast " << fast[i];
  }
}

template <typename T>
void expect_unary_bitwise(const char* kernel) {
  const std::vector<T> xs = sweep<T>();
  expect_bitwise(run_unary<T>(kernel, xs, ExecutableKernels::reference()),
                 run_unary<T>(kernel, xs, fast_kernels()), kernel);
}

TEST(ElementwiseAccuracy, UnaryReferenceAndFastAreBitwiseEqual) {
  for (const Unary& u : kUnary) {
    SCOPED_TRACE(u.kernel);
    expect_unary_bitwise<float>(u.kernel);
    expect_unary_bitwise<double>(u.kernel);
  }
  for (const char* kernel : {"relu", "neg"}) {
    GraphBuilder b;
    const Range range = Range::of_shape({5});
    const Built op = add_unary(b, kernel, b.tensor("X", "int32", range));
    const auto run = [&](const ExecutableKernels& kernels) {
      BufferMap in = bind_by_name(
          b.graph,
          {{"X", Buffer::from_values<std::int32_t>(range, {INT32_MIN, -1, 0, 1, INT32_MAX})}});
      return values_of<std::int32_t>(NaiveExecutor(b.graph, kernels).run(std::move(in)), op.result);
    };
    EXPECT_EQ(run(ExecutableKernels::reference()), run(fast_kernels())) << kernel;
  }
}

// The dense loops of the fast set are compiled for AVX-512, AVX2 and the baseline
// (fast/elementwise_vector.h); whichever the CPU picks, the results are the reference kernel's
// bits. Each clone this CPU can run is forced in turn, over the whole sweep and the softmax rows.
template <typename T>
std::vector<std::vector<T>> softmax_rows();
template <typename T>
std::vector<T> run_softmax(const std::vector<std::vector<T>>& rows, std::int64_t n,
                           const ExecutableKernels& kernels);

TEST(ElementwiseAccuracy, EveryInstructionSetGivesTheReferenceBits) {
  using fast::VectorIsa;
  const std::vector<float> xf = sweep<float>();
  const std::vector<double> xd = sweep<double>();
  int clones = 0;
  for (VectorIsa isa : {VectorIsa::kBaseline, VectorIsa::kAvx2, VectorIsa::kAvx512}) {
    if (!fast::cpu_supports(isa)) continue;
    ++clones;
    SCOPED_TRACE(std::string(fast::isa_name(isa)));
    fast::force_vector_isa(isa);
    EXPECT_EQ(fast::vector_isa(), isa);
    for (const Unary& u : kUnary) {
      expect_bitwise(run_unary<float>(u.kernel, xf, ExecutableKernels::reference()),
                     run_unary<float>(u.kernel, xf, fast_kernels()), u.kernel);
      expect_bitwise(run_unary<double>(u.kernel, xd, ExecutableKernels::reference()),
                     run_unary<double>(u.kernel, xd, fast_kernels()), u.kernel);
    }
    std::map<std::int64_t, std::vector<std::vector<float>>> by_length;
    for (auto& row : softmax_rows<float>()) by_length[std::ssize(row)].push_back(std::move(row));
    for (const auto& [n, rows] : by_length) {
      expect_bitwise(run_softmax(rows, n, ExecutableKernels::reference()),
                     run_softmax(rows, n, fast_kernels()), "softmax");
    }
  }
  fast::force_vector_isa(std::nullopt);
  std::cout << "[ accuracy ] " << clones << " instruction sets checked; this CPU runs "
            << fast::isa_name(fast::vector_isa()) << "\n";
}

// The dense loops themselves (fast/elementwise_vector.h), clone by clone, against the functor
// applied one element at a time (the reference kernel's bits): every length 0–40 and a few longer
// ones at four alignments (the AVX-512 gelu's masked last step, its 16-lane body), in place (the
// fused epilogues' pass) and on 16-bit cells (widened, computed, rounded; x == r too).
template <typename Op>
void expect_dense_loops_give_the_functor_bits(const std::vector<float>& values, const char* what) {
  const Op op;
  std::vector<float> x, r, p;
  std::vector<BFloat16> hb, rb;
  std::vector<Float16> hf, rf;
  std::vector<std::int64_t> lengths(41);
  std::iota(lengths.begin(), lengths.end(), 0);
  for (std::int64_t n : {255, 256, 257, 1000, 4099}) lengths.push_back(n);
  std::size_t from = 0;
  for (std::int64_t n : lengths) {
    for (std::int64_t offset = 0; offset < 4; ++offset) {
      SCOPED_TRACE(::testing::Message() << what << " n = " << n << " offset = " << offset);
      x.assign(static_cast<std::size_t>(n + offset), 0.0f);
      for (std::int64_t i = 0; i < n; ++i, ++from) x[offset + i] = values[from % values.size()];
      r.assign(x.size(), 0.0f);
      fast::unary_dense<Op>(x.data() + offset, r.data() + offset, n);
      p = x;
      fast::unary_dense_in_place<Op>(p.data() + offset, n);
      for (std::int64_t i = offset; i < n + offset; ++i) {
        const std::uint32_t want = std::bit_cast<std::uint32_t>(op(x[i]));
        ASSERT_EQ(std::bit_cast<std::uint32_t>(r[i]), want) << "x = " << x[i];
        ASSERT_EQ(std::bit_cast<std::uint32_t>(p[i]), want) << "in place, x = " << x[i];
      }
      hb.clear();
      hf.clear();
      for (float v : x) {
        hb.push_back(to_bfloat16(v));
        hf.push_back(to_float16(v));
      }
      rb.assign(hb.size(), BFloat16{});
      rf.assign(hf.size(), Float16{});
      fast::unary_dense_half<Op>(hb.data() + offset, rb.data() + offset, n);
      fast::unary_dense_half<Op>(hf.data() + offset, rf.data() + offset, n);
      for (std::int64_t i = offset; i < n + offset; ++i) {
        ASSERT_EQ(rb[i].bits, narrow_float<BFloat16>(op(to_float(hb[i]))).bits) << hb[i].bits;
        ASSERT_EQ(rf[i].bits, narrow_float<Float16>(op(to_float(hf[i]))).bits) << hf[i].bits;
      }
      fast::unary_dense_half<Op>(hb.data() + offset, hb.data() + offset, n);  // in place
      for (std::int64_t i = offset; i < n + offset; ++i) ASSERT_EQ(hb[i].bits, rb[i].bits);
    }
  }
}

TEST(ElementwiseAccuracy, DenseLoopsOfEveryInstructionSetGiveTheFunctorBits) {
  using fast::VectorIsa;
  namespace scalar = kernels::scalar;
  const std::vector<float> xf = sweep<float>();
  for (VectorIsa isa : {VectorIsa::kBaseline, VectorIsa::kAvx2, VectorIsa::kAvx512}) {
    if (!fast::cpu_supports(isa)) continue;
    SCOPED_TRACE(std::string(fast::isa_name(isa)));
    fast::force_vector_isa(isa);
    expect_dense_loops_give_the_functor_bits<scalar::Gelu>(xf, "gelu");
    expect_dense_loops_give_the_functor_bits<scalar::Tanh>(xf, "tanh");
    expect_dense_loops_give_the_functor_bits<scalar::Relu>(xf, "relu");
  }
  fast::force_vector_isa(std::nullopt);
}

// Every pair of a few hundred sweep values (specials included), a dense [n] ⊕ [n] run and a
// broadcast [n] ⊕ [1] run (the fast set's scalar-operand loop).
template <typename T>
void expect_binary_bitwise(const char* kernel) {
  const std::vector<T> values = sweep<T>();
  std::vector<T> pick = special_values<T>();
  for (std::size_t i = 0; i < values.size(); i += values.size() / 250) pick.push_back(values[i]);
  std::vector<T> as, bs;
  for (T a : pick) {
    for (T b : pick) {
      as.push_back(a);
      bs.push_back(b);
    }
  }
  const auto run = [&](const ExecutableKernels& kernels, const std::vector<T>& b_values) {
    GraphBuilder b;
    const Range range = Range::of_shape({static_cast<std::int64_t>(as.size())});
    const Range b_range = Range::of_shape({static_cast<std::int64_t>(b_values.size())});
    const Built op = add_binary(b, kernel, b.tensor("A", dtype_name<T>(), range),
                                b.tensor("B", dtype_name<T>(), b_range), range.shape());
    BufferMap in = bind_by_name(b.graph, {{"A", Buffer::from_values<T>(range, as)},
                                          {"B", Buffer::from_values<T>(b_range, b_values)}});
    return values_of<T>(NaiveExecutor(b.graph, kernels).run(std::move(in)), op.result);
  };
  expect_bitwise(run(ExecutableKernels::reference(), bs), run(fast_kernels(), bs), kernel);
  const std::vector<T> one = {std::numeric_limits<T>::quiet_NaN()};
  expect_bitwise(run(ExecutableKernels::reference(), one), run(fast_kernels(), one), kernel);
}

TEST(ElementwiseAccuracy, BinaryReferenceAndFastAreBitwiseEqual) {
  for (const char* kernel : {"add", "sub", "mul", "div", "maximum"}) {
    SCOPED_TRACE(kernel);
    expect_binary_bitwise<float>(kernel);
    expect_binary_bitwise<double>(kernel);
  }
}

// ---- softmax ----------------------------------------------------------------------------------

// The true softmax of one row, in long double: x_j − m carried exactly (two-sum), Neumaier sum.
std::vector<LD> softmax_truth(const std::vector<LD>& x) {
  LD m = x[0];
  for (LD v : x) m = std::isnan(v) || std::isnan(m) ? NAN : std::max(m, v);
  std::vector<LD> e(x.size());
  LD sum = 0, compensation = 0;
  for (std::size_t j = 0; j < x.size(); ++j) {
    const LD d = x[j] - m;
    e[j] = std::exp(d);
    if (std::isfinite(d)) e[j] += e[j] * two_sum_error(x[j], -m, d);
    const LD s = sum + e[j];
    compensation += std::fabs(sum) >= std::fabs(e[j]) ? (sum - s) + e[j] : (e[j] - s) + sum;
    sum = s;
  }
  for (LD& v : e) v /= sum + compensation;
  return e;
}

// Rows of several lengths (1 to 10,003: shorter than, equal to and just past the row sum's lanes
// (8 in f64, 16 in f32), and rows across the f32 sum's blocks of 4,096) and spreads (up to ±1e4, so
// that many results are tiny or subnormal), rows with −∞ entries, one dominant entry, values near
// ±max, ±0, and the NaN rows (NaN, +∞, all −∞), with the NaN or +∞ also last in a row of 17 (past
// the last full group of eight).
template <typename T>
std::vector<std::vector<T>> softmax_rows() {
  using L = std::numeric_limits<T>;
  const T inf = L::infinity();
  std::mt19937 rng(7);
  std::vector<std::vector<T>> rows;
  for (int n : {1, 2, 3, 7, 8, 9, 17, 64, 300, 1000}) {
    for (double scale : {1.0, 30.0, 1e3, 1e4}) {
      std::normal_distribution<double> normal(0, scale);
      for (int r = 0; r < 8; ++r) {
        std::vector<T> row;
        for (int j = 0; j < n; ++j) row.push_back(static_cast<T>(normal(rng)));
        rows.push_back(row);
      }
    }
  }
  rows.push_back({T{1}, -inf, T{2}, -inf});
  rows.push_back({T{100}, T{0}, T{-1}, T{-50}, T{-80}, T{-99.5}, T{-700}});
  rows.push_back({L::max(), L::lowest(), L::max() / 2, T{0}});
  rows.push_back({L::denorm_min(), -L::denorm_min(), T{0}, T{-0.0}});
  rows.push_back({T{-0.0}, T{0}, T{-0.0}});
  rows.push_back({T{1}, L::quiet_NaN(), T{2}});
  rows.push_back({T{1}, inf, T{2}});
  rows.push_back({-inf, -inf});
  std::vector<T> tail(17, T{3});
  tail[16] = L::quiet_NaN();
  rows.push_back(tail);
  tail[16] = inf;
  rows.push_back(tail);
  tail[16] = -inf;
  rows.push_back(tail);
  // 1000 entries, all −∞ but every 97th, which spread over [−120, 0]: most results are 0, the
  // rest run down into the subnormals (f32 below e^−87).
  std::vector<T> sparse(1000, -inf);
  for (int j = 0; j < 1000; j += 97) sparse[j] = static_cast<T>(-120.0 * j / 1000);
  rows.push_back(sparse);
  // f32 skips blocks of 32 terms that are all below e^−104: dead blocks, a live term last, one
  // just above −104 and one just below, against a max of 2^−60 (x_j − m rounds in f64).
  std::vector<T> blocks(70, T{-200});
  blocks[0] = std::ldexp(T{1}, -60);
  blocks[40] = std::nextafter(T{-104}, T{0});
  blocks[50] = std::nextafter(T{-104}, T{-200});
  blocks[69] = T{-103.5};
  rows.push_back(blocks);
  // Longer than the f32 sum's blocks of 4,096 terms (two full ones and a partial group of 16),
  // with terms of similar size, where an f32 sum without its error terms drifts by ~n·2^−26.
  for (double scale : {0.5, 3.0}) {
    std::normal_distribution<double> normal(0, scale);
    std::vector<T> row;
    for (int j = 0; j < 10003; ++j) row.push_back(static_cast<T>(normal(rng)));
    rows.push_back(row);
  }
  return rows;
}

// Runs the rows of length n as one [rows, n] softmax on the given kernel set.
template <typename T>
std::vector<T> run_softmax(const std::vector<std::vector<T>>& rows, std::int64_t n,
                           const ExecutableKernels& kernels) {
  std::vector<T> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  GraphBuilder b;
  const Range range = Range::of_shape({static_cast<std::int64_t>(rows.size()), n});
  const Built op = add_softmax(b, b.tensor("X", dtype_name<T>(), range));
  BufferMap in = bind_by_name(b.graph, {{"X", Buffer::from_values<T>(range, flat)}});
  return values_of<T>(NaiveExecutor(b.graph, kernels).run(std::move(in)), op.result);
}

// Every row against the long double truth, and reference vs fast bitwise, one graph per length.
template <typename T>
void expect_softmax_accurate(double bound) {
  std::map<std::int64_t, std::vector<std::vector<T>>> by_length;
  for (auto& row : softmax_rows<T>()) by_length[std::ssize(row)].push_back(std::move(row));
  LD worst = 0;
  std::size_t count = 0;
  for (const auto& [n, rows] : by_length) {
    const std::vector<T> ref = run_softmax(rows, n, ExecutableKernels::reference());
    expect_bitwise(ref, run_softmax(rows, n, fast_kernels()), "softmax");
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const std::vector<LD> truth = softmax_truth(std::vector<LD>(rows[r].begin(), rows[r].end()));
      for (std::int64_t j = 0; j < n; ++j) {
        const T got = ref[r * n + j];
        const LD e = ulp_error<T>(got, truth[j]);
        if (!(e <= worst)) worst = e;
        if (!(e <= bound)) ADD_FAILURE() << "n " << n << " row " << r << " [" << j << "]: " << got;
      }
    }
    count += rows.size();
  }
  std::cout << "[ accuracy ] softmax " << dtype_name<T>() << ": max " << static_cast<double>(worst)
            << " ulp (" << count << " rows)\n";
}

TEST(ElementwiseAccuracy, SoftmaxWithinStatedUlps) {
  expect_softmax_accurate<float>(1.6);
  expect_softmax_accurate<double>(3);
}

}  // namespace
}  // namespace tapestry::runtime

namespace tapestry::runtime {
namespace {

// exp_fast_underflow skips libm's range-error paths only where std::exp returns +0 or +∞: bitwise
// equal on every f32 from −110 to −98 and from 85 to 95 (across the bounds −104 and 89), on f32
// and f64 far below, around the f64 bounds, and on ±∞ and NaN.
TEST(ExpFastUnderflow, BitwiseEqualToStdExp) {
  const auto same = [](auto a, auto b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  std::int64_t checked = 0;
  for (float x = -110.0f; x <= -98.0f; x = std::nextafter(x, 0.0f), ++checked) {
    ASSERT_TRUE(same(kernels::scalar::exp_fast_underflow(x), std::exp(x))) << x;
  }
  EXPECT_GT(checked, 1'000'000);
  for (float x = 85.0f; x <= 95.0f; x = std::nextafter(x, 100.0f)) {
    ASSERT_TRUE(same(kernels::scalar::exp_fast_underflow(x), std::exp(x))) << x;
  }
  for (double up = 709.0; up < 711.0; up += 1e-5) {
    ASSERT_TRUE(same(kernels::scalar::exp_fast_underflow(up), std::exp(up))) << up;
  }
  EXPECT_EQ(kernels::scalar::exp_fast_underflow(1e30f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(kernels::scalar::exp_fast_underflow(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> far(-1e30, -104.0);
  for (int k = 0; k < 100'000; ++k) {
    const auto x = static_cast<float>(far(rng));
    ASSERT_TRUE(same(kernels::scalar::exp_fast_underflow(x), std::exp(x))) << x;
    const double d = far(rng) * 8;
    ASSERT_TRUE(same(kernels::scalar::exp_fast_underflow(d), std::exp(d))) << d;
  }
  double d = -746.5;
  for (int k = 0; k < 2'000'000; ++k, d = std::nextafter(d, 0.0)) {
    ASSERT_TRUE(same(kernels::scalar::exp_fast_underflow(d), std::exp(d))) << d;
  }
  for (double step = 1e-6; step < 2; step *= 2) {  // across −746 at growing distances
    ASSERT_TRUE(same(kernels::scalar::exp_fast_underflow(-746.0 + step), std::exp(-746.0 + step)));
    ASSERT_TRUE(same(kernels::scalar::exp_fast_underflow(-746.0 - step), std::exp(-746.0 - step)));
  }
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kernels::scalar::exp_fast_underflow(-inf), 0.0f);
  EXPECT_TRUE(std::isnan(kernels::scalar::exp_fast_underflow(std::nanf(""))));
  EXPECT_TRUE(std::isnan(kernels::scalar::exp_fast_underflow(std::nan(""))));
}

LD relative_error(double got, LD truth) {
  return truth == 0 ? std::fabs(static_cast<LD>(got)) : std::fabs((got - truth) / truth);
}

TEST(BranchlessGelu, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const auto bits = [](float v) { return std::bit_cast<std::uint32_t>(v); };
  EXPECT_EQ(bits(kernels::scalar::gelu_f32(-inf)), bits(-0.0f));
  EXPECT_EQ(kernels::scalar::gelu_f32(inf), inf);
  EXPECT_EQ(bits(kernels::scalar::gelu_f32(-0.0f)), bits(-0.0f));
  EXPECT_EQ(bits(kernels::scalar::gelu_f32(0.0f)), bits(0.0f));
  EXPECT_EQ(bits(kernels::scalar::gelu_f32(-15.0f)), bits(-0.0f));  // below x ≈ −14.1
  EXPECT_LT(kernels::scalar::gelu_f32(-13.0f), 0.0f);               // still a subnormal there
  EXPECT_EQ(kernels::scalar::gelu_f32(100.0f), 100.0f);
  EXPECT_TRUE(std::isnan(kernels::scalar::gelu_f32(std::nanf(""))));
}

// gelu_f32 over the f32 numbers where it computes (|x| ≤ 14.5: beyond, gelu(x) rounds to −0 or
// to x, which the sweep checks): every 997th bit pattern here (2.2 M values), every one under
// TAPESTRY_ACCURACY_SCAN (2.2 G values; runtime_accuracy_scan, 3–8 min), within the stated
// 3.5 ulp. The truth is f64 erfc: x is exact in f64, t = −x/√2 is within 2^−53 relative, and
// erfc's condition number 2t² ≤ 211 here leaves the truth within ~2^−44 relative, far below an
// f32 ulp (long double, as the sweep uses, would take ~4× longer).
TEST(BranchlessGelu, EveryFloatWithinTheBound) {
  const std::uint32_t stride = std::getenv("TAPESTRY_ACCURACY_SCAN") != nullptr ? 1 : 997;
  constexpr std::uint32_t kTop = 0x41680000u;  // 14.5
  LD worst = 0;
  float worst_x = 0;
  std::uint64_t count = 0;
  for (std::uint32_t sign : {0u, 0x80000000u}) {
    for (std::uint32_t b = 0; b <= kTop; b += stride) {
      const float x = std::bit_cast<float>(b | sign);
      const double xd = x;
      const double truth = 0.5 * xd * std::erfc(-xd * 0.70710678118654752440);
      const LD e = ulp_error<float>(kernels::scalar::gelu_f32(x), truth);
      ++count;
      if (e > worst) {
        worst = e;
        worst_x = x;
      }
    }
  }
  std::cout << "[ accuracy ] gelu_f32 over " << count << " f32 values in [−14.5, 14.5]: max "
            << static_cast<double>(worst) << " ulp at x = " << worst_x << "\n";
  EXPECT_LE(worst, 3.5) << "at x = " << worst_x;
}

// softmax's f32 exponential: e^(x − m) within 1.1 f32 ulp (exp_f32's bound) for m across the f32
// range and x − m over [−104, 0] (d carried as d + err: rounding d instead costs up to 60 ulp near
// e^−80, which the bound catches), subnormal results included; exactly +0 below
// softmax_live_from(m) and at x = −∞; NaN stays NaN.
TEST(SoftmaxExpF32, WithinExpsUlpsAndZeroBelowTheLiveTerms) {
  using kernels::scalar::softmax_exp_f32;
  using kernels::scalar::softmax_live_from;
  LD worst = 0;
  float worst_x = 0, worst_m = 0;
  for (float m : {0.0f, 1.0f, -1.0f, 3.25f, 17.7f, -40.1f, 1000.3f, -1e5f, 1e30f}) {
    const float live_from = softmax_live_from(m);
    for (double d = -104.0; d <= 0.0; d += 0.000731) {
      const float x = static_cast<float>(m + d);
      if (x < live_from) continue;
      const LD e = ulp_error<float>(softmax_exp_f32(x, m, live_from),
                                    std::exp(static_cast<LD>(x) - static_cast<LD>(m)));
      if (e > worst) worst = e, worst_x = x, worst_m = m;
    }
    EXPECT_EQ(softmax_exp_f32(m, m, live_from), 1.0f);
    EXPECT_EQ(softmax_exp_f32(std::nextafter(live_from, -INFINITY), m, live_from), 0.0f);
    EXPECT_EQ(softmax_exp_f32(-INFINITY, m, live_from), 0.0f);
  }
  EXPECT_LE(worst, 1.1L) << "x " << worst_x << " m " << worst_m;
  EXPECT_GT(worst,
            0.5L);  // f32 arithmetic, not a correctly rounded exp: else this measures nothing
  std::cout << "[ accuracy ] softmax_exp_f32: max " << static_cast<double>(worst) << " ulp\n";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(softmax_exp_f32(nan, 1.0f, softmax_live_from(1.0f))));
  EXPECT_TRUE(std::isnan(softmax_exp_f32(1.0f, nan, softmax_live_from(nan))));
  EXPECT_TRUE(std::isnan(softmax_exp_f32(INFINITY, INFINITY, softmax_live_from(INFINITY))));
}

// The row max is an integer max over the ordered bits: equal to the floating-point max on rows
// without NaN (±0 giving +0), NaN for a NaN anywhere, at every length 1..40 and position.
TEST(SoftmaxMax, EqualsTheFloatMaxAndPropagatesNaN) {
  using kernels::scalar::softmax_max;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  for (std::int64_t n = 1; n <= 40; ++n) {
    std::vector<float> x(n);
    for (int trial = 0; trial < 20; ++trial) {
      for (float& v : x) v = trial % 2 ? -std::fabs(normal(rng)) : normal(rng);
      EXPECT_EQ(softmax_max(x.data(), 1, n), *std::max_element(x.begin(), x.end())) << n;
    }
    for (std::int64_t at = 0; at < n; ++at) {
      std::vector<float> y(n, -std::numeric_limits<float>::infinity());
      EXPECT_EQ(softmax_max(y.data(), 1, n), -std::numeric_limits<float>::infinity());
      y[at] = -std::numeric_limits<float>::quiet_NaN();
      EXPECT_TRUE(std::isnan(softmax_max(y.data(), 1, n))) << n << " " << at;
    }
  }
  const std::vector<double> zeros{-0.0, 0.0, -0.0};
  EXPECT_FALSE(std::signbit(softmax_max(zeros.data(), 1, 3)));
  EXPECT_TRUE(std::signbit(softmax_max(zeros.data(), 2, 2)));  // −0, −0
  const std::vector<double> negative{-3.0, -1.0, -2.0, -1e300, -DBL_TRUE_MIN};
  EXPECT_EQ(softmax_max(negative.data(), 1, 5), -DBL_TRUE_MIN);
  EXPECT_EQ(softmax_max(negative.data(), 1, 4), -1.0);
}

// The row function computes the same bits whatever the strides (the unit-stride copy of its loops
// vectorises, the strided one does not) and wherever the row sits in memory (a vectoriser that
// peeled elements to align the loads must not change the order of the sum).
template <typename T>
using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

template <typename T>
void expect_row_independent_of_layout() {
  std::mt19937 rng(17);
  std::normal_distribution<double> normal(0, 20);
  std::vector<T> scratch;
  for (std::int64_t n : {1, 3, 8, 17, 1000}) {
    std::vector<T> x(n);
    for (T& v : x) v = static_cast<T>(normal(rng));
    std::vector<T> want(n);
    kernels::scalar::softmax_row(x.data(), 1, want.data(), 1, n, scratch);
    std::vector<T> xs(3 * n), rs(2 * n);
    for (std::int64_t j = 0; j < n; ++j) xs[3 * j] = x[j];
    kernels::scalar::softmax_row(xs.data(), 3, rs.data(), 2, n, scratch);
    for (std::int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(std::bit_cast<Bits<T>>(rs[2 * j]), std::bit_cast<Bits<T>>(want[j])) << n;
    }
    for (std::int64_t offset = 1; offset < 8; ++offset) {
      std::vector<T> xo(n + offset), ro(n + offset);
      std::copy(x.begin(), x.end(), xo.begin() + offset);
      kernels::scalar::softmax_row(xo.data() + offset, 1, ro.data() + offset, 1, n, scratch);
      for (std::int64_t j = 0; j < n; ++j) {
        ASSERT_EQ(std::bit_cast<Bits<T>>(ro[offset + j]), std::bit_cast<Bits<T>>(want[j])) << n;
      }
    }
  }
}

TEST(SoftmaxRow, SameBitsForAnyStrideAndAlignment) {
  expect_row_independent_of_layout<float>();
  expect_row_independent_of_layout<double>();
}

// The first live f32 term: every x below softmax_live_from(m) is dead (x − m < −104 in f64: its
// term rounds to +0) and every x from it on is live, for m anywhere in the f32 range.
TEST(SoftmaxLiveFrom, SplitsDeadFromLiveTermsExactly) {
  using kernels::scalar::softmax_live_from;
  const float inf = std::numeric_limits<float>::infinity();
  const auto live = [](float x, float m) {
    return !(static_cast<double>(x) - static_cast<double>(m) < -104.0);
  };
  for (float m : {0.0f, -0.0f, 1.0f, -1.0f, 0x1p-60f, -0x1p-60f, FLT_TRUE_MIN, 3.7e5f, -98.25f,
                  1e30f, -1e30f, FLT_MAX, -FLT_MAX}) {
    const float t = softmax_live_from(m);
    EXPECT_TRUE(live(t, m)) << m;
    EXPECT_FALSE(live(std::nextafter(t, -inf), m)) << m;
    EXPECT_FALSE(live(-inf, m)) << m;
  }
  EXPECT_EQ(softmax_live_from(inf), inf);
  EXPECT_EQ(softmax_live_from(-inf), -inf);
  EXPECT_EQ(softmax_live_from(std::numeric_limits<float>::quiet_NaN()), -inf);
}

// The compensated f64 sum of mean and variance must not turn an infinite sum into NaN: its
// compensation is inf − inf there (found by the verifier's oracle, where mean([1, −inf]) came
// out NaN in f64 but −inf in f32).
TEST(RowMoments, InfiniteRowsKeepTheirInfinity) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const std::vector<double>& row : {std::vector<double>{1, -inf, 2}, {-inf, -inf}, {3, inf}}) {
    const double want =
        std::accumulate(row.begin(), row.end(), 0.0) / static_cast<double>(row.size());
    const auto n = static_cast<std::int64_t>(row.size());
    EXPECT_EQ(kernels::scalar::row_mean(row.data(), 1, n), want);
    std::vector<float> f(row.begin(), row.end());
    EXPECT_EQ(kernels::scalar::row_mean(f.data(), 1, n), want);
  }
  const std::vector<double> mixed{-inf, inf, 1};
  EXPECT_TRUE(std::isnan(kernels::scalar::row_mean(mixed.data(), 1, 3)));
  const std::vector<double> finite{1e300, -1e300, 3, 1};
  EXPECT_EQ(kernels::scalar::row_mean(finite.data(), 1, 4), 1.0);  // still compensated
}

// The float32-lane building blocks (scalar_ops.h, "float32 lanes").

// e^r − 1 on the Cody–Waite remainder |r| ≤ 0.35: within 1.5·2^−24 relative of the truth (f32
// roundings and the polynomial's error), no cancellation for tiny |r| (e^r − 1 ≈ r exactly); both
// forms, the Taylor one with separate multiplies and adds and the minimax one with FMAs.
template <bool kFused>
void expect_expm1_reduced_accurate() {
  using kernels::scalar::expm1_reduced_f32;
  LD worst = 0;
  float at = 0;
  for (float r = -0.35f; r <= 0.35f; r += 0x1p-17f) {
    const LD e = relative_error(expm1_reduced_f32<kFused>(r), std::expm1(LD{r}));
    if (e > worst) worst = e, at = r;
  }
  for (float r = 0x1p-120f; r < 0.3f; r *= 1.37f) {
    worst = std::max(worst, relative_error(expm1_reduced_f32<kFused>(r), std::expm1(LD{r})));
    worst = std::max(worst, relative_error(expm1_reduced_f32<kFused>(-r), std::expm1(LD{-r})));
  }
  EXPECT_LT(worst, 1.5L * 0x1p-24L) << "at r = " << at;
  std::cout << "[ accuracy ] expm1_reduced_f32<" << kFused << ">: max relative error "
            << static_cast<double>(worst / 0x1p-24L) << "·2^−24\n";
  EXPECT_EQ(expm1_reduced_f32<kFused>(-0.0f), 0.0f);
}

TEST(F32Lanes, Expm1ReducedWithinOneAndAHalfUlpsRelative) {
  expect_expm1_reduced_accurate<false>();
  expect_expm1_reduced_accurate<true>();
}

// m·2^k in two steps rounds once: it equals the f64 product rounded to f32, for every k in
// [−252, 254] (subnormal, normal and overflowing results), m across [1, 2) and a few signs.
TEST(F32Lanes, ScaleByPowerOfTwoRoundsOnce) {
  using kernels::scalar::scale_by_power_of_two_f32;
  int checked = 0;
  for (std::int32_t k = -252; k <= 254; ++k) {
    for (float m : {1.0f, 1.5f, 0x1.fffffep0f, 0x1.000002p0f, 1.3377f, -1.75f, 0.75f, -0.70001f}) {
      const float want = static_cast<float>(std::ldexp(static_cast<double>(m), k));
      ASSERT_EQ(std::bit_cast<std::uint32_t>(scale_by_power_of_two_f32(m, k)),
                std::bit_cast<std::uint32_t>(want))
          << m << " · 2^" << k;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 507 * 8);
}

// What gelu_f32 and softmax build on: fused_multiply_add rounds once, so the rest of a product,
// fma(a, b, −fl(a·b)), and a division's remainder, fma(−fl(c/d), d, c), come out exact (an
// unfused a·b + c, or a contracted-then-rounded one, gives 0 or another value for most pairs).
TEST(F32Lanes, FusedMultiplyAddGivesExactRests) {
  using kernels::scalar::fused_multiply_add;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> any(-1e4f, 1e4f);
  int nonzero = 0;
  for (int i = 0; i < 100000; ++i) {
    const float a = any(rng), b = any(rng);
    const float p = a * b;
    const float rest = fused_multiply_add(a, b, -p);
    ASSERT_EQ(static_cast<double>(p) + static_cast<double>(rest),
              static_cast<double>(a) * static_cast<double>(b));
    nonzero += rest != 0.0f;
    const float q = a / b;
    ASSERT_EQ(static_cast<double>(fused_multiply_add(-q, b, a)),
              static_cast<double>(a) - static_cast<double>(q) * static_cast<double>(b));
  }
  EXPECT_GT(nonzero, 90000);  // the products are mostly inexact: the rests are not all 0
  EXPECT_EQ(fused_multiply_add(1 + 0x1p-12f, 1 + 0x1p-12f, -(1 + 0x1p-11f)), 0x1p-24f);
}

// The f32 exp, tanh and sigmoid at their limits and switches, bit for bit.
TEST(BranchlessF32, SpecialValues) {
  using namespace kernels::scalar;  // NOLINT: the helpers under test
  const float inf = std::numeric_limits<float>::infinity();
  const auto bits = [](float v) { return std::bit_cast<std::uint32_t>(v); };
  EXPECT_EQ(exp_f32(-inf), 0.0f);
  EXPECT_EQ(exp_f32(inf), inf);
  EXPECT_EQ(exp_f32(88.73f), inf);  // e^88.73 > FLT_MAX (ln FLT_MAX ≈ 88.7228)
  EXPECT_LE(ulp_error<float>(exp_f32(88.72283f), std::exp(LD{88.72283f})), 1);  // ≈ 3.4028e38
  EXPECT_EQ(exp_f32(1e30f), inf);
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-104.0f), 0.0f);
  EXPECT_EQ(exp_f32(-103.9f), FLT_TRUE_MIN);  // e^−103.9 ≈ 8.1e−46: nearer 2^−149 than 0
  EXPECT_EQ(exp_f32(-1e30f), 0.0f);
  EXPECT_TRUE(std::isnan(exp_f32(std::nanf(""))));
  EXPECT_EQ(tanh_f32(inf), 1.0f);
  EXPECT_EQ(tanh_f32(-inf), -1.0f);
  EXPECT_EQ(tanh_f32(9.1f), 1.0f);
  EXPECT_LT(tanh_f32(8.0f), 1.0f);  // 1 − 2.25e−7
  EXPECT_EQ(bits(tanh_f32(-0.0f)), bits(-0.0f));
  EXPECT_EQ(bits(tanh_f32(0.0f)), bits(0.0f));
  EXPECT_EQ(tanh_f32(FLT_TRUE_MIN), FLT_TRUE_MIN);
  EXPECT_EQ(tanh_f32(-1e-20f), -1e-20f);
  EXPECT_TRUE(std::isnan(tanh_f32(std::nanf(""))));
  EXPECT_EQ(sigmoid_f32(-inf), 0.0f);
  EXPECT_EQ(sigmoid_f32(inf), 1.0f);
  EXPECT_EQ(sigmoid_f32(0.0f), 0.5f);
  EXPECT_EQ(sigmoid_f32(-0.0f), 0.5f);
  EXPECT_EQ(sigmoid_f32(-103.9f), FLT_TRUE_MIN);
  EXPECT_EQ(sigmoid_f32(-800.0f), 0.0f);
  EXPECT_TRUE(std::isnan(sigmoid_f32(std::nanf(""))));
}

}  // namespace
}  // namespace tapestry::runtime
