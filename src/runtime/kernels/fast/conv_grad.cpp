// Fast conv2d gradients (conv_grad.h): oneDNN's convolution backward primitives, else loops.
#include "conv_grad.h"

#include <array>
#include <optional>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "fast_support.h"
#include "tapestry/support/error.h"

namespace tapestry::runtime::fast {

namespace {

using dnnl::memory;

enum class Grad { kInput, kWeight };

// One backward problem: sizes (a [n, c, ih, iw] image, [o, c, kh, kw] filters, a [n, o, oh, ow]
// cotangent) and the element strides of the three sub-tensors.
struct GradProblem {
  Grad kind = Grad::kInput;
  std::int64_t n = 0, c = 0, ih = 0, iw = 0, o = 0, kh = 0, kw = 0, oh = 0, ow = 0, stride = 1;
  std::array<std::int64_t, 4> x_strides{}, w_strides{}, d_strides{};

  bool operator==(const GradProblem&) const = default;
};

struct GradProblemHash {
  std::size_t operator()(const GradProblem& p) const {
    std::size_t h = p.kind == Grad::kInput ? 1 : 2;
    auto mix = [&](std::int64_t v) { h = h * 1000003U ^ static_cast<std::size_t>(v); };
    for (std::int64_t v : {p.n, p.c, p.ih, p.iw, p.o, p.kh, p.kw, p.oh, p.ow, p.stride}) mix(v);
    for (const auto* s : {&p.x_strides, &p.w_strides, &p.d_strides}) {
      for (std::int64_t v : *s) mix(v);
    }
    return h;
  }
};

// A cached primitive; `blocked`: it runs on oneDNN's layouts, with reorders in and out.
struct GradPrimitive {
  dnnl::primitive prim;
  memory::desc x, w, d;  // the views' layouts
  bool blocked = false;
  memory::desc x_run, w_run, d_run;  // the primitive's
  memory x_blk, w_blk, d_blk;
};

struct GradCache {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::unordered_map<GradProblem, std::optional<GradPrimitive>, GradProblemHash> primitives;
};

GradCache& grad_cache() {
  thread_local GradCache cache;
  return cache;
}

memory::desc strided_desc(const memory::dims& dims, const std::array<std::int64_t, 4>& strides) {
  return {dims, memory::data_type::f32, memory::dims(strides.begin(), strides.end())};
}

bool is_reference_impl(const dnnl::primitive_desc_base& pd) {
  return std::string_view(pd.impl_info_str()).find("ref") != std::string_view::npos;
}

// The primitive for `p` on the views' layouts or (blocked) on oneDNN's; nullopt when oneDNN
// offers only its reference implementation. Throws dnnl::error when it refuses the problem.
std::optional<GradPrimitive> make_primitive(const GradCache& cache, const GradProblem& p,
                                            bool blocked) {
  GradPrimitive made;
  made.x = strided_desc({p.n, p.c, p.ih, p.iw}, p.x_strides);
  made.w = strided_desc({p.o, p.c, p.kh, p.kw}, p.w_strides);
  made.d = strided_desc({p.n, p.o, p.oh, p.ow}, p.d_strides);
  made.blocked = blocked;
  const auto layout = [&](const memory::desc& d) {
    return blocked ? memory::desc(d.dims(), memory::data_type::f32, memory::format_tag::any) : d;
  };
  // The image's rows past the last window (ih − kh not a multiple of the stride) are a negative
  // right padding: oneDNN then leaves them out of the problem.
  const memory::dims strides{p.stride, p.stride}, pad_l{0, 0};
  const memory::dims pad_r{(p.oh - 1) * p.stride + p.kh - p.ih,
                           (p.ow - 1) * p.stride + p.kw - p.iw};
  const dnnl::convolution_forward::desc fwd(dnnl::prop_kind::forward_training,
                                            dnnl::algorithm::convolution_direct, layout(made.x),
                                            layout(made.w), layout(made.d), strides, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc fwd_pd(fwd, cache.engine);
  if (p.kind == Grad::kInput) {
    const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct,
                                                     layout(made.x), layout(made.w), layout(made.d),
                                                     strides, pad_l, pad_r);
    const dnnl::convolution_backward_data::primitive_desc pd(desc, cache.engine, fwd_pd);
    if (is_reference_impl(pd)) return std::nullopt;
    made.prim = dnnl::convolution_backward_data(pd);
    made.x_run = pd.diff_src_desc();
    made.w_run = pd.weights_desc();
    made.d_run = pd.diff_dst_desc();
  } else {
    const dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct,
                                                        layout(made.x), layout(made.w),
                                                        layout(made.d), strides, pad_l, pad_r);
    const dnnl::convolution_backward_weights::primitive_desc pd(desc, cache.engine, fwd_pd);
    if (is_reference_impl(pd)) return std::nullopt;
    made.prim = dnnl::convolution_backward_weights(pd);
    made.x_run = pd.src_desc();
    made.w_run = pd.diff_weights_desc();
    made.d_run = pd.diff_dst_desc();
  }
  if (blocked) {
    made.x_blk = memory(made.x_run, cache.engine);
    made.w_blk = memory(made.w_run, cache.engine);
    made.d_blk = memory(made.d_run, cache.engine);
  }
  return made;
}

std::optional<GradPrimitive>& primitive(GradCache& cache, const GradProblem& p) {
  auto found = cache.primitives.find(p);
  if (found != cache.primitives.end()) return found->second;
  std::optional<GradPrimitive> made;
  for (const bool blocked : {false, true}) {
    try {
      made = make_primitive(cache, p, blocked);
    } catch (const dnnl::error&) {
      made.reset();  // refused: try the next layouts, then the loops
    }
    if (made) break;
  }
  return cache.primitives.emplace(p, std::move(made)).first->second;
}

void reorder(GradCache& cache, memory& from, memory& to) {
  dnnl::reorder(from, to).execute(cache.stream, from, to);
}

// Runs the problem on x, w, d (the output is x for kInput, w for kWeight); false when oneDNN
// offers no fast implementation (nothing written).
bool onednn_grad(const GradProblem& p, const float* x, const float* w, const float* d, float* out) {
  GradCache& cache = grad_cache();
  std::optional<GradPrimitive>& prim = primitive(cache, p);
  if (!prim) return false;
  // oneDNN takes non-const handles; it writes only the gradient.
  memory xm(prim->x, cache.engine, const_cast<float*>(p.kind == Grad::kInput ? out : x));
  memory wm(prim->w, cache.engine, const_cast<float*>(p.kind == Grad::kWeight ? out : w));
  memory dm(prim->d, cache.engine, const_cast<float*>(d));
  try {
    memory& xr = prim->blocked ? prim->x_blk : xm;
    memory& wr = prim->blocked ? prim->w_blk : wm;
    memory& dr = prim->blocked ? prim->d_blk : dm;
    if (prim->blocked) {
      reorder(cache, dm, dr);
      reorder(cache, p.kind == Grad::kInput ? wm : xm, p.kind == Grad::kInput ? wr : xr);
    }
    if (p.kind == Grad::kInput) {
      prim->prim.execute(
          cache.stream, {{DNNL_ARG_DIFF_DST, dr}, {DNNL_ARG_WEIGHTS, wr}, {DNNL_ARG_DIFF_SRC, xr}});
    } else {
      prim->prim.execute(
          cache.stream, {{DNNL_ARG_DIFF_DST, dr}, {DNNL_ARG_SRC, xr}, {DNNL_ARG_DIFF_WEIGHTS, wr}});
    }
    if (prim->blocked)
      reorder(cache, p.kind == Grad::kInput ? xr : wr, p.kind == Grad::kInput ? xm : wm);
    cache.stream.wait();
  } catch (const dnnl::error& e) {
    throw Error(
        fmt::format("oneDNN convolution backward failed: {} for n {} c {} {}×{} o {} {}×{} "
                    "stride {}",
                    e.what(), p.n, p.c, p.ih, p.iw, p.o, p.kh, p.kw, p.stride));
  }
  count_onednn_conv();
  return true;
}

// The element strides of a view's last four dims (a split reduction's partial result has a
// leading block dim).
std::array<std::int64_t, 4> view_strides(const auto& view) {
  const std::size_t r = view.rank();
  return {view.stride(r - 4), view.stride(r - 3), view.stride(r - 2), view.stride(r - 1)};
}

// Whether the IPF selects a whole [h, w] plane (a window of the last two dims, 1 elsewhere) of
// a tensor of rank 4, or 5 with a leading block dim.
bool is_plane(const zspace::IndexProjection& ipf) {
  const Point& s = ipf.shape();
  if (s.rank() != 4 && s.rank() != 5) return false;
  for (std::size_t k = 0; k + 2 < s.rank(); ++k) {
    if (s[k] != 1) return false;
  }
  return true;
}

std::int64_t plane_h(const zspace::IndexProjection& ipf) {
  return ipf.shape()[ipf.shape().rank() - 2];
}
std::int64_t plane_w(const zspace::IndexProjection& ipf) {
  return ipf.shape()[ipf.shape().rank() - 1];
}

// The metakernel's five index dims follow `lead` leading dims of extent 1 (0, or the block dim
// of a split reduction, one block per call): dim k of the layout is index dim lead + k.
struct Layout {
  std::size_t lead = 0;
  const Range* index = nullptr;
  [[nodiscard]] std::int64_t extent(std::size_t k) const { return index->extent(lead + k); }
  [[nodiscard]] std::int64_t start(std::size_t k) const { return index->start()[lead + k]; }
};

// The linear part of the port's IPF row `dim` at index point `p`: where its cell lies relative
// to the tensor's first cell (a split reduction's i = block·chunk + i′ included).
std::int64_t position(const InputPort& port, const Point& p, std::size_t dim) {
  const zspace::AffineMap& map = port.ipf->map();
  std::int64_t at = 0;
  for (std::size_t j = 0; j < map.in_rank(); ++j) at += map.at(dim, j) * p[j];
  return at;
}

std::optional<Layout> layout_of(const Range& index) {
  if (index.rank() != 5 && index.rank() != 6) return std::nullopt;
  const std::size_t lead = index.rank() - 5;
  if (lead == 1 && index.extent(0) != 1) return std::nullopt;
  return Layout{lead, &index};
}

// ---- conv2d_grad_input: index [n, c, o, i, j] ------------------------------------------------
template <typename T>
void grad_input_loops(const KernelCall& call, std::int64_t s) {
  const InputPort& w = call.input("w");
  const InputPort& d = call.input("d_result");
  const OutputPort& r = call.output("result");
  const Range& index = call.index;
  const Layout l = *layout_of(index);
  const std::size_t z = l.lead;
  const Strided<const T> ws = strided<const T>(w, index), ds = strided<const T>(d, index);
  const Strided<T> rs = strided<T>(r, index);
  const std::int64_t oh = plane_h(*d.ipf), ow = plane_w(*d.ipf);
  const std::int64_t ih = plane_h(*r.ipf), iw = plane_w(*r.ipf);
  const std::int64_t r2 = view_strides(r.view)[2], r3 = view_strides(r.view)[3];
  const std::int64_t d2 = d.view.stride(2), d3 = d.view.stride(3);
  // The first filter tap of the box, and how a step of i and j moves it.
  const std::int64_t tap_h = position(w, index.start(), 2), tap_w = position(w, index.start(), 3);
  const std::int64_t step_h = w.ipf->map().at(2, z + 3), step_w = w.ipf->map().at(3, z + 4);
  for (std::int64_t a = 0; a < l.extent(0); ++a) {
    for (std::int64_t b = 0; b < l.extent(1); ++b) {
      T* plane = rs.base + a * rs.coef[z] + b * rs.coef[z + 1];
      for (std::int64_t y = 0; y < ih; ++y) {
        for (std::int64_t x = 0; x < iw; ++x) plane[y * r2 + x * r3] = T{0};
      }
      for (std::int64_t o = 0; o < l.extent(2); ++o) {
        const T* dplane = ds.base + a * ds.coef[z] + o * ds.coef[z + 2];
        for (std::int64_t i = 0; i < l.extent(3); ++i) {
          for (std::int64_t j = 0; j < l.extent(4); ++j) {
            const T wv = ws.base[b * ws.coef[z + 1] + o * ws.coef[z + 2] + i * ws.coef[z + 3] +
                                 j * ws.coef[z + 4]];
            T* out = plane + (tap_h + i * step_h) * r2 + (tap_w + j * step_w) * r3;
            for (std::int64_t y = 0; y < oh; ++y) {
              T* orow = out + s * y * r2;
              const T* drow = dplane + y * d2;
              for (std::int64_t x = 0; x < ow; ++x) orow[s * x * r3] += wv * drow[x * d3];
            }
          }
        }
      }
    }
  }
}

bool grad_input_layout(const KernelCall& call) {
  return layout_of(call.index) && call.input_count("w") == 1 && call.input_count("d_result") == 1 &&
         has_unit_cells(*call.input("w").ipf) && is_plane(*call.input("d_result").ipf) &&
         is_plane(*call.output("result").ipf);
}

std::optional<GradProblem> grad_input_problem(const KernelCall& call, std::int64_t s) {
  const Layout index = *layout_of(call.index);
  const InputPort& w = call.input("w");
  // One oneDNN problem: the box's taps start at the filter's first and step by one.
  if (position(w, call.index.start(), 2) != 0 || position(w, call.index.start(), 3) != 0 ||
      w.ipf->map().at(2, index.lead + 3) != 1 || w.ipf->map().at(3, index.lead + 4) != 1) {
    return std::nullopt;
  }
  const InputPort& d = call.input("d_result");
  const OutputPort& r = call.output("result");
  GradProblem p{.kind = Grad::kInput,
                .n = index.extent(0),
                .c = index.extent(1),
                .ih = plane_h(*r.ipf),
                .iw = plane_w(*r.ipf),
                .o = index.extent(2),
                .kh = index.extent(3),
                .kw = index.extent(4),
                .oh = plane_h(*d.ipf),
                .ow = plane_w(*d.ipf),
                .stride = s};
  if ((p.oh - 1) * s + p.kh > p.ih || (p.ow - 1) * s + p.kw > p.iw) return std::nullopt;
  p.x_strides = view_strides(r.view);
  p.w_strides = view_strides(w.view);
  p.d_strides = view_strides(d.view);
  return p;
}

// ---- conv2d_grad_weight: index [o, c, i, j, n] -----------------------------------------------
template <typename T>
void grad_weight_loops(const KernelCall& call, std::int64_t s) {
  const InputPort& x = call.input("x");
  const InputPort& d = call.input("d_result");
  const OutputPort& r = call.output("result");
  const Range& index = call.index;
  const Layout l = *layout_of(index);
  const std::size_t z = l.lead;
  const Strided<const T> xs = strided<const T>(x, index), ds = strided<const T>(d, index);
  const Strided<T> rs = strided<T>(r, index);
  const std::int64_t oh = plane_h(*d.ipf), ow = plane_w(*d.ipf);
  const std::int64_t x2 = s * x.view.stride(2), x3 = s * x.view.stride(3);
  const std::int64_t d2 = d.view.stride(2), d3 = d.view.stride(3);
  for (std::int64_t o = 0; o < l.extent(0); ++o) {
    for (std::int64_t c = 0; c < l.extent(1); ++c) {
      for (std::int64_t i = 0; i < l.extent(2); ++i) {
        for (std::int64_t j = 0; j < l.extent(3); ++j) {
          T acc{};
          for (std::int64_t n = 0; n < l.extent(4); ++n) {
            const T* xw = xs.base + c * xs.coef[z + 1] + i * xs.coef[z + 2] + j * xs.coef[z + 3] +
                          n * xs.coef[z + 4];
            const T* dp = ds.base + o * ds.coef[z] + n * ds.coef[z + 4];
            for (std::int64_t y = 0; y < oh; ++y) {
              for (std::int64_t q = 0; q < ow; ++q)
                acc += xw[y * x2 + q * x3] * dp[y * d2 + q * d3];
            }
          }
          rs.base[o * rs.coef[z] + c * rs.coef[z + 1] + i * rs.coef[z + 2] + j * rs.coef[z + 3]] =
              acc;
        }
      }
    }
  }
}

bool grad_weight_layout(const KernelCall& call) {
  return layout_of(call.index) && call.input_count("x") == 1 && call.input_count("d_result") == 1 &&
         is_plane(*call.input("x").ipf) && is_plane(*call.input("d_result").ipf) &&
         has_unit_cells(*call.output("result").ipf);
}

std::optional<GradProblem> grad_weight_problem(const KernelCall& call, std::int64_t s) {
  const Layout index = *layout_of(call.index);
  if (index.start(2) != 0 || index.start(3) != 0) return std::nullopt;  // taps from (0, 0)
  const InputPort& x = call.input("x");
  const InputPort& d = call.input("d_result");
  const OutputPort& r = call.output("result");
  GradProblem p{.kind = Grad::kWeight,
                .n = index.extent(4),
                .c = index.extent(1),
                .o = index.extent(0),
                .kh = index.extent(2),
                .kw = index.extent(3),
                .oh = plane_h(*d.ipf),
                .ow = plane_w(*d.ipf),
                .stride = s};
  // The image rows the box's windows read: from tap 0 to the last window's last tap.
  p.ih = (p.oh - 1) * s + p.kh;
  p.iw = (p.ow - 1) * s + p.kw;
  p.x_strides = view_strides(x.view);
  p.w_strides = view_strides(r.view);
  p.d_strides = view_strides(d.view);
  return p;
}

template <Grad kKind>
void grad_kernel(const KernelCall& call) {
  const std::optional<DType> dtype = uniform_dtype(call);
  const bool layout = kKind == Grad::kInput ? grad_input_layout(call) : grad_weight_layout(call);
  if (!dtype || call.index.is_empty() || !layout ||
      (*dtype != DType::kFloat32 && *dtype != DType::kFloat64)) {
    run_reference(call);
    return;
  }
  const std::int64_t s = call.param_int("stride", 1);
  if (*dtype == DType::kFloat32 && conv_backend() != ConvBackend::kIm2col) {
    const std::optional<GradProblem> p =
        kKind == Grad::kInput ? grad_input_problem(call, s) : grad_weight_problem(call, s);
    if (p) {
      const Range& index = call.index;
      const float* x =
          kKind == Grad::kWeight ? strided<const float>(call.input("x"), index).base : nullptr;
      const float* w =
          kKind == Grad::kInput ? strided<const float>(call.input("w"), index).base : nullptr;
      const float* d = strided<const float>(call.input("d_result"), index).base;
      float* out = strided<float>(call.output("result"), index).base;
      if (onednn_grad(*p, x, w, d, out)) return;
    }
  }
  visit_dtype(*dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if constexpr (kKind == Grad::kInput) {
        grad_input_loops<T>(call, s);
      } else {
        grad_weight_loops<T>(call, s);
      }
    }
  });
  count_fast();
}

}  // namespace

void conv2d_grad_input_kernel(const KernelCall& call) {
  grad_kernel<Grad::kInput>(call);
}

void conv2d_grad_weight_kernel(const KernelCall& call) {
  grad_kernel<Grad::kWeight>(call);
}

}  // namespace tapestry::runtime::fast
