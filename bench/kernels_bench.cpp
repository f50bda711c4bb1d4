// kernels_bench: the fast kernels (tapestry/runtime/fast_kernels.h) against the libraries and
// the reference kernels, single-threaded (limit_library_threads_to_one).
//
//   BM_Sgemm/<backend>/M/N/K     x·wᵀ (linear's layout) straight through dnnl_sgemm or
//                                cblas_sgemm: the shape classes behind GemmBackend::kAuto
//   BM_LinearRelu/<variant>/M/N/K  one linear ⇒ relu shard (512×1024×1024 and linear_relu.tap's
//                                50×32×12): the fused kernel (GEMM + bias/ReLU epilogue), the
//                                fast linear then the fast relu (two passes), and a direct
//                                cblas_sgemm plus bias/ReLU loops
//   BM_Elementwise/<kernel>/<set>  relu, add, gelu over 2^20 float32: fast vs reference (GB/s)
//   BM_Conv2d/<variant>/n/c/ih/o/stride/tile  float32 3×3 conv2d, NCHW, over the whole operation
//                                (tile 0) or one image's tile×tile output shard: the fast kernel
//                                (im2col + GEMM), a direct loop nest (the alternative measured
//                                against it) and the reference kernel
//   BM_Softmax/<set>/rows/n      softmax over rows of n float32: fast vs reference (GB/s)
//
// Counters: GFLOP/s ("gflops") or bytes/s; ratios are quoted in docs/runtime.md.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <deque>
#include <vector>

#include "tapestry/rewrite/fused.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/fast_kernels.h"

namespace {

using namespace tapestry;
using namespace tapestry::runtime;
using zspace::AffineMap;
using zspace::IndexProjection;

IndexProjection rows_ipf(const std::vector<std::vector<std::int64_t>>& rows) {
  return IndexProjection(AffineMap::from_rows(rows, Point::zeros(rows.size())));
}

void fill_values(Buffer& b) {
  float v = 0.25f;
  for (float& x : b.values<float>()) {
    x = v;
    v = v > 0.5f ? -0.375f : v + 0.001f;
  }
}

// ---- raw GEMM: the backend choice --------------------------------------------------------------

void BM_Sgemm(benchmark::State& state, bool onednn) {
  limit_library_threads_to_one();
  const int m = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1)),
            k = static_cast<int>(state.range(2));
  std::vector<float> a(static_cast<std::size_t>(m) * k, 0.5f),
      w(static_cast<std::size_t>(n) * k, 0.25f), c(static_cast<std::size_t>(m) * n);
  for (auto _ : state) {
    if (onednn) {
      dnnl_sgemm('N', 'T', m, n, k, 1.0f, a.data(), k, w.data(), k, 0.0f, c.data(), n);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data(), k, w.data(), k,
                  0.0f, c.data(), n);
    }
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["gflops"] =
      benchmark::Counter(2.0 * m * n * k * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void gemm_shapes(benchmark::internal::Benchmark* b) {
  for (auto s : std::vector<std::vector<std::int64_t>>{{2048, 4096, 1024},
                                                       {512, 1024, 1024},
                                                       {64, 4096, 1024},
                                                       {256, 256, 256},
                                                       {64, 64, 64},
                                                       {32, 32, 32},
                                                       {16, 16, 16},
                                                       {8, 8, 8}}) {
    b->Args(s);
  }
  b->Unit(benchmark::kMicrosecond);
}
BENCHMARK_CAPTURE(BM_Sgemm, onednn, true)->Apply(gemm_shapes);
BENCHMARK_CAPTURE(BM_Sgemm, openblas, false)->Apply(gemm_shapes);

// ---- linear ⇒ relu: fused epilogue vs two passes vs direct BLAS --------------------------------

// The buffers and IPFs of one M×N×K linear ⇒ relu over index [batch, out, in].
struct LinearRelu {
  std::int64_t rows, outs, ins;
  Buffer x{DType::kFloat32, Range::of_shape({rows, ins})};
  Buffer w{DType::kFloat32, Range::of_shape({outs, ins})};
  Buffer bias{DType::kFloat32, Range::of_shape({outs})};
  Buffer hidden{DType::kFloat32, Range::of_shape({rows, outs})};
  Buffer y{DType::kFloat32, Range::of_shape({rows, outs})};
  IndexProjection x_ipf = rows_ipf({{1, 0, 0}, {0, 0, 1}});
  IndexProjection w_ipf = rows_ipf({{0, 1, 0}, {0, 0, 1}});
  IndexProjection b_ipf = rows_ipf({{0, 1, 0}});
  IndexProjection r_ipf = rows_ipf({{1, 0, 0}, {0, 1, 0}});
  IndexProjection id2 = IndexProjection::identity(2);
  std::vector<std::string> names3{"batch", "out", "in"}, names2{"d0", "d1"};
  std::vector<ir::Reduction> reductions{{"in", ir::Monoid::kSum}};
  nlohmann::json params = nlohmann::json::object(), fused;

  explicit LinearRelu(const benchmark::State& state)
      : rows(state.range(0)), outs(state.range(1)), ins(state.range(2)) {
    fill_values(x);
    fill_values(w);
    fill_values(bias);
    rewrite::FusedStage lin{
        .kernel = "linear",
        .label = "Y/linear",
        .params = params,
        .index_names = names3,
        .reductions = reductions,
        .index_map = AffineMap::identity(3),
        .inputs = {{"x", "s0_x", x_ipf}, {"w", "s0_w", w_ipf}, {"bias", "s0_b", b_ipf}},
        .outputs = {{"result", "", r_ipf, ir::DType::kFloat32}}};
    rewrite::FusedStage relu{.kernel = "relu",
                             .label = "Y",
                             .params = params,
                             .index_names = names2,
                             .reductions = {},
                             .index_map = AffineMap::from_rows({{1, 0, 0}, {0, 1, 0}}, {0, 0}),
                             .inputs = {{"x", "", id2}},
                             .outputs = {{"result", "result", id2}}};
    fused = rewrite::fused_params({lin, relu});
  }

  KernelCall linear_call(const std::string& x_name, const std::string& w_name,
                         const std::string& b_name, Buffer& out) {
    KernelCall call{.kernel = "linear",
                    .operation = "bench",
                    .index = Range::of_shape({rows, outs, ins}),
                    .params = &params,
                    .index_names = names3,
                    .reductions = reductions};
    call.inputs.append(x_name, InputPort{std::as_const(x).view(), &x_ipf});
    call.inputs.append(w_name, InputPort{std::as_const(w).view(), &w_ipf});
    call.inputs.append(b_name, InputPort{std::as_const(bias).view(), &b_ipf});
    call.outputs.append("result", OutputPort{out.view(), &r_ipf});
    return call;
  }

  KernelCall relu_call() {
    KernelCall call{.kernel = "relu",
                    .operation = "bench",
                    .index = Range::of_shape({rows, outs}),
                    .params = &params,
                    .index_names = names2};
    call.inputs.append("x", InputPort{std::as_const(hidden).view(), &id2});
    call.outputs.append("result", OutputPort{y.view(), &id2});
    return call;
  }
};

// The MLP's shard (512×1024×1024) and the tiny examples/linear_relu.tap shard (50×32×12).
void linear_relu_shapes(benchmark::internal::Benchmark* b) {
  b->Args({512, 1024, 1024})->Args({50, 32, 12})->Unit(benchmark::kMicrosecond);
}

void set_flops(benchmark::State& state, const LinearRelu& f) {
  state.counters["gflops"] = benchmark::Counter(
      2.0 * f.rows * f.outs * f.ins * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void BM_LinearRelu_Fused(benchmark::State& state) {
  limit_library_threads_to_one();
  LinearRelu f(state);
  KernelCall call = f.linear_call("s0_x", "s0_w", "s0_b", f.y);
  call.kernel = "fused";
  call.params = &f.fused;
  const KernelFn fn = fast_kernels().find("fused");
  // As the executors do: the stages parsed once per operation.
  const std::shared_ptr<const void> prepared = fast_kernels().find_prepare("fused")(call);
  call.prepared = prepared.get();
  for (auto _ : state) fn(call);
  set_flops(state, f);
}
BENCHMARK(BM_LinearRelu_Fused)->Apply(linear_relu_shapes);

void BM_LinearRelu_TwoPasses(benchmark::State& state) {
  limit_library_threads_to_one();
  LinearRelu f(state);
  const KernelCall lin = f.linear_call("x", "w", "bias", f.hidden);
  const KernelCall relu = f.relu_call();
  const KernelFn lin_fn = fast_kernels().find("linear"), relu_fn = fast_kernels().find("relu");
  for (auto _ : state) {
    lin_fn(lin);
    relu_fn(relu);
  }
  set_flops(state, f);
}
BENCHMARK(BM_LinearRelu_TwoPasses)->Apply(linear_relu_shapes);

void BM_LinearRelu_DirectOpenBlas(benchmark::State& state) {
  limit_library_threads_to_one();
  LinearRelu f(state);
  const float* x = f.x.values<float>().data();
  const float* w = f.w.values<float>().data();
  const float* b = f.bias.values<float>().data();
  float* y = f.y.values<float>().data();
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, f.rows, f.outs, f.ins, 1.0f, x, f.ins, w,
                f.ins, 0.0f, y, f.outs);
    for (std::int64_t r = 0; r < f.rows; ++r) {
      float* row = y + r * f.outs;
      for (std::int64_t j = 0; j < f.outs; ++j) {
        const float v = row[j] + b[j];
        row[j] = v < 0.0f ? 0.0f : v;
      }
    }
    benchmark::DoNotOptimize(y);
  }
  set_flops(state, f);
}
BENCHMARK(BM_LinearRelu_DirectOpenBlas)->Apply(linear_relu_shapes);

// ---- elementwise: fast vs reference ------------------------------------------------------------

constexpr std::int64_t kElements = 1 << 20;

void BM_Elementwise(benchmark::State& state, const char* kernel, bool fast) {
  const bool binary = std::string_view(kernel) == "add";
  Buffer a(DType::kFloat32, Range::of_shape({kElements / 1024, 1024}));
  Buffer b = a, r = a;
  fill_values(a);
  fill_values(b);
  const IndexProjection id = IndexProjection::identity(2);
  const std::vector<std::string> names{"d0", "d1"};
  KernelCall call{.kernel = kernel, .operation = "bench", .index = a.range(), .index_names = names};
  call.inputs.append(binary ? "a" : "x", InputPort{std::as_const(a).view(), &id});
  if (binary) call.inputs.append("b", InputPort{std::as_const(b).view(), &id});
  call.outputs.append("result", OutputPort{r.view(), &id});
  const KernelFn fn = (fast ? fast_kernels() : ExecutableKernels::reference()).find(kernel);
  for (auto _ : state) fn(call);
  const double bytes = (binary ? 3.0 : 2.0) * 4.0 * kElements;
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
}
BENCHMARK_CAPTURE(BM_Elementwise, relu_fast, "relu", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Elementwise, relu_reference, "relu", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Elementwise, add_fast, "add", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Elementwise, add_reference, "add", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Elementwise, gelu_fast, "gelu", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Elementwise, gelu_reference, "gelu", false)->Unit(benchmark::kMillisecond);

// ---- conv2d: im2col + GEMM vs a direct loop nest vs the reference -----------------------------

// One float32 conv2d, ins×ins filters (3 unless a 7th argument says), x [n, c, ih, ih] (already
// padded), index [n, o, oh, ow, c]; `box` is the whole index (tile 0) or image 0's top-left
// tile×tile outputs, all o and c.
struct Conv2d {
  std::int64_t ins, n, c, ih, o, stride, oh;
  Buffer x, w, r;
  IndexProjection x_ipf, w_ipf, r_ipf;
  Range box;
  std::vector<std::string> names{"n", "o", "oh", "ow", "c"};
  std::vector<ir::Reduction> reductions{{"c", ir::Monoid::kSum}};
  nlohmann::json params;

  explicit Conv2d(const benchmark::State& state)
      : ins(state.range(6)),
        n(state.range(0)),
        c(state.range(1)),
        ih(state.range(2)),
        o(state.range(3)),
        stride(state.range(4)),
        oh((ih - ins) / stride + 1),
        x(DType::kFloat32, Range::of_shape({n, c, ih, ih})),
        w(DType::kFloat32, Range::of_shape({o, c, ins, ins})),
        r(DType::kFloat32, Range::of_shape({n, o, oh, oh})),
        x_ipf(AffineMap::from_rows(
                  {{1, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, stride, 0, 0}, {0, 0, 0, stride, 0}},
                  Point::zeros(4)),
              Point{1, 1, ins, ins}),
        w_ipf(AffineMap::from_rows(
                  {{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}},
                  Point::zeros(4)),
              Point{1, 1, ins, ins}),
        r_ipf(rows_ipf({{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 1, 0}})),
        params{{"stride", stride}} {
    fill_values(x);
    fill_values(w);
    const std::int64_t tile = state.range(5);
    box = tile == 0 ? Range::of_shape({n, o, oh, oh, c}) : Range::of_shape({1, o, tile, tile, c});
  }

  KernelCall call() {
    KernelCall k{.kernel = "conv2d",
                 .operation = "bench",
                 .index = box,
                 .params = &params,
                 .index_names = names,
                 .reductions = reductions};
    k.inputs.append("x", InputPort{std::as_const(x).view(), &x_ipf});
    k.inputs.append("w", InputPort{std::as_const(w).view(), &w_ipf});
    k.outputs.append("result", OutputPort{r.view(), &r_ipf});
    return k;
  }

  // The direct alternative to im2col: per output row, accumulate ins·ins·c shifted input rows
  // scaled by one filter value each (the inner loop vectorises over ow at stride 1).
  void direct() {
    const float* xs = x.values<float>().data();
    const float* ws = w.values<float>().data();
    float* rs = r.values<float>().data();
    const std::int64_t ow0 = box.start()[3], ow1 = box.end()[3];
    std::vector<float> acc(static_cast<std::size_t>(ow1 - ow0));
    for (std::int64_t b = box.start()[0]; b < box.end()[0]; ++b) {
      for (std::int64_t f = box.start()[1]; f < box.end()[1]; ++f) {
        for (std::int64_t y = box.start()[2]; y < box.end()[2]; ++y) {
          std::fill(acc.begin(), acc.end(), 0.0f);
          for (std::int64_t ch = 0; ch < c; ++ch) {
            for (std::int64_t i = 0; i < ins; ++i) {
              const float* row = xs + ((b * c + ch) * ih + y * stride + i) * ih + ow0 * stride;
              for (std::int64_t j = 0; j < ins; ++j) {
                const float v = ws[((f * c + ch) * ins + i) * ins + j];
                float* __restrict a = acc.data();
                for (std::int64_t t = 0; t < ow1 - ow0; ++t) a[t] += v * row[t * stride + j];
              }
            }
          }
          std::copy(acc.begin(), acc.end(), rs + ((b * o + f) * oh + y) * oh + ow0);
        }
      }
    }
  }

  [[nodiscard]] double flops() const { return 2.0 * static_cast<double>(box.size()) * ins * ins; }
};

enum class ConvVariant { kFast, kIm2col, kDirect, kReference };

void BM_Conv2d(benchmark::State& state, ConvVariant variant) {
  limit_library_threads_to_one();
  set_conv_backend(variant == ConvVariant::kIm2col ? ConvBackend::kIm2col : ConvBackend::kAuto);
  Conv2d conv(state);
  const KernelCall call = conv.call();
  const KernelFn fn =
      (variant == ConvVariant::kReference ? ExecutableKernels::reference() : fast_kernels())
          .find("conv2d");
  for (auto _ : state) {
    if (variant == ConvVariant::kDirect) {
      conv.direct();
    } else {
      fn(call);
    }
    benchmark::DoNotOptimize(conv.r.values<float>().data());
  }
  state.counters["gflops"] =
      benchmark::Counter(conv.flops() * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// examples/convnet.tap's layers (8 padded 34×34 images: C1 3→16 stride 1, C2 16→32 stride 2),
// whole and as small shards, and examples/resnet_bottleneck.tap's three layers on 2 images
// (1×1 256→64, 3×3 64→64 on the padded 58×58, 1×1 64→256).
void conv_shapes(benchmark::internal::Benchmark* b, bool large) {
  b->Args({8, 3, 34, 16, 1, 0, 3});
  b->Args({8, 16, 34, 32, 2, 0, 3});
  b->Args({8, 3, 34, 16, 1, 8, 3});
  b->Args({8, 16, 34, 32, 2, 4, 3});
  if (large) {
    b->Args({2, 256, 56, 64, 1, 0, 1});
    b->Args({2, 64, 58, 64, 1, 0, 3});
    b->Args({2, 64, 56, 256, 1, 0, 1});
  }
  b->Unit(benchmark::kMicrosecond);
}
BENCHMARK_CAPTURE(BM_Conv2d, fast, ConvVariant::kFast)->Apply([](auto* b) {
  conv_shapes(b, true);
});
BENCHMARK_CAPTURE(BM_Conv2d, im2col_gemm, ConvVariant::kIm2col)->Apply([](auto* b) {
  conv_shapes(b, true);
});
BENCHMARK_CAPTURE(BM_Conv2d, direct, ConvVariant::kDirect)->Apply([](auto* b) {
  conv_shapes(b, true);
});
BENCHMARK_CAPTURE(BM_Conv2d, reference, ConvVariant::kReference)->Apply([](auto* b) {
  conv_shapes(b, false);
});

// ---- softmax: fast vs reference
// ------------------------------------------------------------------

void BM_Softmax(benchmark::State& state, bool fast) {
  const std::int64_t rows = state.range(0), n = state.range(1);
  Buffer x(DType::kFloat32, Range::of_shape({rows, n}));
  Buffer r = x;
  fill_values(x);
  const IndexProjection ipf(AffineMap::from_rows({{1}, {0}}, Point::zeros(2)), Point{1, n});
  const std::vector<std::string> names{"batch"};
  KernelCall call{.kernel = "softmax",
                  .operation = "bench",
                  .index = Range::of_shape({rows}),
                  .index_names = names};
  call.inputs.append("x", InputPort{std::as_const(x).view(), &ipf});
  call.outputs.append("result", OutputPort{r.view(), &ipf});
  const KernelFn fn = (fast ? fast_kernels() : ExecutableKernels::reference()).find("softmax");
  for (auto _ : state) fn(call);
  state.SetBytesProcessed(static_cast<std::int64_t>(8.0 * rows * n) * state.iterations());
}
BENCHMARK_CAPTURE(BM_Softmax, fast, true)
    ->Args({4096, 1000})
    ->Args({65536, 16})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Softmax, reference, false)
    ->Args({4096, 1000})
    ->Args({65536, 16})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
