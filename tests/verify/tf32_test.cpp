// The oracle's bar for a run whose float32 contractions used TF32 tensor cores (a GPU run with
// --tf32; OracleOptions::tf32_products): the products of operands rounded to 10 mantissa bits.
// A run emulated here on the CPU — x and w rounded to TF32 (to nearest, as the tensor cores'
// conversion does), then an exact-enough float32 GEMM — FAILs the plain float32 bar when every
// rounding goes the same way, PASSes the TF32 bar, and a dropped bias still FAILs it.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>

#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/runtime/oracle.h"
#include "tapestry/runtime/verify.h"
#include "verify_testing.h"

namespace tapestry {
namespace {

using runtime::Buffer;
using runtime::BufferMap;

float to_tf32(float v) {  // 10 mantissa bits, to nearest (ties away), as cvt.rna.tf32.f32
  std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
  bits = (bits + 0x1000U) & 0xFFFFE000U;
  return std::bit_cast<float>(bits);
}

struct Tf32Run {
  ir::Graph graph;
  BufferMap inputs, results;
};

// Y = linear(X, W, b) over K = 2048 terms whose operands all round down by ~2^-11.4 in TF32.
Tf32Run tf32_run(float bias_in_run) {
  Tf32Run r{verify_testing::build(R"(X: f32[16, 2048]
W: f32[8, 2048]
b: f32[8]
Y = linear(X, W, b)
output Y
)"),
            {},
            {}};
  const float v = 1.0f + 3.0f * 0x1p-13f;  // TF32 rounds it to 1 (relative error 3.7e-4)
  for (ir::TensorId t : runtime::graph_inputs(r.graph)) {
    Buffer b(ir::DType::kFloat32, r.graph.tensor(t).range());
    const bool bias = runtime::tensor_name(r.graph, t) == "b";
    for (float& x : b.values<float>()) x = bias ? 0.5f : v;
    r.inputs.emplace(t, std::move(b));
  }
  BufferMap rounded;
  for (const auto& [t, b] : r.inputs) {
    Buffer c = b;
    const bool bias = runtime::tensor_name(r.graph, t) == "b";
    for (float& x : c.values<float>()) x = bias ? bias_in_run : to_tf32(x);
    rounded.emplace(t, std::move(c));
  }
  BufferMap out = runtime::NaiveExecutor(r.graph, runtime::fast_kernels()).run(std::move(rounded));
  for (ir::TensorId t : runtime::graph_outputs(r.graph)) r.results.emplace(t, std::move(out.at(t)));
  return r;
}

runtime::VerifyReport judge(const Tf32Run& r, bool tf32) {
  const runtime::Oracle oracle =
      runtime::evaluate_oracle(r.graph, r.inputs, {.tf32_products = tf32});
  return runtime::verify_outputs(r.graph, r.results, runtime::VerifyMode::kBound, nullptr, &oracle);
}

TEST(Tf32Bar, ATf32RunFailsTheFloat32BarAndPassesTheTf32One) {
  const Tf32Run r = tf32_run(0.5f);
  EXPECT_FALSE(judge(r, false).pass()) << judge(r, false).text();
  EXPECT_TRUE(judge(r, true).pass()) << judge(r, true).text();
}

TEST(Tf32Bar, ADroppedBiasStillFailsTheTf32Bar) {
  // The bar is (2u_t + u_t²)·Σ|x·w| ≈ 2 here; a bias of 4 dropped is off by 4.
  Tf32Run r = tf32_run(0.0f);
  for (auto& [t, b] : r.inputs) {
    if (runtime::tensor_name(r.graph, t) == "b") {
      for (float& x : b.values<float>()) x = 4.0f;
    }
  }
  EXPECT_FALSE(judge(r, true).pass()) << judge(r, true).text();
}

}  // namespace
}  // namespace tapestry
