// The native 16-bit GEMM (kernels/fast/half_gemm.h, half_contraction.cpp):
//   1. run_half_gemm on its own against a float64 oracle, every transpose, bias and ReLU
//      combination at odd sizes, with the bound of one float32 dot product plus one 16-bit
//      rounding of the result — a dropped bias, a lost ReLU or a wrong layout fails it;
//   2. bf16/f16 graphs of every shape family (linear, matmul, transposed operand, batched
//      matmul, every fused post-op, sharded) on the fast kernels: native (backend kAuto) and
//      widened (backend OpenBLAS, which never takes the native path) both PASS the verifier's
//      low-precision bar, and the native run took oneDNN's 16-bit matmul whenever this CPU
//      has it (half_gemm_runs). The ctest `runtime_half_gemm_avx2` runs the graphs again under
//      ONEDNN_MAX_CPU_ISA=AVX2, where oneDNN has no bf16 matmul: every call widens, and PASSes.
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "half_gemm.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/half_float.h"
#include "verify_testing.h"

namespace tapestry::runtime {
namespace {

using fast::GemmArgs;
using fast::HalfGemm;

// ---- 1. run_half_gemm against float64 ---------------------------------------------------------

// Row-major storage of an r×c matrix (transposed: stored c×r), bf16 values in [-1, 1).
struct Matrix {
  std::int64_t rows, cols;
  bool trans;
  std::vector<BFloat16> cells;

  Matrix(std::int64_t r, std::int64_t c, bool t, std::mt19937& rng) : rows(r), cols(c), trans(t) {
    std::uniform_real_distribution<float> u(-1.0F, 1.0F);
    cells.resize(static_cast<std::size_t>(r * c));
    for (BFloat16& x : cells) x = to_bfloat16(u(rng));
  }
  std::int64_t ld() const { return trans ? rows : cols; }
  double at(std::int64_t i, std::int64_t j) const {
    return static_cast<double>(
        cells[static_cast<std::size_t>(trans ? j * rows + i : i * cols + j)]);
  }
};

TEST(HalfGemm, EveryLayoutBiasAndReluAgainstFloat64) {
  const HalfGemm probe{.args = {.m = 2, .n = 2, .k = 2, .lda = 2, .ldb = 2, .ldc = 2}};
  if (!fast::half_gemm_available(probe)) GTEST_SKIP() << "oneDNN has no bf16 matmul on this CPU";
  std::mt19937 rng(29);
  int checked = 0;
  for (auto [m, n, k] : {std::array<std::int64_t, 3>{37, 19, 45}, {1, 33, 7}, {64, 1, 130}}) {
    for (int layout = 0; layout < 4; ++layout) {
      for (int bias_kind = 0; bias_kind < 3; ++bias_kind) {  // none, bf16, f32
        for (bool relu : {false, true}) {
          for (DType dst : {DType::kBFloat16, DType::kFloat32}) {
            SCOPED_TRACE(fmt::format("{}x{}x{} layout {} bias {} relu {} dst {}", m, n, k, layout,
                                     bias_kind, relu, static_cast<int>(dst)));
            const Matrix a(m, k, (layout & 1) != 0, rng), b(k, n, (layout & 2) != 0, rng);
            std::vector<float> bias32(static_cast<std::size_t>(n));
            std::uniform_real_distribution<float> u(-1.0F, 1.0F);
            std::vector<BFloat16> bias16;
            for (float& x : bias32) {
              bias16.push_back(to_bfloat16(u(rng)));
              x = to_float(bias16.back());
            }
            HalfGemm p{.args = GemmArgs{.m = m,
                                        .n = n,
                                        .k = k,
                                        .trans_a = a.trans,
                                        .trans_b = b.trans,
                                        .lda = a.ld(),
                                        .ldb = b.ld(),
                                        .ldc = n},
                       .dst = dst,
                       .relu = relu};
            const void* bias = nullptr;
            if (bias_kind == 1) {
              p.bias = DType::kBFloat16;
              bias = bias16.data();
            } else if (bias_kind == 2) {
              p.bias = DType::kFloat32;
              bias = bias32.data();
            }
            std::vector<float> c32(static_cast<std::size_t>(m * n), -7.0F);
            std::vector<BFloat16> c16(static_cast<std::size_t>(m * n), to_bfloat16(-7.0F));
            void* c = dst == DType::kFloat32 ? static_cast<void*>(c32.data()) : c16.data();
            ASSERT_TRUE(fast::run_half_gemm(p, a.cells.data(), b.cells.data(), bias, c));
            for (std::int64_t i = 0; i < m; ++i) {
              for (std::int64_t j = 0; j < n; ++j) {
                double exact = 0, mag = 0;
                for (std::int64_t q = 0; q < k; ++q) {
                  exact += a.at(i, q) * b.at(q, j);
                  mag += std::abs(a.at(i, q) * b.at(q, j));
                }
                if (bias != nullptr) {
                  exact += bias32[static_cast<std::size_t>(j)];
                  mag += std::abs(bias32[static_cast<std::size_t>(j)]);
                }
                if (relu) exact = std::max(exact, 0.0);
                const std::size_t at = static_cast<std::size_t>(i * n + j);
                const double got = dst == DType::kFloat32 ? c32[at] : to_float(c16[at]);
                // k + 1 float32 additions, then (bf16 C) one rounding to 8 significant bits.
                const double bound = static_cast<double>(k + 1) * 0x1p-24 * mag +
                                     (dst == DType::kFloat32 ? 0.0 : 0x1p-8 * std::abs(exact)) +
                                     1e-30;
                ASSERT_LE(std::abs(got - exact), bound) << "at " << i << ", " << j;
              }
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 3 * 4 * 3 * 2 * 2);
}

// ---- 2. graphs on the fast kernels: native and widened, both within the bar --------------------

struct Family {
  std::string name;
  std::string tap;  // `DT` stands for the 16-bit dtype
  std::string plan;
};

std::vector<Family> families() {
  const std::string lin = "X: DT[37, 45]\nW: DT[19, 45]\nb: DT[19]\n";
  const std::string mm = "A: DT[23, 45]\nB: DT[45, 13]\n";
  std::vector<Family> f = {
      {"linear", lin + "Y = linear(X, W, b)\noutput Y\n", "{}"},
      {"linear-split-out", lin + "Y = linear(X, W, b)\noutput Y\n",
       R"({"ops": {"Y": {"split": {"batch": 2, "out": 3}}}})"},
      {"matmul", mm + "Y = matmul(A, B)\noutput Y\n", "{}"},
      {"matmul-transposed",
       "A: DT[23, 45]\nBt: DT[13, 45]\nY = matmul(A, transpose(Bt))\noutput Y\n", "{}"},
      {"matmul-batched", "A: DT[3, 5, 17, 40]\nB: DT[3, 5, 40, 9]\nY = matmul(A, B)\noutput Y\n",
       "{}"},
      {"mlp-fused",
       lin + "V: DT[7, 19]\nc: DT[7]\nY = linear(relu(linear(X, W, b)), V, c)\noutput Y\n",
       R"({"ops": {"Y": {"split": {"batch": 2}}}, "fuse": "auto"})"},
  };
  for (const char* op : {"relu", "gelu", "tanh", "sigmoid", "exp", "neg"}) {
    f.push_back({fmt::format("linear-{}-fused", op),
                 lin + fmt::format("Y = {}(linear(X, W, b))\noutput Y\n", op),
                 R"({"fuse": "auto"})"});
    f.push_back({fmt::format("matmul-{}-fused", op),
                 mm + fmt::format("Y = {}(matmul(A, B))\noutput Y\n", op), R"({"fuse": "auto"})"});
  }
  return f;
}

std::string replace_dtype(std::string tap, const std::string& dtype) {
  for (std::size_t at = tap.find("DT"); at != std::string::npos; at = tap.find("DT", at)) {
    tap.replace(at, 2, dtype);
  }
  return tap;
}

// Whether oneDNN runs a 16-bit matmul of `dtype` here (not under ONEDNN_MAX_CPU_ISA=AVX2).
bool native_here(DType dtype) {
  const HalfGemm probe{
      .args = {.m = 2, .n = 2, .k = 2, .lda = 2, .ldb = 2, .ldc = 2}, .src = dtype, .dst = dtype};
  return fast::half_gemm_available(probe);
}

TEST(HalfGemmGraphs, NativeAndWidenedPassTheLowPrecisionBar) {
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  const bool avx2 = isa != nullptr && std::string(isa) == "AVX2";
  if (avx2) EXPECT_FALSE(native_here(DType::kBFloat16)) << "ONEDNN_MAX_CPU_ISA=AVX2 has bf16";
  int checked = 0;
  for (const Family& family : families()) {
    for (const auto& [dtype, spelling] :
         {std::pair{DType::kBFloat16, "bf16"}, std::pair{DType::kFloat16, "f16"}}) {
      SCOPED_TRACE(family.name + " in " + spelling);
      const ir::Graph graph = verify_testing::build(replace_dtype(family.tap, spelling));
      const rewrite::Plan plan = verify_testing::plan(family.plan);
      const BufferMap inputs = generate_inputs(graph, {.seed = 5});
      for (GemmBackend backend : {GemmBackend::kAuto, GemmBackend::kOpenBlas}) {
        set_gemm_backend(backend);
        const std::uint64_t before = fast::half_gemm_runs();
        const BufferMap results = verify_testing::run_plan(graph, plan, inputs);
        const std::uint64_t runs = fast::half_gemm_runs() - before;
        const VerifyReport report = verify_outputs(graph, inputs, results);
        EXPECT_TRUE(report.pass())
            << (backend == GemmBackend::kAuto ? "native\n" : "widened\n") << report.text();
        if (backend == GemmBackend::kAuto && native_here(dtype)) {
          EXPECT_GT(runs, 0U) << "the native path was not taken";
        } else {
          EXPECT_EQ(runs, 0U) << "the widening path ran a 16-bit GEMM";
        }
      }
      set_gemm_backend(GemmBackend::kAuto);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * 18);
}

}  // namespace
}  // namespace tapestry::runtime
