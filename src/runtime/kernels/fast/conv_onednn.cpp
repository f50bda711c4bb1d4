// conv2d through oneDNN's convolution primitive (conv_onednn.h).
#include "conv_onednn.h"

#include <cstring>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "fast_support.h"
#include "tapestry/runtime/kernel_path.h"
#include "tapestry/support/error.h"

namespace tapestry::runtime::fast {

namespace {

using dnnl::memory;

// The conv2d metakernel's IPF rows over [n, o, oh, ow, c] (kernels/conv.yaml); x's spatial
// rows carry the stride.
bool has_rows(const zspace::AffineMap& map,
              const std::array<std::array<std::int64_t, 5>, 4>& rows) {
  if (map.in_rank() != 5 || map.out_rank() != 4) return false;
  for (std::size_t k = 0; k < 4; ++k) {
    for (std::size_t j = 0; j < 5; ++j) {
      if (map.at(k, j) != rows[k][j]) return false;
    }
  }
  return true;
}

std::array<std::int64_t, 4> view_strides(const auto& view) {
  return {view.stride(0), view.stride(1), view.stride(2), view.stride(3)};
}

struct ProblemHash {
  std::size_t operator()(const ConvProblem& p) const {
    std::size_t h = 0;
    auto mix = [&](std::int64_t v) { h = h * 1000003U ^ static_cast<std::size_t>(v); };
    for (std::int64_t v : {p.n, p.c, p.ih, p.iw, p.o, p.kh, p.kw, p.oh, p.ow, p.stride}) mix(v);
    for (const auto* s : {&p.x_strides, &p.w_strides, &p.r_strides}) {
      for (std::int64_t v : *s) mix(v);
    }
    return h;
  }
};

// One cached convolution. `blocked`: the primitive runs on oneDNN's chosen layouts, and the
// reorders move src and the filters in and dst out through the scratch memories.
struct ConvPrimitive {
  dnnl::convolution_forward conv;
  memory::desc x, w, r;  // the views' layouts
  bool blocked = false;
  dnnl::reorder x_in, w_in, r_out;
  memory x_blk, w_blk, r_blk;
};

// Per thread: oneDNN objects are not shared between the executor's threads.
struct ConvCache {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::unordered_map<ConvProblem, std::optional<ConvPrimitive>, ProblemHash> primitives;
};

ConvCache& conv_cache() {
  thread_local ConvCache cache;
  return cache;
}

memory::desc strided_desc(const memory::dims& dims, const std::array<std::int64_t, 4>& strides) {
  return {dims, memory::data_type::f32, memory::dims(strides.begin(), strides.end())};
}

bool is_reference_impl(const dnnl::convolution_forward::primitive_desc& pd) {
  return std::string_view(pd.impl_info_str()).find("ref") != std::string_view::npos;
}

// Makes the primitive for `p` on the views' own layouts (`blocked` false) or on oneDNN's choice
// with reorders; nullopt when oneDNN offers only a reference implementation (slower than im2col
// + GEMM by orders of magnitude). Throws dnnl::error when it refuses the problem.
std::optional<ConvPrimitive> make_primitive(const ConvCache& cache, const ConvProblem& p,
                                            bool blocked) {
  ConvPrimitive made;
  made.x = strided_desc({p.n, p.c, p.ih, p.iw}, p.x_strides);
  made.w = strided_desc({p.o, p.c, p.kh, p.kw}, p.w_strides);
  made.r = strided_desc({p.n, p.o, p.oh, p.ow}, p.r_strides);
  made.blocked = blocked;
  const auto layout = [&](const memory::desc& d) {
    return blocked ? memory::desc(d.dims(), memory::data_type::f32, memory::format_tag::any) : d;
  };
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, layout(made.x),
      layout(made.w), layout(made.r), {p.stride, p.stride}, {0, 0}, {0, 0});
  const dnnl::convolution_forward::primitive_desc pd(desc, cache.engine);
  if (is_reference_impl(pd)) return std::nullopt;
  made.conv = dnnl::convolution_forward(pd);
  if (blocked) {
    made.x_blk = memory(pd.src_desc(), cache.engine);
    made.w_blk = memory(pd.weights_desc(), cache.engine);
    made.r_blk = memory(pd.dst_desc(), cache.engine);
    const auto reorder = [&](const memory::desc& from, const memory::desc& to) {
      return dnnl::reorder(dnnl::reorder::primitive_desc(cache.engine, from, cache.engine, to));
    };
    made.x_in = reorder(made.x, pd.src_desc());
    made.w_in = reorder(made.w, pd.weights_desc());
    made.r_out = reorder(pd.dst_desc(), made.r);
  }
  return made;
}

// A 1×1 stride-1 layer first on the plain layouts (oneDNN's GEMM convolution reads NCHW with
// no reorder; it wants dense images, so a shard's view may be refused), then blocked.
std::optional<ConvPrimitive> make_primitive(const ConvCache& cache, const ConvProblem& p) {
  if (p.kh == 1 && p.kw == 1 && p.stride == 1) {
    try {
      if (std::optional<ConvPrimitive> plain = make_primitive(cache, p, false)) return plain;
    } catch (const dnnl::error&) {  // fall through to the blocked layouts
    }
  }
  return make_primitive(cache, p, true);
}

std::optional<ConvPrimitive>& primitive(ConvCache& cache, const ConvProblem& p) {
  auto found = cache.primitives.find(p);
  if (found != cache.primitives.end()) return found->second;
  std::optional<ConvPrimitive> made;
  try {
    made = make_primitive(cache, p);
  } catch (const dnnl::error&) {
    made.reset();  // refused: the caller runs im2col + GEMM
  }
  return cache.primitives.emplace(p, std::move(made)).first->second;
}

}  // namespace

std::optional<ConvOperands> onednn_conv_operands(const KernelCall& call, const Range& index) {
  const InputPort& x = call.input("x");
  const InputPort& w = call.input("w");
  const OutputPort& r = call.output("result");
  const Point& window = x.ipf->shape();
  if (index.rank() != 5 || index.is_empty() || window.rank() != 4 || window != w.ipf->shape() ||
      window[0] != 1 || window[1] != 1 || !has_unit_cells(*r.ipf)) {
    return std::nullopt;
  }
  const std::int64_t s = x.ipf->map().at(2, 2);
  if (s < 1 ||
      !has_rows(x.ipf->map(),
                {{{1, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, s, 0, 0}, {0, 0, 0, s, 0}}}) ||
      !has_rows(w.ipf->map(),
                {{{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}}) ||
      !has_rows(r.ipf->map(),
                {{{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 1, 0}}})) {
    return std::nullopt;
  }
  ConvOperands ops;
  ConvProblem& p = ops.problem;
  p.n = index.extent(0);
  p.o = index.extent(1);
  p.oh = index.extent(2);
  p.ow = index.extent(3);
  p.c = index.extent(4);
  p.kh = window[2];
  p.kw = window[3];
  p.stride = s;
  p.ih = (p.oh - 1) * s + p.kh;
  p.iw = (p.ow - 1) * s + p.kw;
  p.x_strides = view_strides(x.view);
  p.w_strides = view_strides(w.view);
  p.r_strides = view_strides(r.view);
  ops.x = strided<const float>(x, index).base;
  ops.w = strided<const float>(w, index).base;
  ops.r = strided<float>(r, index).base;
  return ops;
}

bool onednn_conv_pays_off(const ConvProblem& p) {
  constexpr std::int64_t kMinChannels = 16, kMinPixels = 64;
  return p.c >= kMinChannels && p.n * p.oh * p.ow >= kMinPixels;
}

bool onednn_conv(const ConvOperands& ops) {
  ConvCache& cache = conv_cache();
  std::optional<ConvPrimitive>& p = primitive(cache, ops.problem);
  if (!p) return false;
  // oneDNN takes non-const handles; it only reads src and the filters.
  memory x(p->x, cache.engine, const_cast<float*>(ops.x));
  memory w(p->w, cache.engine, const_cast<float*>(ops.w));
  memory r(p->r, cache.engine, ops.r);
  try {
    if (p->blocked) {
      p->x_in.execute(cache.stream, x, p->x_blk);
      p->w_in.execute(cache.stream, w, p->w_blk);
      p->conv.execute(
          cache.stream,
          {{DNNL_ARG_SRC, p->x_blk}, {DNNL_ARG_WEIGHTS, p->w_blk}, {DNNL_ARG_DST, p->r_blk}});
      p->r_out.execute(cache.stream, p->r_blk, r);
    } else {
      p->conv.execute(cache.stream, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, r}});
    }
    cache.stream.wait();
  } catch (const dnnl::error& e) {
    const ConvProblem& q = ops.problem;
    throw Error(
        fmt::format("oneDNN convolution failed: {} for n {} c {} {}×{} o {} {}×{} stride {}",
                    e.what(), q.n, q.c, q.ih, q.iw, q.o, q.kh, q.kw, q.stride));
  }
  count_onednn_conv();
  return true;
}

}  // namespace tapestry::runtime::fast
