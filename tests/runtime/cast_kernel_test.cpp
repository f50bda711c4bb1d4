// The cast kernel (kernels/cast.yaml) and the direct float64 → 16-bit rounding under it, against
// an independent oracle: exact rational round-to-nearest-even (Python's fractions, written from
// the IEEE definition, not from the implementation) for every pair of float dtypes, and NumPy's
// float64 → float16 conversion. Values: ties, just below and just above them at every exponent
// of each target (subnormals, the overflow threshold), values a float32 rounded to nearest would
// turn into a 16-bit tie (where rounding through float32 goes wrong), random ones, ±0, ±inf, NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "tapestry/runtime/application_executor.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/half_float.h"
#include "tapestry/runtime/naive_executor.h"

namespace tapestry::runtime {
namespace {

using testing::GraphBuilder;
using testing::IndexProjection;
using testing::OperationId;
using testing::TensorId;

TEST(HalfFloat, NarrowsFloat64DirectlyNotThroughFloat32) {
  // 1 + 2^-8 + 2^-40 lies above the bf16 tie 1 + 2^-8; float32 rounds it onto the tie.
  const double above_tie = 1.0 + 0x1p-8 + 0x1p-40;
  EXPECT_EQ(to_bfloat16(static_cast<float>(above_tie)).bits, 0x3F80);  // through float32: wrong
  EXPECT_EQ(to_bfloat16(above_tie).bits, 0x3F81);                      // directly: up
  EXPECT_EQ(to_float16(1.0 + 0x1p-11 + 0x1p-40).bits, 0x3C01);
  EXPECT_EQ(to_float16(-(1.0 + 0x1p-11 + 0x1p-40)).bits, 0xBC01);
  EXPECT_EQ(to_float_round_odd(1.0 + 0x1p-30), 1.0F + 0x1p-23F);
  EXPECT_EQ(to_float_round_odd(1.5), 1.5F);  // exact stays
  EXPECT_EQ(to_bfloat16(1e300).bits, 0x7F80);
  EXPECT_EQ(to_float16(-1e300).bits, 0xFC00);
  EXPECT_EQ(to_float16(65519.99).bits, 0x7BFF);  // below the overflow threshold 65520
  EXPECT_EQ(to_bfloat16(1e-300).bits, 0x0000);
  EXPECT_EQ(to_bfloat16(-1e-300).bits, 0x8000);
  EXPECT_TRUE(std::isnan(to_float(to_bfloat16(std::numeric_limits<double>::quiet_NaN()))));
  EXPECT_EQ(storage_cast<BFloat16>(above_tie).bits, 0x3F81);
}

bool have_numpy() {
  return std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") == 0;
}

// The source values, float64: for each target precision p (significand bits) and exponent e of
// its range, the tie m·2^e + 2^(e−p) of a few significands m, and the tie ± 2^-40 relative and ±
// one float32 ulp; then random values over the whole range and the specials.
std::vector<double> source_values() {
  std::vector<double> v = {0.0,      -0.0,     1.0,      -1.5,     65504.0,   65520.0, 65519.99,
                           3.4e38,   -3.4e38,  1e300,    -1e300,   1e-300,    0x1p-24, 0x1p-25,
                           0x1p-133, 0x1p-134, 0x1p-149, 0x1p-150, 0x1.8p-150};
  v.push_back(std::numeric_limits<double>::infinity());
  v.push_back(-std::numeric_limits<double>::infinity());
  v.push_back(std::numeric_limits<double>::quiet_NaN());
  v.push_back(static_cast<double>(std::numeric_limits<float>::max()));
  v.push_back(std::nextafter(static_cast<double>(std::numeric_limits<float>::max()), 1e300));
  struct Target {
    int p, emin, emax;
  };
  for (Target t : {Target{8, -133, 127}, Target{11, -24, 15}, Target{24, -149, 127}}) {
    for (int e = t.emin - 1; e <= t.emax + 1; e += (t.p == 24 ? 7 : 1)) {
      for (double m : {1.0, 1.5, 1.0 + std::ldexp(1.0, 1 - t.p), 2.0 - std::ldexp(1.0, 1 - t.p)}) {
        const double tie = std::ldexp(m, e) + std::ldexp(1.0, e - t.p);
        for (double rel : {0.0, 0x1p-40, -0x1p-40, 0x1p-26, -0x1p-26}) {
          v.push_back(tie * (1.0 + rel));
          v.push_back(-tie * (1.0 + rel));
        }
      }
    }
  }
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<double> exponent(-160.0, 140.0);
  for (int i = 0; i < 2000; ++i) {
    const double x = std::ldexp(1.0 + static_cast<double>(rng() >> 11) * 0x1p-53,
                                static_cast<int>(exponent(rng)));
    v.push_back(i % 2 == 0 ? x : -x);
  }
  return v;
}

// X (dtype `from`, the source values converted) → cast(to) → R, one operation over a 1-d index.
struct CastGraph {
  GraphBuilder b;
  TensorId x, r;
  OperationId op;
  CastGraph(const std::string& from, const std::string& to, std::int64_t n) {
    const Range range = Range::of_shape({n});
    x = b.tensor("X", from, range);
    r = b.tensor("R", to, range);
    const IndexProjection id = IndexProjection::identity(1);
    const std::string short_to = to == "float32"    ? "f32"
                                 : to == "float64"  ? "f64"
                                 : to == "bfloat16" ? "bf16"
                                                    : "f16";
    op = b.op("cast", range, {{"x", x, id}}, {{"result", r, id}}, {{"to", short_to}});
  }
};

void write_doubles(const std::filesystem::path& path, const Buffer& buffer) {
  Buffer wide(DType::kFloat64, buffer.range());
  convert_elements(buffer.view(), wide.view());
  const std::span<const double> values = std::as_const(wide).values<double>();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size_bytes()));
}

// Every pair of float dtypes: both kernel sets, whole and sharded (3 and 7 pieces), bitwise the
// same; their result against the oracle, in a script.
TEST(CastKernel, EveryPairOfFloatDtypesRoundsOnceToNearestEven) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tapestry_cast_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::vector<double> values = source_values();
  const auto n = static_cast<std::int64_t>(values.size());
  const Buffer source = Buffer::from_values<double>(Range::of_shape({n}), values);
  const std::vector<std::string> dtypes = {"float64", "float32", "bfloat16", "float16"};
  std::string pairs;
  for (const std::string& from : dtypes) {
    for (const std::string& to : dtypes) {
      SCOPED_TRACE(from + " -> " + to);
      CastGraph g(from, to, n);
      Buffer x(g.b.graph.tensor(g.x).dtype().known().value(), source.range());
      convert_elements(source.view(), x.view());
      const std::string stem = from + "_" + to;
      write_doubles(dir / (stem + ".src"), x);
      BufferMap inputs;
      inputs.emplace(g.x, std::move(x));
      const Buffer reference =
          NaiveExecutor(g.b.graph, ExecutableKernels::reference()).run(inputs).at(g.r);
      ASSERT_EQ(reference.dtype(), g.b.graph.tensor(g.r).dtype().known().value());
      const Buffer fast = NaiveExecutor(g.b.graph, fast_kernels()).run(inputs).at(g.r);
      EXPECT_TRUE(compare_buffers(reference, fast).bitwise_equal) << "fast";
      for (std::int64_t parts : {3, 7}) {
        CastGraph sharded(from, to, n);
        sharded.b.shard(sharded.op, {parts});
        const Buffer got = ApplicationExecutor(sharded.b.graph).run(inputs).at(sharded.r);
        EXPECT_TRUE(compare_buffers(reference, got).bitwise_equal) << parts << " shards";
      }
      write_doubles(dir / (stem + ".got"), reference);
      pairs += " " + stem;
    }
  }
  std::ofstream(dir / "check.py") << R"py(
import math, sys
from fractions import Fraction
import numpy as np
d = sys.argv[1]
# (significand bits, exponent of the smallest normal, of the largest finite) per dtype.
FORMATS = {"float64": (53, -1022, 1023), "float32": (24, -126, 127),
           "bfloat16": (8, -126, 127), "float16": (11, -14, 15)}

def rne(v, fmt):
    """v rounded to nearest, ties to even, in the format: exact rationals, IEEE's definition."""
    p, emin, emax = FORMATS[fmt]
    if math.isnan(v) or math.isinf(v) or v == 0.0:
        return v
    a = Fraction(abs(v))
    e = math.frexp(abs(v))[1] - 1          # 2^e <= |v| < 2^(e+1)
    q = max(e, emin) - (p - 1)             # the spacing there: 2^q
    n = a / Fraction(2) ** q
    k = math.floor(n)
    rem = n - k
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and k % 2 == 1):
        k += 1
    r = k * Fraction(2) ** q
    if r >= Fraction(2) ** (emax + 1):
        return math.copysign(math.inf, v)
    return math.copysign(float(r), v)

def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))

bad = 0
for stem in sys.argv[2:]:
    src = np.fromfile(f"{d}/{stem}.src", np.float64)
    got = np.fromfile(f"{d}/{stem}.got", np.float64)
    to = stem.split("_")[1]
    for i, (s, g) in enumerate(zip(src.tolist(), got.tolist())):
        want = rne(s, to)
        if not same(g, want):
            bad += 1
            if bad < 10:
                print(f"{stem}: cell {i}: {s!r} -> {g!r}, want {want!r}")
    if to == "float16":  # NumPy's own float64 -> float16 (a direct rounding)
        with np.errstate(over="ignore"):
            npv = src.astype(np.float16).astype(np.float64)
        ok = (npv == got) | (np.isnan(npv) & np.isnan(got))
        ok &= np.signbit(npv) == np.signbit(got)
        if not ok.all():
            bad += 1
            print(f"{stem}: {int((~ok).sum())} cells differ from NumPy")
print("cells", len(src), "pairs", len(sys.argv) - 2, "bad", bad)
sys.exit(1 if bad else 0)
)py";
  const std::string command =
      "/usr/bin/python3 " + (dir / "check.py").string() + " " + dir.string() + pairs;
  EXPECT_EQ(std::system(command.c_str()), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tapestry::runtime
