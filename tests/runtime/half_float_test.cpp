// bfloat16 and float16 storage: the conversions against independent oracles (NumPy's float16,
// PyTorch's bfloat16 or a NumPy uint32 bit-manipulation reference), exhaustively over every 16-bit
// pattern, and the buffer-level operations on 16-bit tensors.
#include "tapestry/runtime/half_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "kernel_cases.h"
#include "tapestry/runtime/application_executor.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/naive_executor.h"

namespace tapestry::runtime {
namespace {

TEST(HalfFloat, DocumentedExamples) {
  EXPECT_EQ(to_bfloat16(1.0F).bits, 0x3F80);
  EXPECT_EQ(to_float(BFloat16{0x3F80}), 1.0F);
  EXPECT_EQ(to_bfloat16(1.00390625F).bits, 0x3F80);  // 1 + 2^-8: a tie, to the even 1.0
  EXPECT_EQ(to_bfloat16(1.01171875F).bits, 0x3F82);  // 1 + 3·2^-8: a tie, to the even 1 + 2^-6
  EXPECT_EQ(to_float16(65520.0F).bits, 0x7C00);
  EXPECT_EQ(to_float16(65519.0F).bits, 0x7BFF);
  EXPECT_EQ(to_float(Float16{0x0001}), 0x1p-24F);
  EXPECT_EQ(to_float16(0x1p-25F).bits, 0x0000);         // half the smallest subnormal: to even 0
  EXPECT_EQ(to_float16(0x1.000002p-25F).bits, 0x0001);  // just above: up
  EXPECT_EQ(to_float16(-0.0F).bits, 0x8000);
  EXPECT_EQ(to_bfloat16(-0.0F).bits, 0x8000);
  // NaN stays NaN, quiet, even a signalling one whose payload lies below the kept bits.
  const auto snan = std::bit_cast<float>(0x7F800001U);
  EXPECT_TRUE(std::isnan(to_float(to_bfloat16(snan))));
  EXPECT_TRUE(std::isnan(to_float(to_float16(snan))));
  EXPECT_EQ(to_bfloat16(snan).bits & 0x0040, 0x0040);
  EXPECT_EQ(to_bfloat16(std::bit_cast<float>(0xFFFFFFFFU)).bits, 0xFFFF);
}

bool have_numpy() {
  return std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") == 0;
}

template <typename T>
void write_raw(const std::filesystem::path& path, const std::vector<T>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(T)));
}

// Every 16-bit pattern widened, and float32 values narrowed: every high half with low halves at
// and around both types' rounding points (ties, just below, just above) and random ones, so every
// exponent (subnormal float16 results included) meets every rounding case. NumPy (or PyTorch)
// checks each result in a script; NaNs must be NaN on both sides.
TEST(HalfFloat, ExhaustiveAgainstNumPyAndTorch) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tapestry_half_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);

  std::vector<float> bf16_wide(65536), f16_wide(65536);
  for (std::uint32_t h = 0; h < 65536; ++h) {
    bf16_wide[h] = to_float(BFloat16{static_cast<std::uint16_t>(h)});
    f16_wide[h] = to_float(Float16{static_cast<std::uint16_t>(h)});
  }
  std::vector<std::uint32_t> lows = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF,
                                     0x2000, 0x3000, 0x5000, 0x7FFF, 0x8000, 0x8001,
                                     0x9000, 0xEFFF, 0xF000, 0xFFFF};
  std::mt19937 rng(7);
  for (int i = 0; i < 8; ++i) lows.push_back(rng() & 0xFFFF);
  std::vector<std::uint32_t> inputs;
  std::vector<std::uint16_t> bf16_narrow, f16_narrow;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    for (std::uint32_t l : lows) {
      const std::uint32_t bits = (h << 16) | l;
      inputs.push_back(bits);
      bf16_narrow.push_back(to_bfloat16(std::bit_cast<float>(bits)).bits);
      f16_narrow.push_back(to_float16(std::bit_cast<float>(bits)).bits);
    }
  }
  write_raw(dir / "bf16_wide.bin", bf16_wide);
  write_raw(dir / "f16_wide.bin", f16_wide);
  write_raw(dir / "inputs.bin", inputs);
  write_raw(dir / "bf16_narrow.bin", bf16_narrow);
  write_raw(dir / "f16_narrow.bin", f16_narrow);
  std::ofstream(dir / "check.py") << R"py(
import sys
import numpy as np
d = sys.argv[1]
pat = np.arange(65536, dtype=np.uint32)
u16 = pat.astype(np.uint16)

def same(name, got, want):
    # float32 arrays: bitwise equal, or both NaN.
    g, w = got.view(np.uint32), want.view(np.uint32)
    ok = (g == w) | (np.isnan(got) & np.isnan(want))
    if not ok.all():
        i = int(np.argmin(ok))
        sys.exit(f"{name}: {int(ok.size - ok.sum())} cells differ, first at {i}: "
                 f"{hex(int(g[i]))} vs {hex(int(w[i]))}")

# Widening: float16 by NumPy; bfloat16 is the upper half of a float32.
same("f16 widen", np.fromfile(d + "/f16_wide.bin", np.float32), u16.view(np.float16).astype(np.float32))
same("bf16 widen", np.fromfile(d + "/bf16_wide.bin", np.float32), (pat << 16).view(np.float32))

x_bits = np.fromfile(d + "/inputs.bin", np.uint32)
x = x_bits.view(np.float32)
f16 = np.fromfile(d + "/f16_narrow.bin", np.uint16)
with np.errstate(over="ignore"):
    want16 = x.astype(np.float16)
same("f16 narrow", f16.view(np.float16).astype(np.float32), want16.astype(np.float32))
# Signs must agree too (NaN's included).
assert ((f16 >> 15) == (want16.view(np.uint16) >> 15)).all(), "f16 narrow: signs differ"

bf = np.fromfile(d + "/bf16_narrow.bin", np.uint16)
try:
    import torch
    wantbf = torch.from_numpy(x.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    oracle = "torch"
except ImportError:
    # Round to nearest even on the integer bits (finite and infinite values); a NaN keeps its
    # sign and top bits, quieted. (Not independent of the implementation's formula: only torch is.)
    wantbf = ((x_bits + 0x7FFF + ((x_bits >> 16) & 1)) >> 16).astype(np.uint16)
    wantbf = np.where(np.isnan(x), ((x_bits >> 16) | 0x40).astype(np.uint16), wantbf)
    oracle = "numpy"
wide = lambda b: (b.astype(np.uint32) << 16).view(np.float32)
same("bf16 narrow (" + oracle + ")", wide(bf), wide(wantbf))
print("ok", oracle, x.size)
)py";
  const std::string command =
      "/usr/bin/python3 " + (dir / "check.py").string() + " " + dir.string();
  EXPECT_EQ(std::system(command.c_str()), 0);
  std::filesystem::remove_all(dir);
}

TEST(HalfFloat, BuffersHoldTwoBytesACell) {
  Buffer b(DType::kBFloat16, Range({-1, 0}, {2, 5}));
  EXPECT_EQ(b.size_bytes(), 3u * 5u * 2u);
  fill(b.view(), 1.00390625);  // rounds to 1.0 (a tie, to even)
  for (BFloat16 v : b.values<BFloat16>()) EXPECT_EQ(v.bits, 0x3F80);
  Buffer f(DType::kFloat16, Range::of_shape({4}));
  fill(f.view(), 0.1);
  EXPECT_EQ(f.values<Float16>()[3].bits, to_float16(0.1F).bits);
  EXPECT_THROW((void)b.values<float>(), Error);
}

TEST(HalfFloat, ConvertElementsWidensAndRoundsStridedViews) {
  Buffer x =
      Buffer::from_values<float>(Range({0, -2}, {3, 2}), {1.0F, 1.00390625F, 1.01171875F, -3.0F,  //
                                                          65520.0F, 0.1F, -0.0F, 2.0F,            //
                                                          5.0F, 6.0F, 7.0F, 8.0F});
  Buffer bf(DType::kBFloat16, Range({10, 0}, {12, 2}));
  const Range box({0, -1}, {2, 1});  // the middle two columns of the first two rows
  convert_elements(x.view(box), bf.view());
  const std::span<const BFloat16> got = std::as_const(bf).values<BFloat16>();
  EXPECT_EQ(got[0].bits, to_bfloat16(1.00390625F).bits);
  EXPECT_EQ(got[1].bits, 0x3F82);
  EXPECT_EQ(got[2].bits, to_bfloat16(0.1F).bits);
  EXPECT_EQ(got[3].bits, 0x8000);
  // Back to float64, exactly.
  Buffer wide(DType::kFloat64, Range::of_shape({2, 2}));
  convert_elements(bf.view(), wide.view());
  EXPECT_EQ(wide.values<double>()[1], 1.015625);
  EXPECT_EQ(wide.values<double>()[2], static_cast<double>(to_float(to_bfloat16(0.1F))));
  // Integers are not converted.
  Buffer ints(DType::kInt32, Range::of_shape({2, 2}));
  EXPECT_THROW(convert_elements(ints.view(), bf.view()), Error);
}

TEST(HalfFloat, CompareIsBitwiseAndMeasuresInFloat) {
  Buffer a(DType::kFloat16, Range::of_shape({3}));
  Buffer b(DType::kFloat16, Range::of_shape({3}));
  fill(a.view(), 1.0);
  fill(b.view(), 1.0);
  EXPECT_TRUE(compare_buffers(a, b).bitwise_equal);
  b.values<Float16>()[2] = to_float16(1.0009765625F);  // one ulp up
  const BufferComparison c = compare_buffers(a, b);
  EXPECT_EQ(c.differing_cells, 1);
  EXPECT_DOUBLE_EQ(c.max_abs_diff, 0x1p-10);
}

TEST(HalfFloat, GeneratedInputsAreTheFloat32DrawsRounded) {
  const Range r = Range::of_shape({4, 6});
  const Buffer f32 = generate_buffer(DType::kFloat32, r, 5, "X");
  const Buffer bf = generate_buffer(DType::kBFloat16, r, 5, "X");
  const Buffer half = generate_buffer(DType::kFloat16, r, 5, "X");
  for (std::size_t i = 0; i < 24; ++i) {
    EXPECT_EQ(bf.values<BFloat16>()[i].bits, to_bfloat16(f32.values<float>()[i]).bits);
    EXPECT_EQ(half.values<Float16>()[i].bits, to_float16(f32.values<float>()[i]).bits);
  }
  // A box of the tensor draws the same cells.
  const Buffer box = generate_box(DType::kBFloat16, r, Range({1, 2}, {3, 5}), 5, "X");
  EXPECT_EQ(box.at<BFloat16>(Point{2, 4}).bits, bf.at<BFloat16>(Point{2, 4}).bits);
}

// Every float32 kernel case built in bf16 and f16: the 16-bit run is the float32 kernel run on the
// inputs widened, its result rounded once — in both kernel sets, whole and on every sharding
// (reference kernels: bitwise the naive run). The fast linear and matmul run oneDNN's bf16
// matmul instead (half_gemm_test.cpp: within the low-precision bar in general); at these cases'
// sizes its float32 sums round to the same 16-bit results.
TEST(HalfFloatKernels, EveryCaseIsTheFloat32KernelRoundedOnce) {
  using namespace testing;  // NOLINT: test helpers
  int checked = 0;
  for (const Case& c : cases()) {
    for (const char* dtype : {"bfloat16", "float16"}) {
      SCOPED_TRACE(c.name + " in " + dtype);
      GraphBuilder half;
      half.float32_as = dtype;
      const Built built = c.build(half);
      if (half.graph.tensor(built.result).dtype().name() != dtype) continue;  // f64, int cases
      GraphBuilder wide;
      const Built wide_built = c.build(wide);
      const BufferMap inputs = generate_inputs(half.graph, {.seed = 13});
      BufferMap widened;
      for (const auto& [t, buffer] : inputs) {
        Buffer w(DType::kFloat32, buffer.range());
        convert_elements(buffer.view(), w.view());
        widened.emplace(t, std::move(w));
      }
      for (const ExecutableKernels* kernels : {&ExecutableKernels::reference(), &fast_kernels()}) {
        const Buffer f32 = NaiveExecutor(wide.graph, *kernels).run(widened).at(wide_built.result);
        Buffer expected(half.graph.tensor(built.result).dtype().known().value(), f32.range());
        convert_elements(f32.view(), expected.view());
        const Buffer got = NaiveExecutor(half.graph, *kernels).run(inputs).at(built.result);
        EXPECT_TRUE(compare_buffers(expected, got).bitwise_equal)
            << (kernels == &fast_kernels() ? "fast" : "reference");
      }
      const Buffer naive = NaiveExecutor(half.graph).run(inputs).at(built.result);
      for (const auto& parts : c.shardings) {
        GraphBuilder sharded;
        sharded.float32_as = dtype;
        const Built s = c.build(sharded);
        sharded.shard(s.op, parts);
        const Buffer got = ApplicationExecutor(sharded.graph).run(inputs).at(s.result);
        EXPECT_TRUE(compare_buffers(naive, got).bitwise_equal) << "sharded " << parts.size();
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 2 * 12);
}

}  // namespace
}  // namespace tapestry::runtime
