// Fast kernels (fast_kernels.h) against the reference kernels: every kernel case of
// kernel_cases.h and larger GEMM-shaped and conv2d cases, whole and over random shards (uneven
// pieces, negative starts, size-1 dims), hand-built conv2d layouts and split reductions, softmax
// rows, f32/f64/integers, with each GEMM backend forced in turn.
//
// Bounds (docs/runtime.md, "Fast kernels"): integer results, the elementwise maps and softmax are
// bitwise equal; a K-long dot product plus bias (conv2d: K = c·kh·kw) within
// 2·(K+1)·ε·(Σ|x·w| + |b|), where the magnitude is the reference result on |inputs|. The
// counters prove the fast paths ran.
#include "tapestry/runtime/fast_kernels.h"

#include <cmath>
#include <limits>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gemm.h"
#include "kernel_cases.h"
#include "kernel_graphs.h"
#include "run_helpers.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/input_generation.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: test helpers

const GemmBackend kBackends[] = {GemmBackend::kOneDnn, GemmBackend::kOpenBlas, GemmBackend::kAuto};

// Kernels whose floats are summed in another order than the reference's (the bound applies).
bool is_reordered(std::string_view kernel) {
  return kernel == "linear" || kernel == "matmul" || kernel == "conv2d" || kernel == "sum" ||
         kernel == "fused";
}

// The inputs with every float replaced by its absolute value.
BufferMap absolute(BufferMap inputs) {
  for (auto& [id, buffer] : inputs) {
    visit_dtype(buffer.dtype(), [&]<typename T>() {
      for (T& v : buffer.values<T>()) v = v < T{0} ? T(-v) : v;
    });
  }
  return inputs;
}

// |fast − ref| ≤ L·2·(K+1)·ε·magnitude + (L − 1)·4ε·|ref| elementwise (bitwise when `bitwise`);
// L > 1 bounds a smooth function (gelu: |gelu'| < 1.13) applied after the dot product.
void expect_close(const Buffer& fast, const Buffer& ref, const Buffer& magnitude, std::int64_t k,
                  bool bitwise, const std::string& what, double lipschitz = 1.0) {
  ASSERT_EQ(fast.range(), ref.range()) << what;
  visit_dtype(ref.dtype(), [&]<typename T>() {
    auto f = fast.values<T>(), r = ref.values<T>(), m = magnitude.values<T>();
    for (std::size_t i = 0; i < r.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(r[i])) {
          ASSERT_TRUE(std::isnan(f[i])) << what << " element " << i;
          continue;
        }
        if (!bitwise) {
          const double eps = std::numeric_limits<T>::epsilon() / 2;
          const double bound = lipschitz * 2.0 * static_cast<double>(k + 1) * eps * std::abs(m[i]) +
                               (lipschitz - 1.0) * 4.0 * eps * std::abs(r[i]);
          ASSERT_LE(std::abs(static_cast<double>(f[i]) - r[i]), bound)
              << what << " element " << i << ": fast " << f[i] << " ref " << r[i];
          continue;
        }
      }
      ASSERT_EQ(std::memcmp(&f[i], &r[i], sizeof(T)), 0)
          << what << " element " << i << ": fast " << f[i] << " ref " << r[i];
    }
  });
}

// The reduction length of an operation: its last index dim times the first input's cell size
// (linear `in`, matmul `k`, sum's reduced dim, conv2d c·kh·kw).
std::int64_t reduction_length(const ir::Graph& g, OperationId op) {
  const Range index = *g.operation(op).ipf_index();
  const auto& ipfs = g.operation(op).ipf_signature()->inputs.entries();
  const std::int64_t cell = ipfs.empty() ? 1 : ipfs.front().value.shape().product();
  return index.rank() == 0 ? cell : index.extent(index.rank() - 1) * cell;
}

// Adds Applications over random cuts of the operation's index (not of its reduced dims).
void random_shards(GraphBuilder& b, OperationId op, std::mt19937& rng) {
  const Range index = *b.graph.operation(op).ipf_index();
  const auto reduced = b.graph.operation(op).body().reductions;
  std::vector<std::vector<std::int64_t>> cuts;
  for (std::size_t d = 0; d < index.rank(); ++d) {
    std::vector<std::int64_t> at{index.start()[d], index.end()[d]};
    const bool is_reduced = !reduced.empty() && d + 1 == index.rank();
    for (int c = 0; !is_reduced && c < 2 && index.extent(d) > 1; ++c) {
      at.push_back(index.start()[d] + static_cast<std::int64_t>(rng() % index.extent(d)));
    }
    std::sort(at.begin(), at.end());
    at.erase(std::unique(at.begin(), at.end()), at.end());
    cuts.push_back(at);
  }
  std::vector<std::size_t> pick(index.rank(), 0);
  while (true) {
    std::vector<std::int64_t> lo, hi;
    for (std::size_t d = 0; d < index.rank(); ++d) {
      lo.push_back(cuts[d][pick[d]]);
      hi.push_back(cuts[d][pick[d] + 1]);
    }
    b.application(op, Range(Point(std::span<const std::int64_t>(lo)),
                            Point(std::span<const std::int64_t>(hi))));
    std::size_t d = index.rank();
    while (d > 0 && ++pick[d - 1] + 1 == cuts[d - 1].size()) pick[--d] = 0;
    if (d == 0) return;
  }
}

// Runs the case whole and sharded on the fast kernels and compares with the reference.
void expect_fast_matches(const BuildFn& build, const std::string& name, std::mt19937& rng) {
  GraphBuilder b;
  const Built built = build(b);
  const std::string kernel = b.graph.operation(built.op).kernel();
  const BufferMap inputs = generate_inputs(b.graph, {.seed = rng()});
  const BufferMap ref = NaiveExecutor(b.graph).run(inputs);
  const BufferMap mag = NaiveExecutor(b.graph).run(absolute(inputs));
  const std::int64_t k = reduction_length(b.graph, built.op);
  const bool bitwise = !is_reordered(kernel);
  for (GemmBackend backend : kBackends) {
    set_gemm_backend(backend);
    const BufferMap whole = NaiveExecutor(b.graph, fast_kernels()).run(inputs);
    expect_close(whole.at(built.result), ref.at(built.result), mag.at(built.result), k, bitwise,
                 name + " whole");
  }
  random_shards(b, built.op, rng);
  for (GemmBackend backend : kBackends) {
    set_gemm_backend(backend);
    const BufferMap sharded = ApplicationExecutor(b.graph, fast_kernels()).run(inputs);
    expect_close(sharded.at(built.result), ref.at(built.result), mag.at(built.result), k, bitwise,
                 name + " random shards");
  }
  set_gemm_backend(GemmBackend::kAuto);
}

TEST(FastKernels, HasEveryReferenceName) {
  EXPECT_EQ(fast_kernels().names(), ExecutableKernels::reference().names());
}

TEST(FastKernels, EveryKernelCaseWholeAndSharded) {
  std::mt19937 rng(11);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    expect_fast_matches(c.build, c.name, rng);
  }
}

// Every kernel has a fast path and must take it on these cases (counters); integer linear must
// not (it falls back to the reference).
TEST(FastKernels, FastPathsAreTaken) {
  for (const Case& c : cases()) {
    GraphBuilder b;
    (void)c.build(b);
    const bool integer_linear = c.name == "linear int64";
    reset_fast_kernel_counts();
    (void)NaiveExecutor(b.graph, fast_kernels()).run(generate_inputs(b.graph, {.seed = 3}));
    const FastKernelCounts counts = fast_kernel_counts();
    if (integer_linear) {
      EXPECT_EQ(counts.fast_calls, 0u) << c.name;
      EXPECT_EQ(counts.fallback_calls, 1u) << c.name;
    } else {
      EXPECT_EQ(counts.fast_calls, 1u) << c.name;
      EXPECT_EQ(counts.fallback_calls, 0u) << c.name;
    }
  }
}

// GEMM-sized cases: odd sizes, negative starts, size-1 batch dims, shards whose views are strided
// sub-boxes (leading dimension = the tensor's row length).
std::vector<std::pair<std::string, BuildFn>> gemm_cases() {
  return {
      {"linear f32 37x70 -> 23",
       [](GraphBuilder& b) {
         return add_linear(b, b.tensor("X", "float32", Range({-20, 5}, {17, 75})),
                           b.tensor("W", "float32", Range({-3, -70}, {20, 0})),
                           b.tensor("b", "float32", Range({-1}, {22})), Point{-4, 7});
       }},
      {"linear f64 batch [1, 13] -> 9",
       [](GraphBuilder& b) {
         return add_linear(b, b.tensor("X", "float64", Range({4, 0, 0}, {5, 13, 31})),
                           b.tensor("W", "float64", Range::of_shape({9, 31})),
                           b.tensor("b", "float64", Range::of_shape({9})));
       }},
      {"linear f32 one output feature",
       [](GraphBuilder& b) {
         return add_linear(b, b.tensor("X", "float32", Range::of_shape({6, 40})),
                           b.tensor("W", "float32", Range::of_shape({1, 40})),
                           b.tensor("b", "float32", Range::of_shape({1})));
       }},
      {"matmul f32 unbatched 33x17x29",
       [](GraphBuilder& b) {
         return add_matmul(b, b.tensor("A", "float32", Range({-9, 3}, {24, 20})),
                           b.tensor("B", "float32", Range({0, -29}, {17, 0})), Point{});
       }},
      {"matmul f64 batch [3, 2] broadcast",
       [](GraphBuilder& b) {
         TensorId a = b.tensor("A", "float64", Range({0, -1, 0, 0}, {3, 0, 7, 11}));  // [3,1,7,11]
         TensorId c = b.tensor("B", "float64", Range({0, 0, 0}, {2, 11, 5}));         // [2,11,5]
         return add_matmul(b, a, c, Point{3, 2});
       }},
  };
}

TEST(FastKernels, GemmShapesWholeAndSharded) {
  std::mt19937 rng(5);
  for (const auto& [name, build] : gemm_cases()) {
    SCOPED_TRACE(name);
    for (int round = 0; round < 3; ++round) expect_fast_matches(build, name, rng);
    GraphBuilder b;
    (void)build(b);
    reset_fast_kernel_counts();
    (void)NaiveExecutor(b.graph, fast_kernels()).run(generate_inputs(b.graph, {.seed = 1}));
    EXPECT_EQ(fast_kernel_counts().fallback_calls, 0u);
  }
}

// Finds a tensor by its label (lowering keeps the labels of the tensors it does not remove).
TensorId tensor_named(const ir::Graph& g, const std::string& name) {
  for (TensorId t : g.tensors()) {
    if (tensor_name(g, t) == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return TensorId();
}

// Lowers `b.graph` under `plan_text`, runs it on the fast kernels, checks tensor `result`
// against the reference and that every fused call took the epilogue path — inside oneDNN's
// matmul primitive (bias + ReLU post-op) when `post_ops` and the backend is oneDNN, never
// otherwise.
void expect_fused_epilogue(const GraphBuilder& b, TensorId pre_activation, TensorId result,
                           const std::string& plan_text, double lipschitz, bool post_ops) {
  const rewrite::LowerResult lowered = rewrite::lower(b.graph, rewrite::parse_plan(plan_text));
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 21});
  const BufferMap ref = NaiveExecutor(b.graph).run(inputs);
  const BufferMap mag = NaiveExecutor(b.graph).run(absolute(inputs));
  const std::string name = tensor_name(b.graph, result);
  const std::int64_t k = 45;
  for (GemmBackend backend : kBackends) {
    set_gemm_backend(backend);
    reset_fast_kernel_counts();
    const BufferMap fast = ApplicationExecutor(lowered.graph, fast_kernels())
                               .run(generate_inputs(lowered.graph, {.seed = 21}));
    const FastKernelCounts counts = fast_kernel_counts();
    EXPECT_EQ(counts.fused_epilogues, lowered.graph.applications().size()) << plan_text;
    EXPECT_EQ(counts.fallback_calls, 0u);
    if (backend == GemmBackend::kOneDnn && post_ops) {
      EXPECT_EQ(counts.post_op_gemms, lowered.graph.applications().size()) << plan_text;
    } else if (backend == GemmBackend::kOpenBlas || !post_ops) {
      EXPECT_EQ(counts.post_op_gemms, 0u) << plan_text;
    }
    expect_close(fast.at(tensor_named(lowered.graph, name)), ref.at(result), mag.at(pre_activation),
                 k, false, plan_text, lipschitz);
  }
  set_gemm_backend(GemmBackend::kAuto);
}

TEST(FastKernels, FusedLinearReluEpilogue) {
  GraphBuilder b;
  Built lin = add_linear(b, b.tensor("X", "float32", Range({-7, 3}, {30, 48})),
                         b.tensor("W", "float32", Range::of_shape({19, 45})),
                         b.tensor("b", "float32", Range({-5}, {14})));
  Built relu = add_unary(b, "relu", lin.result, Point{-2, 4});
  for (const char* split : {"{}", R"({"batch": 3, "out": 2})", R"({"batch": 37})"}) {
    expect_fused_epilogue(b, lin.result, relu.result,
                          std::string(R"({"fuse": [["linear_1", "relu_2"]], "ops": {"linear_1": )"
                                      R"({"split": )") +
                              split + "}}}",
                          1.0, true);
  }
}

TEST(FastKernels, FusedMatmulBiasGeluEpilogue) {
  GraphBuilder b;
  Built mm = add_matmul(b, b.tensor("A", "float64", Range({2, 0}, {23, 45})),
                        b.tensor("B", "float64", Range({-45, 0}, {0, 13})), Point{});
  Built bias = add_bias_add(b, mm.result, b.tensor("c", "float64", Range({0}, {13})));
  Built gelu = add_unary(b, "gelu", bias.result);
  expect_fused_epilogue(b, bias.result, gelu.result,
                        R"({"fuse": [["matmul_1", "bias_add_2", "gelu_3"]], "ops": {"matmul_1": )"
                        R"({"split": {"m": 2, "n": 3}}}})",
                        1.2, false);  // float64, and gelu is not a post-op
}

// The fused epilogue makes the unfused run's kernel calls on the same shards — linear's one GEMM
// per shard (its bias inside oneDNN's matmul primitive under oneDNN, as the unfused linear has
// it), then bias_add's and gelu's functions in the same order — so a fused linear ⇒ bias_add ⇒
// gelu equals the unfused run with the same split bitwise, whatever GEMM kernels OpenBLAS and
// oneDNN select on this CPU; the GEMM counters show the same calls. The outputs are long, so the
// epilogue runs in groups of rows (150 × 40 per shard: groups of ≤ 102 rows), with the stages
// parsed once per operation (block executor, KernelCall::prepared) or per call (application
// executor). Without the split the unfused run is other GEMM calls (M = 300, not 2 × 150), which
// a BLAS may block differently (OPENBLAS_CORETYPE=Haswell and ONEDNN_MAX_CPU_ISA=AVX2 do): that
// holds only within the dot-product bound, checked against the reference.
TEST(FastKernels, FusedEpilogueInRowGroupsIsBitwiseEqualToUnfused) {
  GraphBuilder b;
  Built lin = add_linear(b, b.tensor("X", "float32", Range::of_shape({300, 24})),
                         b.tensor("W", "float32", Range::of_shape({40, 24})),
                         b.tensor("b", "float32", Range::of_shape({40})));
  Built bias = add_bias_add(b, lin.result, b.tensor("c", "float32", Range::of_shape({40})));
  Built gelu = add_unary(b, "gelu", bias.result);
  const std::string name = tensor_name(b.graph, gelu.result);
  const rewrite::LowerResult unfused = rewrite::lower(
      b.graph, rewrite::parse_plan(R"({"ops": {"linear_1": {"split": {"batch": 2}}}})"));
  const rewrite::LowerResult fused = rewrite::lower(
      b.graph, rewrite::parse_plan(R"({"fuse": [["linear_1", "bias_add_2", "gelu_3"]], )"
                                   R"("ops": {"linear_1": {"split": {"batch": 2}}}})"));
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 8});
  const BufferMap ref = NaiveExecutor(b.graph).run(inputs);
  const BufferMap mag = NaiveExecutor(b.graph).run(absolute(inputs));
  (void)fast_kernels();  // its first use runs a warm-up GEMM (fast_registry.cpp): not counted
  const auto gemm_calls = [](const FastKernelCounts& c) {
    return std::pair{c.onednn_gemms, c.post_op_gemms};
  };
  for (GemmBackend backend : {GemmBackend::kOneDnn, GemmBackend::kOpenBlas}) {
    const std::string what = backend == GemmBackend::kOneDnn ? "oneDNN" : "OpenBLAS";
    set_gemm_backend(backend);
    reset_fast_kernel_counts();
    const BufferMap want = BlockExecutor(unfused.graph, {.threads = 1})
                               .run(generate_inputs(unfused.graph, {.seed = 8}));
    const FastKernelCounts unfused_counts = fast_kernel_counts();
    reset_fast_kernel_counts();
    const BufferMap prepared =
        BlockExecutor(fused.graph, {.threads = 2}).run(generate_inputs(fused.graph, {.seed = 8}));
    const FastKernelCounts prepared_counts = fast_kernel_counts();
    reset_fast_kernel_counts();
    const BufferMap per_call = ApplicationExecutor(fused.graph, fast_kernels())
                                   .run(generate_inputs(fused.graph, {.seed = 8}));
    const FastKernelCounts per_call_counts = fast_kernel_counts();
    EXPECT_EQ(prepared_counts.fused_epilogues, 2U) << what;
    EXPECT_EQ(per_call_counts.fused_epilogues, 2U) << what;
    EXPECT_EQ(gemm_calls(prepared_counts), gemm_calls(unfused_counts)) << what;
    EXPECT_EQ(gemm_calls(per_call_counts), gemm_calls(unfused_counts)) << what;
    if (backend == GemmBackend::kOneDnn) {
      EXPECT_EQ(unfused_counts.post_op_gemms, 2U);
    }
    const Buffer& w = want.at(tensor_named(unfused.graph, name));
    expect_close(prepared.at(tensor_named(fused.graph, name)), w, w, 0, true,
                 what + " block executor");
    expect_close(per_call.at(tensor_named(fused.graph, name)), w, w, 0, true, what + " per call");
    expect_close(w, ref.at(gelu.result), mag.at(bias.result), 25, false, what + " vs reference",
                 1.2);
  }
  set_gemm_backend(GemmBackend::kAuto);
}

// A chain the epilogue does not cover (relu ⇒ exp) runs stage by stage on the fast kernels.
TEST(FastKernels, FusedGenericChainIsBitwiseEqual) {
  GraphBuilder b;
  Built relu = add_unary(b, "relu", b.tensor("X", "float32", Range({-3, 5}, {9, 17})));
  Built e = add_unary(b, "exp", relu.result);
  const rewrite::LowerResult lowered = rewrite::lower(
      b.graph, rewrite::parse_plan(R"({"fuse": [["relu_1", "exp_2"]], "ops": {"relu_1": {"split": )"
                                   R"({"d0": 3, "d1": 2}}}})"));
  const BufferMap ref = NaiveExecutor(b.graph).run(generate_inputs(b.graph, {.seed = 4}));
  reset_fast_kernel_counts();
  const BufferMap fast = ApplicationExecutor(lowered.graph, fast_kernels())
                             .run(generate_inputs(lowered.graph, {.seed = 4}));
  EXPECT_EQ(fast_kernel_counts().fused_epilogues, 0u);
  EXPECT_EQ(fast_kernel_counts().fallback_calls, 0u);
  const Buffer& r = ref.at(e.result);
  expect_close(fast.at(tensor_named(lowered.graph, tensor_name(b.graph, e.result))), r, r, 0, true,
               "relu => exp");
}

// matmul over [block, m, n, k'] with k = 3·block + k' (the first half of a split reduction):
// the block dim is a batch dim of the GEMMs.
TEST(FastKernels, SplitReductionMatmulIsBatched) {
  const BuildFn build = [](GraphBuilder& b) {
    TensorId a = b.tensor("A", "float32", Range({-2, 0}, {2, 6}));
    TensorId c = b.tensor("B", "float32", Range::of_shape({6, 3}));
    TensorId p = b.tensor("P", "float32", Range::of_shape({2, 4, 3}));
    const OperationId op =
        b.op("matmul", Range::of_shape({2, 4, 3, 3}),
             {{"a", a, ipf({{0, 1, 0, 0}, {3, 0, 0, 1}}, {-2, 0})},
              {"b", c, ipf({{3, 0, 0, 1}, {0, 0, 1, 0}}, {0, 0})}},
             {{"result", p, ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}, {0, 0, 0})}}, nullptr,
             {"block", "m", "n", "k"}, {{"k", ir::Monoid::kSum}});
    return Built{op, p};
  };
  std::mt19937 rng(9);
  expect_fast_matches(build, "split matmul", rng);
  GraphBuilder b;
  (void)build(b);
  reset_fast_kernel_counts();
  (void)NaiveExecutor(b.graph, fast_kernels()).run(generate_inputs(b.graph, {.seed = 1}));
  EXPECT_EQ(fast_kernel_counts().fast_calls, 1u);
  EXPECT_EQ(fast_kernel_counts().fallback_calls, 0u);
}

// Runs `build` whole on the fast kernels: every call took the fast path.
void expect_fast_path_only(const BuildFn& build, const std::string& name) {
  GraphBuilder b;
  (void)build(b);
  reset_fast_kernel_counts();
  (void)NaiveExecutor(b.graph, fast_kernels()).run(generate_inputs(b.graph, {.seed = 1}));
  EXPECT_GE(fast_kernel_counts().fast_calls, 1u) << name;
  EXPECT_EQ(fast_kernel_counts().fallback_calls, 0u) << name;
}

// conv2d layouts: overlapping windows, stride 2 and 3, negative starts, odd sizes, f64, images
// long enough for one direct GEMM per image (oh·ow ≥ 32), and a box whose im2col block exceeds
// the scratch cap (cut in halves). Random shards cut n, o, oh and ow (short runs: the scratch C).
std::vector<std::pair<std::string, BuildFn>> conv_cases() {
  return {
      {"conv2d f32 3x3 stride 1 negative starts",
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float32", Range({-1, 0, -5, -4}, {2, 5, 8, 9})),
                           b.tensor("W", "float32", Range({-3, 0, 0, 0}, {4, 5, 3, 3})), 1);
       }},
      {"conv2d f64 3x2 stride 2 odd sizes",
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float64", Range({0, 0, 3, -7}, {3, 3, 14, 6})),
                           b.tensor("W", "float64", Range::of_shape({5, 3, 3, 2})), 2);
       }},
      {"conv2d f32 5x5 stride 3",
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float32", Range::of_shape({2, 2, 17, 19})),
                           b.tensor("W", "float32", Range({0, 0, -2, -2}, {3, 2, 3, 3})), 3);
       }},
      {"conv2d f32 1x1",
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float32", Range::of_shape({2, 7, 6, 5})),
                           b.tensor("W", "float32", Range::of_shape({3, 7, 1, 1})), 1);
       }},
      {"conv2d f64 images of 10x12 (a GEMM per image)",
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float64", Range({0, 0, -1, -1}, {3, 4, 11, 13})),
                           b.tensor("W", "float64", Range::of_shape({6, 4, 3, 3})), 1);
       }},
      {"conv2d f64 1x1 over images of 8x9 (x is the GEMM's operand as it is)",
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float64", Range({0, 0, -2, 3}, {3, 5, 6, 12})),
                           b.tensor("W", "float64", Range::of_shape({4, 5, 1, 1})), 1);
       }},
      {"conv2d f64 1x1 stride 2 (im2col)",
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float64", Range::of_shape({2, 3, 9, 8})),
                           b.tensor("W", "float64", Range::of_shape({2, 3, 1, 1})), 2);
       }},
      {"conv2d f32 one output channel",
       [](GraphBuilder& b) {
         return add_conv2d(b, b.tensor("X", "float32", Range::of_shape({1, 3, 9, 40})),
                           b.tensor("W", "float32", Range::of_shape({1, 3, 2, 2})), 1);
       }},
  };
}

TEST(FastKernels, Conv2dShapesWholeAndSharded) {
  std::mt19937 rng(17);
  for (const auto& [name, build] : conv_cases()) {
    SCOPED_TRACE(name);
    for (int round = 0; round < 3; ++round) expect_fast_matches(build, name, rng);
    expect_fast_path_only(build, name);
  }
}

// K·N = 576·2025 elements: more than the im2col scratch cap, so the box is cut in halves.
TEST(FastKernels, Conv2dLargeBoxIsCut) {
  const BuildFn build = [](GraphBuilder& b) {
    return add_conv2d(b, b.tensor("X", "float32", Range({0, 0, -1, -1}, {1, 64, 46, 46})),
                      b.tensor("W", "float32", Range::of_shape({1, 64, 3, 3})), 1);
  };
  GraphBuilder b;
  const Built built = build(b);
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 8});
  const BufferMap ref = NaiveExecutor(b.graph).run(inputs);
  const BufferMap mag = NaiveExecutor(b.graph).run(absolute(inputs));
  reset_fast_kernel_counts();
  const BufferMap fast = NaiveExecutor(b.graph, fast_kernels()).run(inputs);
  EXPECT_EQ(fast_kernel_counts().fast_calls, 1u);
  EXPECT_EQ(fast_kernel_counts().fallback_calls, 0u);
  expect_close(fast.at(built.result), ref.at(built.result), mag.at(built.result), 64 * 9, false,
               "large conv2d");
}

// Runs a hand-built conv2d whole and as two shards cut along `cut_dim`, on the fast kernels
// against the reference, with reduction length `k`; every call must take the fast path.
void expect_conv_layout(const BuildFn& build, std::int64_t k, std::size_t cut_dim,
                        const std::string& name) {
  GraphBuilder b;
  const Built built = build(b);
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 2});
  const BufferMap ref = NaiveExecutor(b.graph).run(inputs);
  const BufferMap mag = NaiveExecutor(b.graph).run(absolute(inputs));
  const BufferMap fast = NaiveExecutor(b.graph, fast_kernels()).run(inputs);
  expect_close(fast.at(built.result), ref.at(built.result), mag.at(built.result), k, false,
               name + " whole");
  const Range index = *b.graph.operation(built.op).ipf_index();
  const std::int64_t mid = index.start()[cut_dim] + index.extent(cut_dim) / 2;
  b.application(built.op, index.with_dim(cut_dim, index.start()[cut_dim], mid));
  b.application(built.op, index.with_dim(cut_dim, mid, index.end()[cut_dim]));
  reset_fast_kernel_counts();
  const BufferMap sharded = ApplicationExecutor(b.graph, fast_kernels()).run(inputs);
  EXPECT_EQ(fast_kernel_counts().fast_calls, 2u) << name;
  EXPECT_EQ(fast_kernel_counts().fallback_calls, 0u) << name;
  expect_close(sharded.at(built.result), ref.at(built.result), mag.at(built.result), k, false,
               name + " sharded");
  expect_fast_path_only(build, name);
}

// The whole input-channel dim in the cells (x window (1, C, kh, kw), no `c` index dim): the
// reference accepts any split of (c, i, j) between index dims and windows, so does the fast path.
TEST(FastKernels, Conv2dChannelsInTheWindow) {
  const BuildFn build = [](GraphBuilder& b) {
    TensorId x = b.tensor("X", "float32", Range({0, 0, -2, 0}, {2, 3, 6, 7}));
    TensorId w = b.tensor("W", "float32", Range::of_shape({4, 3, 2, 3}));
    TensorId r = b.tensor("R", "float32", Range::of_shape({2, 4, 7, 5}));
    const OperationId op = b.op(
        "conv2d", Range::of_shape({2, 4, 7, 5}),
        {{"x", x,
          ipf({{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}, {0, 0, -2, 0},
              Point{1, 3, 2, 3})},
         {"w", w,
          ipf({{0, 1, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, {0, 0, 0, 0},
              Point{1, 3, 2, 3})}},
        {{"result", r, ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}, origin(4))}},
        nlohmann::json{{"stride", 1}}, {"n", "o", "oh", "ow"}, {});
    return Built{op, r};
  };
  expect_conv_layout(build, 18, 2, "channels in the window");
}

// The filter rows as an index reduction dim placed before c (index [n, o, oh, ow, i, c], window
// (1, 1, 1, kw), stride 2): two reduced dims, and w is not an M × K matrix in that order, so the
// fast path packs it.
TEST(FastKernels, Conv2dFilterRowsAsIndexDim) {
  const BuildFn build = [](GraphBuilder& b) {
    TensorId x = b.tensor("X", "float64", Range({0, 0, 0, -3}, {2, 3, 9, 8}));
    TensorId w = b.tensor("W", "float64", Range::of_shape({4, 3, 3, 2}));
    TensorId r = b.tensor("R", "float64", Range::of_shape({2, 4, 4, 5}));
    const OperationId op =
        b.op("conv2d", Range::of_shape({2, 4, 4, 5, 3, 3}),
             {{"x", x,
               ipf({{1, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 1}, {0, 0, 2, 0, 1, 0}, {0, 0, 0, 2, 0, 0}},
                   {0, 0, 0, -3}, Point{1, 1, 1, 2})},
              {"w", w,
               ipf({{0, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 0, 0}},
                   {0, 0, 0, 0}, Point{1, 1, 1, 2})}},
             {{"result", r,
               ipf({{1, 0, 0, 0, 0, 0}, {0, 1, 0, 0, 0, 0}, {0, 0, 1, 0, 0, 0}, {0, 0, 0, 1, 0, 0}},
                   origin(4))}},
             nlohmann::json{{"stride", 2}}, {"n", "o", "oh", "ow", "i", "c"},
             {{"i", ir::Monoid::kSum}, {"c", ir::Monoid::kSum}});
    return Built{op, r};
  };
  expect_conv_layout(build, 18, 1, "filter rows as an index dim");
}

// conv2d after split-reduction: even (a leading `block` dim, c = 2·block + c') and uneven
// (separate blocks over sub-ranges of c), with spatial shards, against the unsplit reference.
TEST(FastKernels, Conv2dSplitReduction) {
  GraphBuilder b;
  const Built conv = add_conv2d(b, b.tensor("X", "float32", Range({0, 0, -1, -1}, {2, 4, 9, 10})),
                                b.tensor("W", "float32", Range::of_shape({3, 4, 3, 3})), 1);
  const BufferMap inputs = generate_inputs(b.graph, {.seed = 6});
  const BufferMap ref = NaiveExecutor(b.graph).run(inputs);
  const BufferMap mag = NaiveExecutor(b.graph).run(absolute(inputs));
  const std::string name = tensor_name(b.graph, conv.result);
  for (const char* split :
       {R"({"c": 2})", R"({"c": 2, "oh": 3, "ow": 2})", R"({"c": 3, "n": 2})"}) {
    const std::string plan = std::string(R"({"ops": {"conv2d_1": {"split": )") + split + "}}}";
    const rewrite::LowerResult lowered = rewrite::lower(b.graph, rewrite::parse_plan(plan));
    reset_fast_kernel_counts();
    const BufferMap fast = ApplicationExecutor(lowered.graph, fast_kernels())
                               .run(generate_inputs(lowered.graph, {.seed = 6}));
    EXPECT_GE(fast_kernel_counts().fast_calls, 2u) << plan;
    EXPECT_EQ(fast_kernel_counts().fallback_calls, 0u) << plan;
    expect_close(fast.at(tensor_named(lowered.graph, name)), ref.at(conv.result),
                 mag.at(conv.result), 4 * 9, false, plan);
  }
}

// A fused conv2d ⇒ add(residual) ⇒ relu and conv2d ⇒ relu (ResNet's block tail and body) as one
// oneDNN convolution with post-ops: 1×1 (the plain layout, the residual in a loop) and 3×3
// (blocked, the residual as a `sum` post-op), whole and split along n and o, against the unfused
// reference; with im2col forced, the fused chain runs stage by stage and agrees too.
TEST(FastKernels, FusedConvEpiloguesMatchTheReference) {
  for (const std::int64_t k : {1, 3}) {
    GraphBuilder b;
    const std::int64_t side = 9 + k - 1;
    const Built conv = add_conv2d(b, b.tensor("X", "float32", Range::of_shape({2, 16, side, side})),
                                  b.tensor("W", "float32", Range::of_shape({16, 16, k, k})), 1);
    const Built sum =
        add_binary(b, "add", conv.result, b.tensor("R", "float32", Range::of_shape({2, 16, 9, 9})),
                   Point{2, 16, 9, 9});
    const Built out = add_unary(b, "relu", sum.result);
    const Built body =
        add_unary(b, "relu",
                  add_conv2d(b, b.tensor("X2", "float32", Range::of_shape({2, 16, side, side})),
                             b.tensor("W2", "float32", Range::of_shape({8, 16, k, k})), 1)
                      .result);
    const BufferMap inputs = generate_inputs(b.graph, {.seed = 12});
    const BufferMap ref = NaiveExecutor(b.graph).run(inputs);
    const BufferMap mag = NaiveExecutor(b.graph).run(absolute(inputs));
    for (const char* plan : {R"({"fuse": "auto"})",
                             R"({"ops": {"conv2d_1": {"split": {"n": 2, "o": 2}},
                                         "conv2d_4": {"split": {"n": 2}}}, "fuse": "auto"})"}) {
      const std::string what = fmt::format("{}×{} {}", k, k, plan);
      const rewrite::LowerResult lowered = rewrite::lower(b.graph, rewrite::parse_plan(plan));
      for (const ConvBackend backend : {ConvBackend::kOneDnn, ConvBackend::kIm2col}) {
        set_conv_backend(backend);
        reset_fast_kernel_counts();
        const BufferMap fast = ApplicationExecutor(lowered.graph, fast_kernels())
                                   .run(generate_inputs(lowered.graph, {.seed = 12}));
        const FastKernelCounts counts = fast_kernel_counts();
        set_conv_backend(ConvBackend::kAuto);
        EXPECT_EQ(counts.fallback_calls, 0u) << what;
        if (backend == ConvBackend::kOneDnn) {
          EXPECT_EQ(counts.onednn_convs, counts.fused_epilogues) << what;
          EXPECT_GE(counts.onednn_convs, 2u) << what;
        } else {
          EXPECT_EQ(counts.onednn_convs, 0u) << what;
        }
        for (const TensorId t : {out.result, body.result}) {
          const std::string name = tensor_name(b.graph, t);
          expect_close(fast.at(tensor_named(lowered.graph, name)), ref.at(t), mag.at(t), 16 * k * k,
                       false, what + " " + name);
        }
      }
    }
  }
}

// softmax: rows of odd length at negative coordinates (3 and 17: shorter than and past the row
// sum's eight lanes), f64, long rows, a window over two dims, sharded.
std::vector<std::pair<std::string, BuildFn>> softmax_cases() {
  return {
      {"softmax f64 rows of 37",
       [](GraphBuilder& b) {
         return add_softmax(b, b.tensor("X", "float64", Range({-5, 3, -40}, {2, 9, -3})));
       }},
      {"softmax f32 one long row",
       [](GraphBuilder& b) {
         return add_softmax(b, b.tensor("X", "float32", Range({0, -1000}, {1, 333})));
       }},
      {"softmax f32 rows of 3",
       [](GraphBuilder& b) {
         return add_softmax(b, b.tensor("X", "float32", Range({-4, 2}, {9, 5})));
       }},
      {"softmax f32 rows of 17",
       [](GraphBuilder& b) {
         return add_softmax(b, b.tensor("X", "float32", Range({0, -17}, {11, 0})));
       }},
      {"softmax f32 rows of 1000",
       [](GraphBuilder& b) {
         return add_softmax(b, b.tensor("X", "float32", Range({3, 0}, {10, 1000})));
       }},
  };
}

TEST(FastKernels, SoftmaxIsBitwiseEqual) {
  std::mt19937 rng(23);
  for (const auto& [name, build] : softmax_cases()) {
    SCOPED_TRACE(name);
    expect_fast_matches(build, name, rng);
    expect_fast_path_only(build, name);
  }
}

// A softmax cell covering two dims (window (3, n)): three rows per index point.
TEST(FastKernels, SoftmaxWindowOverTwoDims) {
  const BuildFn build = [](GraphBuilder& b) {
    TensorId x = b.tensor("X", "float32", Range({-2, 0, 0}, {2, 3, 11}));
    TensorId r = b.tensor("R", "float32", Range::of_shape({4, 3, 11}));
    const OperationId op = b.op("softmax", Range::of_shape({4}),
                                {{"x", x, ipf({{1}, {0}, {0}}, {-2, 0, 0}, Point{1, 3, 11})}},
                                {{"result", r, ipf({{1}, {0}, {0}}, {0, 0, 0}, Point{1, 3, 11})}});
    return Built{op, r};
  };
  std::mt19937 rng(3);
  expect_fast_matches(build, "softmax window (3, 11)", rng);
  expect_fast_path_only(build, "softmax window (3, 11)");
}

TEST(FastKernels, LimitLibraryThreadsIsIdempotent) {
  limit_library_threads_to_one();
  limit_library_threads_to_one();
  set_gemm_backend(GemmBackend::kOpenBlas);
  EXPECT_EQ(gemm_backend(), GemmBackend::kOpenBlas);
  set_gemm_backend(GemmBackend::kAuto);
}

// A oneDNN call that fails leaves C unwritten: it is an Error naming the call and its status in
// every build (an assertion would vanish from release builds). Here lda 1 < K 4.
TEST(FastKernels, OneDnnFailuresAreErrorsInEveryBuild) {
  set_gemm_backend(GemmBackend::kOneDnn);
  std::vector<float> a(8, 1.0F), b(8, 1.0F), c(4, -1.0F);
  const fast::GemmArgs bad{.m = 2, .n = 2, .k = 4, .lda = 1, .ldb = 2, .ldc = 2};
  std::string message = "no error";
  try {
    fast::gemm(bad, a.data(), b.data(), 0.0F, c.data());
  } catch (const Error& e) {
    message = e.what();
  }
  set_gemm_backend(GemmBackend::kAuto);
  EXPECT_THAT(message, ::testing::HasSubstr("dnnl_sgemm failed: invalid_arguments"));
  EXPECT_THAT(message, ::testing::HasSubstr("m 2 n 2 k 4"));
}

}  // namespace
}  // namespace tapestry::runtime
