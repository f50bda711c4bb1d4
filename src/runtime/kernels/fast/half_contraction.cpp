// The 16-bit contraction (contraction.h, run_half_contraction): linear, matmul and a fused
// GEMM chain on bfloat16 / float16 tensors without widening copies.
//
// Per batch point, one oneDNN matmul on the 16-bit A and B (half_gemm.h), accumulating in
// float32. Two ways to finish:
//   1. direct — the epilogue is at most a leading bias (contiguous along n, C not transposed)
//      and a ReLU: both run inside the primitive on the float32 accumulator, and the primitive
//      rounds C once into the 16-bit output (examples/mlp.tap's two layers);
//   2. through float32 — any other epilogue (gelu, tanh, a second bias, …): the primitive writes
//      a float32 block (with the bias/ReLU prefix it takes), the remaining steps run on it in
//      float32 with the f32 kernels' functions (apply_epilogue), and the block is rounded once
//      into C.
// Either way C is rounded once, where the widening path (half_float_kernel.cpp) rounds every
// stored intermediate of a fused chain: the result is within the verifier's low-precision bar of
// the widening path's, not bitwise equal (oneDNN's blocking also orders the sums differently).
#include <algorithm>
#include <vector>

#include "contraction.h"
#include "half_gemm.h"
#include "tapestry/support/assert.h"

namespace tapestry::runtime::fast {

namespace {

// How many leading steps the primitive applies (the f32 path's post_op_prefix rule, any C).
template <typename H>
std::size_t taken_by_primitive(const ContractionPlan<H>& p,
                               const std::vector<EpilogueStep<H>>& steps) {
  std::size_t taken = 0;
  if (!steps.empty() && steps[0].bias != nullptr) {
    if (p.swapped || (steps[0].step != 1 && p.n != 1)) return 0;
    taken = 1;
  }
  if (taken < steps.size() && steps[taken].bias == nullptr && steps[taken].op == UnaryOp::kRelu) {
    ++taken;
  }
  return taken;
}

// The float32 copy of the biases among `steps` (n values each), and the steps reading them.
template <typename H>
struct WideSteps {
  std::vector<std::vector<float>> biases;
  std::vector<EpilogueStep<float>> steps;
};

template <typename H>
WideSteps<H> widen_steps(std::span<const EpilogueStep<H>> steps, std::int64_t n) {
  WideSteps<H> w;
  w.biases.reserve(steps.size());
  for (const EpilogueStep<H>& s : steps) {
    if (s.bias == nullptr) {
      w.steps.push_back(EpilogueStep<float>{.op = s.op});
      continue;
    }
    std::vector<float>& b = w.biases.emplace_back(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j)
      b[static_cast<std::size_t>(j)] = to_float(s.bias[j * s.step]);
    w.steps.push_back(EpilogueStep<float>{.bias = b.data(), .step = 1});
  }
  return w;
}

// C[r·c_m + j·c_n] = round(F[r·f_m + j·f_n]) over the m×n block, the unit-stride dim inside.
template <typename H>
void round_block(const ContractionPlan<float>& f, const float* from, const ContractionPlan<H>& p,
                 H* c) {
  if (p.c_n == 1 || p.c_m != 1) {
    for (std::int64_t r = 0; r < p.m; ++r) {
      for (std::int64_t j = 0; j < p.n; ++j) {
        c[r * p.c_m + j * p.c_n] = narrow_float<H>(from[r * f.c_m + j * f.c_n]);
      }
    }
  } else {
    for (std::int64_t j = 0; j < p.n; ++j) {
      for (std::int64_t r = 0; r < p.m; ++r) {
        c[r * p.c_m + j * p.c_n] = narrow_float<H>(from[r * f.c_m + j * f.c_n]);
      }
    }
  }
}

// The rest of the epilogue on the float32 block, then C rounded from it: in groups of rows of
// ~16 KiB when the block is row-major, so each group is rounded while it is still in L1 (a
// 1024×4096 block of a linear ⇒ gelu is 16 MiB: one pass for the epilogue and another for the
// rounding went to memory twice).
template <typename H>
void finish_block(const ContractionPlan<float>& f, float* block,
                  const std::vector<EpilogueStep<float>>& steps, const ContractionPlan<H>& p,
                  H* c) {
  constexpr std::int64_t kGroupElements = 4096;
  const std::int64_t group =
      f.c_n == 1 ? std::max<std::int64_t>(1, kGroupElements / std::max<std::int64_t>(1, f.n)) : f.m;
  for (std::int64_t r0 = 0; r0 < f.m; r0 += group) {
    ContractionPlan<float> fg = f;
    ContractionPlan<H> pg;
    pg.m = fg.m = std::min(group, f.m - r0);
    pg.n = p.n;
    pg.c_m = p.c_m;
    pg.c_n = p.c_n;
    float* rows = block + r0 * f.c_m;
    apply_epilogue(fg, rows, std::span<const EpilogueStep<float>>(steps));
    round_block(fg, rows, pg, c + r0 * p.c_m);
  }
}

}  // namespace

template <typename H>
bool run_half_contraction(const ContractionPlan<H>& p, const std::vector<EpilogueStep<H>>& steps) {
  if (p.k == 0 || gemm_backend() == GemmBackend::kOpenBlas) return false;
  const std::size_t taken = taken_by_primitive(p, steps);
  const bool direct = taken == steps.size();
  HalfGemm g{.args = p.args, .src = dtype_of<H>, .dst = direct ? dtype_of<H> : DType::kFloat32};
  if (taken > 0 && steps[0].bias != nullptr) g.bias = dtype_of<H>;
  g.relu = taken == (g.bias ? 2U : 1U);
  // The float32 block of the second way: dense in the oriented GEMM's layout.
  ContractionPlan<float> f;
  f.m = p.m;
  f.n = p.n;
  f.c_m = p.swapped ? 1 : p.args.n;
  f.c_n = p.swapped ? p.args.n : 1;
  if (!direct) g.args.ldc = p.args.n;
  if (!half_gemm_available(g)) return false;  // nothing written yet: the caller widens
  const WideSteps<H> rest =
      widen_steps(std::span<const EpilogueStep<H>>(steps).subspan(taken), p.n);
  std::vector<float> block(direct ? 0 : static_cast<std::size_t>(p.m * p.n));
  for_each_run(p.batch, [&](const auto& at, std::int64_t len, const auto& step) {
    for (std::int64_t i = 0; i < len; ++i) {
      const H* a = p.a + at[0] + i * step[0];
      const H* b = p.b + at[1] + i * step[1];
      H* c = p.c + at[2] + i * step[2];
      const void* bias = g.bias ? steps[0].bias : nullptr;
      void* out = direct ? static_cast<void*>(c) : static_cast<void*>(block.data());
      const bool ran =
          p.swapped ? run_half_gemm(g, b, a, bias, out) : run_half_gemm(g, a, b, bias, out);
      TAPESTRY_ASSERT(ran, "run_half_contraction: the primitive vanished from the cache");
      if (direct) continue;
      finish_block(f, block.data(), rest.steps, p, c);
    }
  });
  return true;
}

template bool run_half_contraction(const ContractionPlan<BFloat16>&,
                                   const std::vector<EpilogueStep<BFloat16>>&);
template bool run_half_contraction(const ContractionPlan<Float16>&,
                                   const std::vector<EpilogueStep<Float16>>&);

}  // namespace tapestry::runtime::fast
