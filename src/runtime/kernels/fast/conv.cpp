// Fast conv2d (kernels/conv.yaml) as im2col + GEMM on the views.
//
// conv2d over index [n, o, oh, ow, c] (c a sum; the kh×kw window in the cells) is a matrix
// product once the windows are unrolled:
//
//   C[o, p] = Σ_k W[o, k] · Col[k, p]      k = (c, ci, i, j), p = a pixel (n, oh, ow) of the box
//   Col[k, p] = x[cell_x(p) + offset_x(k)]  (im2col: every window of x laid out as a column)
//
// plan_conv reads the layout from the ports' affine offsets (fast_support.h) instead of assuming
// the metakernel's index order: an index dim of extent > 1 is a reduction when it does not move
// the result (c; it joins the window dims in k), a pixel dim when it moves x and the result but
// not w (n, oh, ow), an m dim when it moves w and the result but not x (o), and a batch dim
// otherwise (the `block` dim of a split reduction moves all three). The stride and overlapping
// windows live in the pixel dims' x offsets, so they need nothing special.
//
// Steps, per batch point (fast_support.h nests; one GEMM each):
//   1. im2col: Col (K × N, row-major, thread-local scratch) from the column loops, each run of
//      an output row copied K times (a contiguous copy at stride 1) — or x itself, when the
//      columns are one unit-stride run of x and the K positions step evenly through it (1×1
//      at stride 1 over whole images: Col = x with leading dimension h·w);
//   2. W as an M × K matrix: the view itself when k is contiguous in w (dense OIHW), else packed;
//   3. C = W·Col through gemm() (gemm.h: the backend choice applies), written straight into the
//      result when the columns are one unit-stride run of it (a whole NCHW image: N = oh·ow),
//      else into scratch and scattered (shards cut along ow, odd layouts).
// When the pixels' innermost unit-stride run is long, the outer pixel dims (n) become batch
// dims: one GEMM per image writing the result directly. Boxes whose Col would exceed
// kMaxColElements are cut in halves along their longest pixel dim.
//
// Before all this, a float32 call in the metakernel's own layout goes to oneDNN's convolution
// primitive when it pays off (conv_onednn.h; set_conv_backend forces either way).
//
// conv2d and grouped_conv2d handle bf16/f16 ports themselves: under the same rule a call with
// 16-bit x and w (and a 16-bit or float32 result) runs oneDNN's 16-bit convolution on the views,
// accumulating in float32 and rounding the result once; where that does not apply — im2col
// chosen, a box below the pay-off sizes, another layout, oneDNN without a 16-bit kernel on this
// CPU — the call widens to float32 (executable_kernels.h) and takes the float32 path above.
//
// Everything else — other dtypes, cells that do not pair up, leading dims or sizes past BLAS's
// 32-bit integers — runs the reference kernel. Results differ from the reference's ascending sum
// by the dot-product bound of docs/runtime.md with K = c·kh·kw.
#include <algorithm>
#include <array>

#include "conv_onednn.h"
#include "fast_support.h"
#include "gemm.h"

namespace tapestry::runtime::fast {

namespace {

// Col scratch cap per GEMM (elements; 4 MiB of floats per thread). Measured on a 64→64 3×3
// layer over 56×56 (K·N = 1.8 Mi, bench/kernels_bench): cut in 2 GEMMs 195 GFLOP/s, uncut 201,
// cut in 8 168 (every GEMM call re-packs W), so boxes are cut only when Col gets large.
constexpr std::int64_t kMaxColElements = std::int64_t{1} << 20;
// Pixel runs at least this long are GEMM columns on their own (one GEMM per outer pixel point,
// writing the result directly); shorter runs are gathered into one GEMM over the whole box.
constexpr std::int64_t kMinDirectColumns = 32;

template <typename T>
struct ConvPlan {
  const T* x = nullptr;  // x, w, result at the index box's first point
  const T* w = nullptr;
  T* r = nullptr;
  std::vector<std::int64_t> kx, kw;  // per reduction position k: element offset in x and w
  bool w_as_is = false;              // w is an M × K matrix with leading dimension args.lda
  std::int64_t w_m = 0, r_m = 0;     // strides of the m loop in w and the result
  Nest<2> columns;                   // the GEMM's columns: loops over pixels, strides (x, r)
  bool direct = false;               // the GEMM writes the result (ldc = r_m)
  bool col_as_is = false;            // x is Col itself, with leading dimension args.ldb
  Nest<3> batch;                     // one GEMM per point: strides (x, w, r)
  GemmArgs args;
};

// One loop: extent and the element strides of x, w and the result.
struct Loop {
  std::int64_t extent = 1, x = 0, w = 0, r = 0;
};

// The element offsets of every reduction position (row-major over `loops`) in x and w.
void reduction_offsets(const std::vector<Loop>& loops, std::vector<std::int64_t>& kx,
                       std::vector<std::int64_t>& kw) {
  kx.assign(1, 0);
  kw.assign(1, 0);
  for (const Loop& l : loops) {
    std::vector<std::int64_t> nx, nw;
    nx.reserve(kx.size() * static_cast<std::size_t>(l.extent));
    nw.reserve(nx.capacity());
    for (std::size_t q = 0; q < kx.size(); ++q) {
      for (std::int64_t e = 0; e < l.extent; ++e) {
        nx.push_back(kx[q] + e * l.x);
        nw.push_back(kw[q] + e * l.w);
      }
    }
    kx = std::move(nx);
    kw = std::move(nw);
  }
}

template <std::size_t N>
void append_loop(Nest<N>& nest, std::int64_t extent, const std::array<std::int64_t, N>& stride) {
  nest.extent.push_back(extent);
  nest.stride.push_back(stride);
}

// Checks the cells (x and w windows (1, c, kh, kw) alike, one result element) and collects the
// window dims as reduction loops.
bool window_loops(const InputPort& x, const InputPort& w, const OutputPort& r,
                  std::vector<Loop>& loops) {
  const Point& xw = x.ipf->shape();
  const Point& ww = w.ipf->shape();
  if ((xw.rank() != 4 && xw.rank() != 5) || xw != ww || xw[0] != 1 || !has_unit_cells(*r.ipf))
    return false;
  for (std::size_t d = 1; d < xw.rank(); ++d) {
    if (xw[d] != 1) loops.push_back({xw[d], x.view.stride(d), w.view.stride(d), 0});
  }
  return true;
}

// Step 3's choice. The columns may be any pixels (im2col follows each loop's x stride), but C
// is the result itself only when the columns' result offsets are one unit-stride run: the
// longest suffix of pixel loops whose result strides nest down to 1. That run becomes the
// columns (outer pixel loops are batch loops: one GEMM per image) when it is the whole box or
// long enough; otherwise all pixels are columns and C goes through scratch.
template <typename T>
void choose_columns(ConvPlan<T>& p, const Nest<2>& pixels) {
  const std::size_t depth = pixels.extent.size();
  std::size_t first = depth;  // the run is loops [first, depth)
  std::int64_t run = 1;
  while (first > 0 && pixels.stride[first - 1][1] == run) {
    --first;
    run *= pixels.extent[first];
  }
  const std::int64_t ldc = p.args.m == 1 ? run : p.r_m;
  if ((first == 0 || run >= kMinDirectColumns) && ldc >= run) {
    p.direct = true;
    p.args.ldc = ldc;
    for (std::size_t l = 0; l < depth; ++l) {
      if (l < first) {
        append_loop<3>(p.batch, pixels.extent[l], {pixels.stride[l][0], 0, pixels.stride[l][1]});
      } else {
        append_loop<2>(p.columns, pixels.extent[l], pixels.stride[l]);
      }
    }
    p.args.n = run;
    return;
  }
  p.columns = pixels;
  p.args.n = 1;
  for (std::int64_t e : pixels.extent) p.args.n *= e;
  p.args.ldc = p.args.n;
}

// The plan for conv2d ports over the non-empty box `index`, or nullopt (reference kernel).
template <typename T>
std::optional<ConvPlan<T>> plan_conv(const Range& index, const InputPort& x, const InputPort& w,
                                     const OutputPort& r) {
  std::vector<Loop> k_loops;
  const Strided<const T> xs = strided<const T>(x, index), ws = strided<const T>(w, index);
  const Strided<T> rs = strided<T>(r, index);
  std::vector<bool> not_pixel(index.rank(), true), not_m(index.rank(), true);
  std::vector<bool> not_batch(index.rank(), true);
  for (std::size_t j = 0; j < index.rank(); ++j) {
    if (index.extent(j) == 1) continue;
    if (rs.coef[j] == 0) {
      k_loops.push_back({index.extent(j), xs.coef[j], ws.coef[j], 0});
    } else if (xs.coef[j] != 0 && ws.coef[j] == 0) {
      not_pixel[j] = false;
    } else if (ws.coef[j] != 0 && xs.coef[j] == 0) {
      not_m[j] = false;
    } else {
      not_batch[j] = false;
    }
  }
  if (!window_loops(x, w, r, k_loops)) return std::nullopt;
  ConvPlan<T> p{.x = xs.base, .w = ws.base, .r = rs.base};
  reduction_offsets(k_loops, p.kx, p.kw);
  p.args.k = static_cast<std::int64_t>(p.kx.size());
  p.batch = make_nest<3>(index, {&xs.coef, &ws.coef, &rs.coef}, not_batch);
  // 2. M: the longest m loop; any other m loop is a batch loop.
  const Nest<2> ms = make_nest<2>(index, {&ws.coef, &rs.coef}, not_m);
  std::size_t longest = 0;
  for (std::size_t l = 0; l < ms.extent.size(); ++l) {
    if (ms.extent[l] > ms.extent[longest]) longest = l;
  }
  p.args.m = ms.extent.empty() ? 1 : ms.extent[longest];
  for (std::size_t l = 0; l < ms.extent.size(); ++l) {
    if (l == longest) {
      p.w_m = ms.stride[l][0];
      p.r_m = ms.stride[l][1];
    } else {
      append_loop<3>(p.batch, ms.extent[l], {0, ms.stride[l][0], ms.stride[l][1]});
    }
  }
  bool dense = true;
  for (std::size_t k = 0; k < p.kw.size() && dense; ++k) {
    dense = p.kw[k] == static_cast<std::int64_t>(k);
  }
  p.args.lda = p.args.m == 1 ? p.args.k : p.w_m;
  p.w_as_is = dense && p.args.lda >= p.args.k;
  if (!p.w_as_is) p.args.lda = p.args.k;
  choose_columns(p, make_nest<2>(index, {&xs.coef, &rs.coef}, not_pixel));
  p.args.ldb = p.args.n;
  // Col is x itself (no im2col) when the columns are one unit-stride run of x and the
  // reduction positions step through x evenly, at least that run apart: a 1×1 convolution at
  // stride 1 over whole NCHW images, Col[k, p] = x[k·(h·w) + p].
  std::int64_t run = 1;
  bool unit = true;
  for (std::size_t l = p.columns.extent.size(); l-- > 0 && unit;) {
    unit = p.columns.stride[l][0] == run;
    run *= p.columns.extent[l];
  }
  if (unit && run == p.args.n && !p.kx.empty() && p.kx[0] == 0) {
    const std::int64_t ld = p.kx.size() > 1 ? p.kx[1] : run;
    bool even = ld >= run;
    for (std::size_t k = 0; k < p.kx.size() && even; ++k)
      even = p.kx[k] == static_cast<std::int64_t>(k) * ld;
    if (even) {
      p.col_as_is = true;
      p.args.ldb = ld;
    }
  }
  if (!fits_blas(p.args)) return std::nullopt;
  return p;
}

// Thread-local scratch: kernels run concurrently on the executor's threads.
template <typename T>
T* scratch(std::size_t slot, std::int64_t size) {
  thread_local std::array<std::vector<T>, 3> buffers;
  std::vector<T>& b = buffers[slot];
  if (b.size() < static_cast<std::size_t>(size)) b.resize(static_cast<std::size_t>(size));
  return b.data();
}

// Step 1: Col[k, p] for every column p of the plan's column loops.
template <typename T>
void im2col(const ConvPlan<T>& p, const T* x, T* col) {
  const std::int64_t n = p.args.n;
  std::int64_t pos = 0;
  for_each_run(p.columns, [&](const auto& at, std::int64_t len, const auto& step) {
    for (std::size_t k = 0; k < p.kx.size(); ++k) {
      const T* src = x + p.kx[k] + at[0];
      T* __restrict dst = col + static_cast<std::int64_t>(k) * n + pos;
      if (step[0] == 1) {
        std::copy(src, src + len, dst);
      } else {
        for (std::int64_t t = 0; t < len; ++t) dst[t] = src[t * step[0]];
      }
    }
    pos += len;
  });
}

// Steps 1–3 for one batch point.
template <typename T>
void conv_point(const ConvPlan<T>& p, const T* x, const T* w, T* r) {
  const GemmArgs& g = p.args;
  const T* col = x;
  if (!p.col_as_is) {
    T* cols = scratch<T>(0, g.k * g.n);
    im2col(p, x, cols);
    col = cols;
  }
  const T* a = w;
  if (!p.w_as_is) {
    T* packed = scratch<T>(1, g.m * g.k);
    for (std::int64_t i = 0; i < g.m; ++i) {
      for (std::int64_t k = 0; k < g.k; ++k) packed[i * g.k + k] = w[i * p.w_m + p.kw[k]];
    }
    a = packed;
  }
  if (p.direct) {
    gemm(g, a, col, T{0}, r);
    return;
  }
  T* c = scratch<T>(2, g.m * g.n);
  gemm(g, a, col, T{0}, c);
  std::int64_t pos = 0;
  for_each_run(p.columns, [&](const auto& at, std::int64_t len, const auto& step) {
    for (std::int64_t i = 0; i < g.m; ++i) {
      const T* src = c + i * g.n + pos;
      T* dst = r + at[1] + i * p.r_m;
      for (std::int64_t t = 0; t < len; ++t) dst[t * step[1]] = src[t];
    }
    pos += len;
  });
}

template <typename T>
void run_conv(const ConvPlan<T>& p) {
  for_each_run(p.batch, [&](const auto& at, std::int64_t len, const auto& step) {
    for (std::int64_t i = 0; i < len; ++i) {
      conv_point(p, p.x + at[0] + i * step[0], p.w + at[1] + i * step[1],
                 p.r + at[2] + i * step[2]);
    }
  });
}

// The pixel dim (moves x and the result, not w) of largest extent > 1, or nullopt.
std::optional<std::size_t> longest_pixel_dim(const KernelCall& call, const Range& index) {
  const InputPort& x = call.input("x");
  const InputPort& w = call.input("w");
  std::optional<std::size_t> best;
  for (std::size_t j = 0; j < index.rank(); ++j) {
    bool moves_x = false, moves_w = false;
    for (std::size_t k = 0; k < x.ipf->map().out_rank(); ++k) {
      moves_x = moves_x || x.ipf->map().at(k, j) != 0;
    }
    for (std::size_t k = 0; k < w.ipf->map().out_rank(); ++k) {
      moves_w = moves_w || w.ipf->map().at(k, j) != 0;
    }
    if (!moves_x || moves_w || index.extent(j) < 2) continue;
    if (!best || index.extent(j) > index.extent(*best)) best = j;
  }
  return best;
}

// Runs conv2d over `index` (a sub-box of call.index); false when the first box has no plan.
template <typename T>
bool conv(const KernelCall& call, const Range& index, bool first) {
  const std::optional<ConvPlan<T>> plan =
      plan_conv<T>(index, call.input("x"), call.input("w"), call.output("result"));
  if (!plan) {
    if (first) return false;
    KernelCall piece = call;  // a half of a box that had a plan: not expected, but exact
    piece.index = index;
    ExecutableKernels::reference().lookup(call.kernel, call.operation)(piece);
    return true;
  }
  const std::optional<std::size_t> cut = longest_pixel_dim(call, index);
  if (plan->args.k * plan->args.n > kMaxColElements && cut && !plan->col_as_is) {
    const std::int64_t lo = index.start()[*cut], hi = index.end()[*cut], mid = lo + (hi - lo) / 2;
    conv<T>(call, index.with_dim(*cut, lo, mid), false);
    conv<T>(call, index.with_dim(*cut, mid, hi), false);
    return true;
  }
  run_conv(*plan);
  return true;
}

namespace {

using OperandsOf = std::optional<ConvOperands> (*)(const KernelCall&, const Range&);

// Whether oneDNN's primitive is the backend for a call over `index` (set_conv_backend, else
// the pay-off rule).
bool onednn_backend(const Range& index, bool (*pays_off)(const Range&)) {
  const ConvBackend backend = conv_backend();
  return backend == ConvBackend::kOneDnn || (backend == ConvBackend::kAuto && pays_off(index));
}

// conv2d and grouped_conv2d: oneDNN's convolution where it pays off (or is forced), else the
// plan above, else the reference kernel. `widened` runs a 16-bit call on float32 copies.
void conv_kernel(const KernelCall& call, bool (*pays_off)(const Range&), OperandsOf operands_of,
                 const KernelFn& widened) {
  const std::optional<DType> dtype = uniform_dtype(call);
  const bool ports = call.input_count("x") == 1 && call.input_count("w") == 1 &&
                     call.inputs.size() == 2 && call.outputs.size() == 1 &&
                     call.outputs.list("result").size() == 1;
  const bool usable = ports && !call.index.is_empty();
  bool done = false;
  if (has_half_float_port(call)) {
    // 16-bit: oneDNN's 16-bit convolution on the views, else float32 copies (the rest below).
    if (usable && onednn_backend(call.index, pays_off)) {
      const std::optional<ConvOperands> operands = operands_of(call, call.index);
      done = operands && is_half_float(operands->problem.src) && onednn_conv(*operands);
    }
    if (!done) return widened(call);
  } else if (dtype && usable) {
    if (*dtype == DType::kFloat32 && onednn_backend(call.index, pays_off)) {
      const std::optional<ConvOperands> operands = operands_of(call, call.index);
      done = operands && onednn_conv(*operands);
    }
    if (*dtype == DType::kFloat32 && !done) done = conv<float>(call, call.index, true);
    if (*dtype == DType::kFloat64) done = conv<double>(call, call.index, true);
  }
  if (done) {
    count_fast();
  } else {
    run_reference(call);
  }
}

}  // namespace

void conv2d_kernel(const KernelCall& call) {
  static const KernelFn widened = widen_half_floats(&conv2d_kernel);
  conv_kernel(call, &onednn_conv_pays_off, static_cast<OperandsOf>(&onednn_conv_operands), widened);
}

// grouped_conv2d: oneDNN's grouped convolution for boxes of whole groups (depthwise is
// groups = c), else the plan above — its affine reading puts the group dim (it moves x, w and
// the result) among the batch loops: one im2col + GEMM per group.
void grouped_conv2d_kernel(const KernelCall& call) {
  static const KernelFn widened = widen_half_floats(&grouped_conv2d_kernel);
  conv_kernel(call, &onednn_grouped_conv_pays_off, &onednn_grouped_conv_operands, widened);
}

}  // namespace

void register_fast_conv(ExecutableKernels& registry) {
  // Native: a 16-bit conv2d runs oneDNN's 16-bit convolution where the CPU has it, else widens.
  registry.add_native("conv2d", &conv2d_kernel);
  registry.add_native("grouped_conv2d", &grouped_conv2d_kernel);
  // conv3d: im2col + GEMM over (c, kd, kh, kw) windows (its rank-6 index is no oneDNN conv2d
  // problem); dilated_conv2d/3d: the filter taps are reduction index dims, which the plan's
  // affine reading puts into K like c.
  registry.add("conv3d", &conv2d_kernel);
  registry.add("dilated_conv2d", &conv2d_kernel);
  registry.add("dilated_conv3d", &conv2d_kernel);
}

}  // namespace tapestry::runtime::fast
