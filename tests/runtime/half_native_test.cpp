// The fast kernels' native 16-bit paths (docs/runtime.md, "bfloat16 and float16"):
//   1. conv2d and grouped_conv2d on oneDNN's bf16/f16 convolution (kernels/fast/conv_onednn.h),
//      plain and fused (conv ⇒ relu, conv ⇒ add ⇒ relu), sharded, under every conv backend:
//      each result against a float64 convolution of the same 16-bit inputs computed here (the
//      bound of one float32 dot product plus the 16-bit roundings the graph stores) and against
//      the verifier's low-precision bar; the native run took oneDNN's 16-bit convolution exactly
//      when it should (half_conv_runs), and on a CPU with AVX512_BF16 bf16 must be native. The
//      ctest `runtime_half_native_avx2` runs the conv graphs again under ONEDNN_MAX_CPU_ISA=AVX2,
//      where oneDNN has no bf16 convolution: every call widens, and still passes.
//   2. the elementwise maps, copies, softmax, mean and variance on 16-bit cells, bitwise against
//      the same kernels run on widened float32 copies (the path they replaced; a NaN equal to any
//      NaN), over every bf16
//      and f16 bit pattern for the unary maps and under every instruction set this CPU runs; the
//      native run counted its 16-bit calls (half_native_calls) and the widened one none.
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "conv_onednn.h"
#include "elementwise_vector.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/fast_kernels.h"
#include "verify_testing.h"

namespace tapestry::runtime {
namespace {

// The fast set with every kernel wrapped by widen_half_floats: a 16-bit call runs the fast
// kernel on float32 copies — what every 16-bit call of these kernels ran before they went native.
const ExecutableKernels& widened_fast_kernels() {
  static const ExecutableKernels set = [] {
    ExecutableKernels r;
    for (const std::string& name : fast_kernels().names()) {
      r.add(name, fast_kernels().find(name), fast_kernels().find_prepare(name));
    }
    return r;
  }();
  return set;
}

std::string replace_dtype(std::string tap, const std::string& dtype) {
  for (std::size_t at = tap.find("DT"); at != std::string::npos; at = tap.find("DT", at)) {
    tap.replace(at, 2, dtype);
  }
  return tap;
}

Buffer as_float64(const Buffer& b) {
  Buffer wide(DType::kFloat64, b.range());
  convert_elements(b.view(), wide.view());
  return wide;
}

// ---- 1. conv2d ---------------------------------------------------------------------------------

struct ConvFamily {
  std::string name;
  std::int64_t n, c, h, w, o, k, stride, pad, groups;
  bool residual, relu;
  std::string plan;
  bool auto_native;  // kAuto takes the 16-bit primitive (pays off, the metakernel's layout)
};

std::vector<ConvFamily> conv_families() {
  const std::string fuse = R"({"fuse": "auto"})";
  return {
      {"3x3", 2, 16, 11, 11, 8, 3, 1, 0, 1, false, false, "{}", true},
      {"3x3 pad 1 stride 2", 2, 16, 13, 10, 12, 3, 2, 1, 1, false, false, "{}", true},
      {"1x1", 2, 32, 8, 5, 16, 1, 1, 0, 1, false, false, "{}", true},
      {"3 channels (below the pay-off)", 2, 3, 12, 12, 8, 3, 1, 0, 1, false, false, "{}", false},
      {"3x3 split n and o", 2, 16, 11, 11, 8, 3, 1, 0, 1, false, false,
       R"({"ops": {"Y": {"split": {"n": 2, "o": 2}}}})", true},
      {"3x3 split c (a block dim: widens)", 2, 32, 11, 11, 8, 3, 1, 0, 1, false, false,
       R"({"ops": {"Y": {"split": {"c": 2}}}})", false},
      {"3x3 relu fused", 2, 16, 11, 11, 8, 3, 1, 0, 1, false, true, fuse, true},
      {"3x3 add relu fused", 2, 16, 11, 11, 8, 3, 1, 1, 1, true, true, fuse, true},
      {"1x1 add relu fused", 2, 32, 8, 5, 16, 1, 1, 0, 1, true, true, fuse, true},
      {"1x1 add relu fused, split n", 2, 32, 8, 8, 16, 1, 1, 0, 1, true, true,
       R"({"ops": {"Y/conv2d": {"split": {"n": 2}}}, "fuse": "auto"})", true},
      {"grouped 4 groups", 2, 16, 10, 10, 16, 3, 1, 0, 4, false, false, "{}", true},
      {"depthwise", 2, 16, 10, 10, 16, 3, 1, 1, 16, false, true, "{}", true},
  };
}

std::int64_t out_size(const ConvFamily& f, std::int64_t in) {
  return (in + 2 * f.pad - f.k) / f.stride + 1;
}

std::string conv_tap(const ConvFamily& f) {
  const std::int64_t oh = out_size(f, f.h), ow = out_size(f, f.w);
  std::string tap = fmt::format("X: DT[{}, {}, {}, {}]\nW: DT[{}, {}, {}, {}]\n", f.n, f.c, f.h,
                                f.w, f.o, f.c / f.groups, f.k, f.k);
  if (f.residual) tap += fmt::format("R: DT[{}, {}, {}, {}]\n", f.n, f.o, oh, ow);
  std::string expr = f.groups == 1
                         ? fmt::format("conv2d(X, W, stride={}, padding={})", f.stride, f.pad)
                         : fmt::format("grouped_conv2d(X, W, groups={}, stride={}, padding={})",
                                       f.groups, f.stride, f.pad);
  if (f.residual) expr = "add(" + expr + ", R)";
  if (f.relu) expr = "relu(" + expr + ")";
  return tap + "Y = " + expr + "\noutput Y\n";
}

// Y in float64 from the 16-bit inputs, each cell against the bound: one float32 dot product of
// K = c/groups·k² terms (K + 1 roundings of Σ|x·w|), then a 16-bit rounding of the convolution
// and (with a residual) one of the sum — what the unfused graph stores; relu is exact.
void expect_within_float64(const ConvFamily& f, const ir::Graph& graph, const BufferMap& inputs,
                           const Buffer& y, double u16) {
  const Buffer x = as_float64(inputs.at(find_tensor(graph, "X")));
  const Buffer w = as_float64(inputs.at(find_tensor(graph, "W")));
  std::optional<Buffer> r;
  if (f.residual) r = as_float64(inputs.at(find_tensor(graph, "R")));
  const Buffer got = as_float64(y);
  const auto xv = x.values<double>(), wv = w.values<double>(), gv = got.values<double>();
  const std::int64_t oh = out_size(f, f.h), ow = out_size(f, f.w);
  const std::int64_t cg = f.c / f.groups, og = f.o / f.groups;
  const double terms = static_cast<double>(cg * f.k * f.k);
  int bad = 0;
  for (std::int64_t b = 0; b < f.n; ++b) {
    for (std::int64_t o = 0; o < f.o; ++o) {
      for (std::int64_t i = 0; i < oh; ++i) {
        for (std::int64_t j = 0; j < ow; ++j) {
          double exact = 0, mag = 0;
          for (std::int64_t c = 0; c < cg; ++c) {
            const std::int64_t ci = (o / og) * cg + c;
            for (std::int64_t a = 0; a < f.k; ++a) {
              for (std::int64_t e = 0; e < f.k; ++e) {
                const std::int64_t yy = i * f.stride + a - f.pad, xx = j * f.stride + e - f.pad;
                if (yy < 0 || yy >= f.h || xx < 0 || xx >= f.w) continue;
                const double p =
                    xv[static_cast<std::size_t>(((b * f.c + ci) * f.h + yy) * f.w + xx)] *
                    wv[static_cast<std::size_t>(((o * cg + c) * f.k + a) * f.k + e)];
                exact += p;
                mag += std::abs(p);
              }
            }
          }
          const std::size_t at = static_cast<std::size_t>(((b * f.o + o) * oh + i) * ow + j);
          double bound = (terms + 1) * 0x1p-24 * mag + u16 * mag;
          if (r) {
            const double res = r->values<double>()[at];
            exact += res;
            bound += u16 * (mag + std::abs(res)) + 0x1p-24 * std::abs(res);
          }
          if (f.relu) exact = std::max(exact, 0.0);
          if (!(std::abs(gv[at] - exact) <= bound + 1e-30) && ++bad <= 3) {
            ADD_FAILURE() << "Y at " << at << ": " << gv[at] << ", float64 " << exact << ", bound "
                          << bound;
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

// Whether oneDNN runs a 16-bit convolution of `dtype` here: a 16→8 3×3 conv2d forced to oneDNN.
bool native_conv_here(DType dtype) {
  const ConvFamily probe{"probe", 1, 16, 10, 10, 8, 3, 1, 0, 1, false, false, "{}", true};
  const std::string spelling = dtype == DType::kBFloat16 ? "bf16" : "f16";
  const ir::Graph graph = verify_testing::build(replace_dtype(conv_tap(probe), spelling));
  const BufferMap inputs = generate_inputs(graph, {.seed = 1});
  set_conv_backend(ConvBackend::kOneDnn);
  const std::uint64_t before = fast::half_conv_runs();
  (void)verify_testing::run_plan(graph, verify_testing::plan("{}"), inputs);
  set_conv_backend(ConvBackend::kAuto);
  return fast::half_conv_runs() > before;
}

TEST(HalfConvGraphs, NativeAndWidenedWithinFloat64AndTheBar) {
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  const bool limited = isa != nullptr && std::string(isa) == "AVX2";
  if (limited) {
    EXPECT_FALSE(native_conv_here(DType::kBFloat16)) << "ONEDNN_MAX_CPU_ISA=AVX2 has bf16 conv";
  } else if (__builtin_cpu_supports("avx512bf16")) {
    EXPECT_TRUE(native_conv_here(DType::kBFloat16)) << "AVX512_BF16 but no native bf16 conv";
  }
  int checked = 0;
  for (const auto& [dtype, spelling, u16] : {std::tuple{DType::kBFloat16, "bf16", 0x1p-8},
                                             std::tuple{DType::kFloat16, "f16", 0x1p-11}}) {
    const bool native = native_conv_here(dtype);
    std::cout << "[ half conv ] " << spelling << ": oneDNN 16-bit convolution "
              << (native ? "native" : "not available (widens)") << "\n";
    for (const ConvFamily& f : conv_families()) {
      SCOPED_TRACE(f.name + " in " + spelling);
      const ir::Graph graph = verify_testing::build(replace_dtype(conv_tap(f), spelling));
      const rewrite::Plan plan = verify_testing::plan(f.plan);
      const BufferMap inputs = generate_inputs(graph, {.seed = 7});
      for (ConvBackend backend : {ConvBackend::kAuto, ConvBackend::kOneDnn, ConvBackend::kIm2col}) {
        const char* name = backend == ConvBackend::kAuto     ? "auto"
                           : backend == ConvBackend::kOneDnn ? "onednn"
                                                             : "im2col";
        SCOPED_TRACE(name);
        set_conv_backend(backend);
        reset_fast_kernel_counts();
        const std::uint64_t before = fast::half_conv_runs();
        const BufferMap results = verify_testing::run_plan(graph, plan, inputs);
        const std::uint64_t runs = fast::half_conv_runs() - before;
        const FastKernelCounts counts = fast_kernel_counts();
        set_conv_backend(ConvBackend::kAuto);
        const Buffer& y = results.at(find_tensor(graph, "Y"));
        expect_within_float64(f, graph, inputs, y, u16);
        const VerifyReport report = verify_outputs(graph, inputs, results);
        EXPECT_TRUE(report.pass()) << report.text();
        const bool expected =
            native && backend != ConvBackend::kIm2col &&
            (backend == ConvBackend::kOneDnn ? f.plan.find("\"c\"") == std::string::npos
                                             : f.auto_native);
        if (expected) {
          EXPECT_GT(runs, 0U) << "the native 16-bit convolution was not taken";
          if (f.plan.find("fuse") != std::string::npos) {
            EXPECT_GT(counts.fused_epilogues, 0U) << "the fused chain ran stage by stage";
          }
        } else {
          EXPECT_EQ(runs, 0U) << "a 16-bit convolution ran where the call should widen";
        }
        EXPECT_EQ(counts.fallback_calls, 0U);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2 * 3 * static_cast<int>(conv_families().size()));
}

// ---- 2. elementwise, copies, softmax, moments: bitwise the widened path ------------------------

struct Family {
  std::string name;
  std::string tap;
  std::string plan = "{}";
};

// Every 16-bit pattern in X [256, 256]; the unary maps.
std::vector<Family> unary_families() {
  std::vector<Family> f;
  for (const char* op :
       {"relu", "neg", "exp", "tanh", "sigmoid", "gelu", "sqrt", "log", "floor", "ceil", "round"}) {
    f.push_back({op, fmt::format("X: DT[256, 256]\nY = {}(X)\noutput Y\n", op)});
  }
  f.push_back({"gelu split", "X: DT[256, 256]\nY = gelu(X)\noutput Y\n",
               R"({"ops": {"Y": {"split": {"d0": 3, "d1": 2}}}})"});
  f.push_back({"transpose", "X: DT[256, 256]\nY = transpose(X)\noutput Y\n", "{}"});
  f.push_back({"permute",
               "X: DT[256, 256]\nY = permute(reshape(X, shape=[16, 16, 256]), perm=[2, 0, 1])\n"
               "output Y\n"});
  f.push_back({"mean", "X: DT[256, 256]\nY = mean(X, dim=1)\noutput Y\n"});
  f.push_back({"variance over dim 0", "X: DT[256, 256]\nY = variance(X, dim=0)\noutput Y\n"});
  return f;
}

// A and B hold every pair of ~300 patterns (specials among them), S one value broadcast.
std::vector<Family> binary_families() {
  const std::string in = "A: DT[300, 300]\nB: DT[300, 300]\nS: DT[1]\nb: DT[300]\n";
  std::vector<Family> f;
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "pow", "equal", "less",
                         "greater_equal", "logical_and"}) {
    f.push_back({op, in + fmt::format("Y = {}(A, B)\nZ = {}(A, S)\noutput Y\noutput Z\n", op, op)});
  }
  f.push_back({"bias_add", in + "Y = bias_add(A, b)\noutput Y\n"});
  f.push_back({"softmax", "X: DT[300, 300]\nY = softmax(X)\noutput Y\n"});
  f.push_back({"softmax split", "X: DT[300, 300]\nY = softmax(X)\noutput Y\n",
               R"({"ops": {"Y": {"split": {"batch": 4}}}})"});
  return f;
}

// Fills X with every 16-bit pattern (row-major), A/B with all pairs of the picks, S with a pick,
// the softmax rows with finite values spread ±40 and a few −∞.
void fill_patterns(const ir::Graph& graph, BufferMap& inputs, DType dtype) {
  std::vector<std::uint16_t> picks = {0x0000, 0x8000, 0x0001, 0x8001, 0x7F80, 0xFF80, 0x7FC0,
                                      0x7C00, 0xFC00, 0x7E00, 0x3F80, 0x3C00, 0x4000, 0xC000};
  for (std::uint32_t p = 7; picks.size() < 300; p += 219) picks.push_back(p & 0xFFFF);
  std::mt19937 rng(11);
  for (auto& [t, buffer] : inputs) {
    const std::string name = tensor_name(graph, t);
    visit_storage_dtype(dtype, [&]<typename H>() {
      if constexpr (is_half_float_v<H>) {
        auto cells = buffer.values<H>();
        for (std::size_t i = 0; i < cells.size(); ++i) {
          std::uint16_t bits = static_cast<std::uint16_t>(i);
          if (name == "A") bits = picks[i / 300];
          if (name == "B" || name == "b") bits = picks[i % 300];
          if (name == "S") bits = picks[5];
          cells[i] = H{bits};
          if (name == "X" && cells.size() == 90000) {  // the softmax rows
            const float v = std::uniform_real_distribution<float>(-40, 40)(rng);
            cells[i] = narrow_float<H>(i % 97 == 3 ? -INFINITY : v);
          }
        }
      }
    });
  }
}

std::vector<std::uint16_t> bits_of(const Buffer& b) {
  std::vector<std::uint16_t> out;
  visit_storage_dtype(b.dtype(), [&]<typename H>() {
    if constexpr (is_half_float_v<H>) {
      for (H v : b.values<H>()) out.push_back(v.bits);
    }
  });
  return out;
}

void expect_native_bitwise(const std::vector<Family>& families, const std::string& what) {
  for (const auto& [dtype, spelling] :
       {std::pair{DType::kBFloat16, "bf16"}, std::pair{DType::kFloat16, "f16"}}) {
    for (const Family& f : families) {
      SCOPED_TRACE(f.name + " in " + spelling + ", " + what);
      const ir::Graph graph = verify_testing::build(replace_dtype(f.tap, spelling));
      const rewrite::Plan plan = verify_testing::plan(f.plan);
      BufferMap inputs = generate_inputs(graph, {.seed = 3});
      fill_patterns(graph, inputs, dtype);
      reset_fast_kernel_counts();
      const BufferMap native = verify_testing::run_plan(graph, plan, inputs);
      const FastKernelCounts counts = fast_kernel_counts();
      reset_fast_kernel_counts();
      const BufferMap widened =
          verify_testing::run_plan(graph, plan, inputs, widened_fast_kernels());
      EXPECT_GT(counts.half_native_calls, 0U) << "the 16-bit cells were widened";
      EXPECT_EQ(counts.fallback_calls, 0U);
      EXPECT_EQ(fast_kernel_counts().half_native_calls, 0U);
      for (const auto& [t, buffer] : native) {
        // 16-bit cells as bit patterns, a NaN equal to any NaN: the sign and payload of a NaN an
        // operation makes depend on the operand order a compiler picks (x86 returns the first
        // NaN operand), and a copy keeps a signalling NaN that widening quieted.
        const Buffer& other = widened.at(t);
        ASSERT_EQ(buffer.range(), other.range());
        const std::vector<std::uint16_t> a = bits_of(buffer), w = bits_of(other);
        const auto nan = [&](std::uint16_t v) {
          return dtype == DType::kBFloat16 ? (v & 0x7FFF) > 0x7F80 : (v & 0x7FFF) > 0x7C00;
        };
        std::int64_t differ = 0, first = -1;
        for (std::int64_t i = 0; i < std::ssize(a); ++i) {
          if (a[i] == w[i] || (nan(a[i]) && nan(w[i]))) continue;
          if (differ++ == 0) first = i;
        }
        EXPECT_EQ(differ, 0) << tensor_name(graph, t) << " differs from the widened kernel's, "
                             << "first at " << first << ": "
                             << (first >= 0 ? fmt::format("{:#06x} vs {:#06x}", a[first], w[first])
                                            : std::string());
      }
    }
  }
}

TEST(HalfNativeElementwise, BitwiseTheWidenedFloat32KernelsOnEveryInstructionSet) {
  using fast::VectorIsa;
  for (VectorIsa isa : {VectorIsa::kBaseline, VectorIsa::kAvx2, VectorIsa::kAvx512}) {
    if (!fast::cpu_supports(isa)) continue;
    fast::force_vector_isa(isa);
    expect_native_bitwise(unary_families(), std::string(fast::isa_name(isa)));
    expect_native_bitwise(binary_families(), std::string(fast::isa_name(isa)));
  }
  fast::force_vector_isa(std::nullopt);
}

}  // namespace
}  // namespace tapestry::runtime
