// The fast conv2d on oneDNN's convolution primitive (kernels/fast/conv_onednn.h) against the
// reference conv2d kernel, called directly on one box: odd shapes, strides, boxes that slice n,
// o, oh, ow and the c reduction, strided sub-box views, and the calls it must leave to im2col +
// GEMM or to the reference. Bound: |fast − ref| ≤ 2·(K+1)·ε·Σ|x·w|, K = c·kh·kw of the box.
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "conv_onednn.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/kernel_path.h"

namespace tapestry::runtime {
namespace {

using zspace::AffineMap;
using zspace::IndexProjection;

// A conv2d call in the metakernel's layout over views of its own buffers: x [n, c, ih, iw] and
// w [o, c, kh, kw] hold deterministic values in [-1, 1); `margin` > 0 places x inside a larger
// buffer (the view is a strided sub-box), as a shard's view of a bigger tensor is.
struct ConvCall {
  std::int64_t kh, kw, stride;
  Buffer x_buf, w, r;
  BasicView<const std::byte> x;
  IndexProjection x_ipf, w_ipf, r_ipf;
  nlohmann::json params;
  std::vector<std::string> names{"n", "o", "oh", "ow", "c"};
  std::vector<ir::Reduction> reductions{{"c", ir::Monoid::kSum}};

  ConvCall(DType dtype, Point x_shape, std::int64_t o, std::int64_t kh_, std::int64_t kw_,
           std::int64_t stride_, std::int64_t margin = 0)
      : kh(kh_),
        kw(kw_),
        stride(stride_),
        x_buf(dtype, Range::of_shape({x_shape[0] + margin, x_shape[1] + margin,
                                      x_shape[2] + 2 * margin, x_shape[3] + 2 * margin})),
        w(dtype, Range::of_shape({o, x_shape[1], kh, kw})),
        r(dtype, Range::of_shape({x_shape[0], o, (x_shape[2] - kh) / stride + 1,
                                  (x_shape[3] - kw) / stride + 1})),
        x(std::as_const(x_buf).view().sub(
            Range({0, margin, margin, margin},
                  {x_shape[0], x_shape[1] + margin, x_shape[2] + margin, x_shape[3] + margin}))),
        x_ipf(AffineMap::from_rows(
                  {{1, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, stride, 0, 0}, {0, 0, 0, stride, 0}},
                  Point{0, margin, margin, margin}),
              Point{1, 1, kh, kw}),
        w_ipf(AffineMap::from_rows(
                  {{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}},
                  Point::zeros(4)),
              Point{1, 1, kh, kw}),
        r_ipf(AffineMap::from_rows(
            {{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 1, 0}}, Point::zeros(4))),
        params{{"stride", stride}} {
    fill(x_buf, 3);
    fill(w, 7);
  }

  // x starts at `margin` in the buffer, so x's index point (n, c, y, x) reads buffer cell
  // (n, c + margin, y + margin, x + margin) — the view's box is what the IPF offsets select.
  [[nodiscard]] Range whole() const {
    return Range::of_shape({r.range().extent(0), r.range().extent(1), r.range().extent(2),
                            r.range().extent(3), w.range().extent(1)});
  }

  static void fill(Buffer& b, std::uint32_t seed) {
    visit_dtype(b.dtype(), [&]<typename T>() {
      std::uint32_t s = seed;
      for (T& v : b.values<T>()) {
        s = s * 1664525U + 1013904223U;
        v = static_cast<T>(static_cast<std::int64_t>(s >> 22) - 512) / T(512);
      }
    });
  }

  [[nodiscard]] KernelCall call(const Range& box, Buffer& result,
                                const IndexProjection* x_cells = nullptr) const {
    KernelCall k{.kernel = "conv2d",
                 .operation = "conv",
                 .index = box,
                 .params = &params,
                 .index_names = names,
                 .reductions = reductions};
    k.inputs.append("x", InputPort{x, x_cells != nullptr ? x_cells : &x_ipf});
    k.inputs.append("w", InputPort{std::as_const(w).view(), &w_ipf});
    k.outputs.append("result", OutputPort{result.view(), &r_ipf});
    return k;
  }
};

// Fast (under `backend`) vs the reference on `box`; returns the oneDNN convolutions it ran.
std::uint64_t expect_matches(const ConvCall& c, const Range& box, ConvBackend backend,
                             const std::string& what) {
  Buffer fast(c.r.dtype(), c.r.range()), ref(c.r.dtype(), c.r.range());
  Buffer mag(c.r.dtype(), c.r.range());
  const KernelCall fast_call = c.call(box, fast);
  set_conv_backend(backend);
  reset_fast_kernel_counts();
  fast_kernels().find("conv2d")(fast_call);
  const FastKernelCounts counts = fast_kernel_counts();
  set_conv_backend(ConvBackend::kAuto);
  ExecutableKernels::reference().find("conv2d")(c.call(box, ref));
  ConvCall abs_c = c;  // |x|, |w|: the magnitude Σ|x·w|
  for (Buffer* b : {&abs_c.x_buf, &abs_c.w}) {
    for (float& v : b->values<float>()) v = std::abs(v);
  }
  abs_c.x = std::as_const(abs_c.x_buf).view().sub(c.x.box());
  ExecutableKernels::reference().find("conv2d")(abs_c.call(box, mag));
  const double eps = std::numeric_limits<float>::epsilon() / 2;
  const double k = static_cast<double>(box.extent(4) * c.kh * c.kw);
  const auto f = fast.values<float>(), r = ref.values<float>(), m = mag.values<float>();
  for (std::size_t i = 0; i < r.size(); ++i) {
    // Cells outside the box: untouched by both (buffers start zeroed).
    EXPECT_LE(std::abs(static_cast<double>(f[i]) - r[i]), 2 * (k + 1) * eps * m[i])
        << what << " element " << i << ": fast " << f[i] << " ref " << r[i];
    if (std::abs(static_cast<double>(f[i]) - r[i]) > 2 * (k + 1) * eps * m[i]) break;
  }
  EXPECT_EQ(counts.fallback_calls, 0u) << what;
  EXPECT_EQ(counts.fast_calls, 1u) << what;
  return counts.onednn_convs;
}

struct Shape {
  std::string name;
  Point x;
  std::int64_t o, kh, kw, stride, margin;
};

const Shape kShapes[] = {
    {"3x3 odd sizes", Point{2, 5, 9, 11}, 7, 3, 3, 1, 0},
    {"1x1", Point{3, 17, 6, 5}, 9, 1, 1, 1, 0},
    {"3x3 stride 2 in a larger buffer", Point{2, 6, 13, 10}, 4, 3, 3, 2, 1},
    {"5x3 stride 3", Point{1, 3, 17, 19}, 5, 5, 3, 3, 0},
    {"1x1 stride 2 in a larger buffer", Point{2, 8, 9, 9}, 3, 1, 1, 2, 2},
    {"one output channel, 2x2", Point{1, 3, 9, 40}, 1, 2, 2, 1, 0},
};

TEST(OneDnnConv, WholeCallsMatchTheReference) {
  for (const Shape& s : kShapes) {
    const ConvCall c(DType::kFloat32, s.x, s.o, s.kh, s.kw, s.stride, s.margin);
    EXPECT_EQ(expect_matches(c, c.whole(), ConvBackend::kOneDnn, s.name), 1u) << s.name;
    EXPECT_EQ(expect_matches(c, c.whole(), ConvBackend::kIm2col, s.name + " im2col"), 0u);
  }
}

// Boxes of a shard: slices of n, o, oh, ow and of the c reduction (a partial sum over its c
// range), alone and together, at odd offsets.
TEST(OneDnnConv, ShardBoxesMatchTheReference) {
  for (const Shape& s : kShapes) {
    const ConvCall c(DType::kFloat32, s.x, s.o, s.kh, s.kw, s.stride, s.margin);
    const Range w = c.whole();
    std::vector<std::pair<std::string, Range>> boxes;
    for (std::size_t d = 0; d < 5; ++d) {
      if (w.extent(d) < 2) continue;
      const std::int64_t mid = w.extent(d) / 2 + (d % 2);
      boxes.emplace_back(fmt::format("dim {} low", d),
                         w.with_dim(d, 0, std::min(mid, w.extent(d) - 1)));
      boxes.emplace_back(fmt::format("dim {} high", d),
                         w.with_dim(d, std::min(mid, w.extent(d) - 1), w.extent(d)));
    }
    Range all = w;
    for (std::size_t d = 0; d < 5; ++d) {
      if (w.extent(d) > 2) all = all.with_dim(d, 1, w.extent(d) - 1);
    }
    boxes.emplace_back("every dim cut", all);
    for (const auto& [name, box] : boxes) {
      EXPECT_EQ(expect_matches(c, box, ConvBackend::kOneDnn, s.name + ", " + name), 1u)
          << s.name << ", " << name;
    }
  }
}

// kAuto takes the primitive only where it was measured to pay off.
TEST(OneDnnConv, AutoTakesThePrimitiveForRealLayersOnly) {
  const ConvCall big(DType::kFloat32, Point{1, 16, 10, 10}, 8, 3, 3, 1);
  EXPECT_EQ(expect_matches(big, big.whole(), ConvBackend::kAuto, "16 channels, 8x8"), 1u);
  const ConvCall rgb(DType::kFloat32, Point{1, 3, 10, 10}, 8, 3, 3, 1);
  EXPECT_EQ(expect_matches(rgb, rgb.whole(), ConvBackend::kAuto, "3 channels"), 0u);
  EXPECT_EQ(expect_matches(big, big.whole().with_dim(2, 0, 2).with_dim(3, 0, 2), ConvBackend::kAuto,
                           "a 2x2 tile"),
            0u);
}

// Not the metakernel's layout (the block dim of a split reduction makes a rank-6 index; a
// window cut across channels): im2col + GEMM, no primitive, no fallback.
TEST(OneDnnConv, OtherLayoutsAreNotOperands) {
  const ConvCall c(DType::kFloat32, Point{2, 4, 7, 7}, 3, 3, 3, 1);
  Buffer out(c.r.dtype(), c.r.range());
  EXPECT_TRUE(fast::onednn_conv_operands(c.call(c.whole(), out), c.whole()).has_value());
  IndexProjection wide_cells(c.x_ipf.map(), Point{1, 2, 3, 3});  // two channels per cell
  EXPECT_FALSE(
      fast::onednn_conv_operands(c.call(c.whole(), out, &wide_cells), c.whole()).has_value());
  IndexProjection strided_rows(
      AffineMap::from_rows({{1, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 2, 0, 0}, {0, 0, 0, 1, 0}},
                           Point::zeros(4)),
      Point{1, 1, 3, 3});  // different strides along oh and ow
  EXPECT_FALSE(
      fast::onednn_conv_operands(c.call(c.whole(), out, &strided_rows), c.whole()).has_value());
}

// Integers: the fast set hands the call to the reference (counted, path "reference").
TEST(OneDnnConv, IntegerConvolutionsFallBackToTheReference) {
  const ConvCall c(DType::kInt32, Point{1, 16, 8, 8}, 4, 3, 3, 1);
  Buffer fast(c.r.dtype(), c.r.range()), ref(c.r.dtype(), c.r.range());
  set_conv_backend(ConvBackend::kOneDnn);
  reset_fast_kernel_counts();
  (void)exchange_thread_kernel_paths({});
  fast_kernels().find("conv2d")(c.call(c.whole(), fast));
  set_conv_backend(ConvBackend::kAuto);
  EXPECT_EQ(exchange_thread_kernel_paths({}).resolve(), KernelPath::kReference);
  EXPECT_EQ(fast_kernel_counts().fallback_calls, 1u);
  EXPECT_EQ(fast_kernel_counts().onednn_convs, 0u);
  ExecutableKernels::reference().find("conv2d")(c.call(c.whole(), ref));
  EXPECT_TRUE(std::equal(fast.values<std::int32_t>().begin(), fast.values<std::int32_t>().end(),
                         ref.values<std::int32_t>().begin()));
}

}  // namespace
}  // namespace tapestry::runtime
