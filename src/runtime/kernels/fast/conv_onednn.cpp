// conv2d through oneDNN's convolution primitive (conv_onednn.h).
#include "conv_onednn.h"

#include <atomic>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "../scalar_ops.h"
#include "fast_support.h"
#include "half_gemm.h"
#include "tapestry/runtime/kernel_path.h"
#include "tapestry/support/error.h"

namespace tapestry::runtime::fast {

namespace {

using dnnl::memory;
namespace scalar = kernels::scalar;

std::atomic<std::uint64_t> half_runs{0};

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
    for (std::int64_t v : {p.n, p.c, p.ih, p.iw, p.o, p.kh, p.kw, p.oh, p.ow, p.stride, p.groups})
      mix(v);
    mix(static_cast<std::int64_t>(p.src));
    mix(static_cast<std::int64_t>(p.dst));
    for (const auto* s : {&p.x_strides, &p.w_strides, &p.r_strides, &p.residual_strides}) {
      for (std::int64_t v : *s) mix(v);
    }
    return h * 4 + (p.residual ? 2U : 0U) + (p.relu ? 1U : 0U);
  }
};

// One cached convolution. `blocked`: the primitive runs on oneDNN's chosen layouts, and the
// reorders move src and the filters in and dst out through the scratch memories.
struct ConvPrimitive {
  dnnl::convolution_forward conv;
  memory::desc x, w, r;  // the views' layouts
  bool blocked = false;
  dnnl::reorder x_in, w_in, r_out, residual_in;
  memory x_blk, w_blk, r_blk;
  memory::desc residual;       // the residual's layout (problem.residual)
  bool loop_epilogue = false;  // residual (and relu) added by residual_epilogue() after the conv
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

memory::desc strided_desc(const memory::dims& dims, const std::array<std::int64_t, 4>& strides,
                          DType dtype) {
  return {dims, onednn_type(dtype), memory::dims(strides.begin(), strides.end())};
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
  made.x = strided_desc({p.n, p.c, p.ih, p.iw}, p.x_strides, p.src);
  if (p.groups == 1) {
    made.w = strided_desc({p.o, p.c, p.kh, p.kw}, p.w_strides, p.src);
  } else {  // oneDNN's grouped weights: [g, o / g, c / g, kh, kw]
    const std::int64_t og = p.o / p.groups;
    made.w = memory::desc(
        {p.groups, og, p.c / p.groups, p.kh, p.kw}, onednn_type(p.src),
        {og * p.w_strides[0], p.w_strides[0], p.w_strides[1], p.w_strides[2], p.w_strides[3]});
  }
  made.r = strided_desc({p.n, p.o, p.oh, p.ow}, p.r_strides, p.dst);
  made.blocked = blocked;
  const auto layout = [&](const memory::desc& d) {
    return blocked ? memory::desc(d.dims(), d.data_type(), memory::format_tag::any) : d;
  };
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, layout(made.x),
      layout(made.w), layout(made.r), {p.stride, p.stride}, {0, 0}, {0, 0});
  // The plain GEMM convolution's `sum` post-op measured 5–8× slower than the whole conv: there
  // the residual and the relu after it are one loop over dst instead.
  made.loop_epilogue = !blocked && p.residual;
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  if (p.residual && !made.loop_epilogue) ops.append_sum(1.0F);
  if (p.relu && !made.loop_epilogue) {
    ops.append_eltwise(1.0F, dnnl::algorithm::eltwise_relu, 0.0F, 0.0F);  // oneDNN 2.x
  }
  attr.set_post_ops(ops);
  const dnnl::convolution_forward::primitive_desc pd(desc, attr, cache.engine);
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
    if (p.residual) {
      made.residual = strided_desc({p.n, p.o, p.oh, p.ow}, p.residual_strides, p.dst);
      made.residual_in = reorder(made.residual, pd.dst_desc());
    }
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

// dst = dst + residual, then relu when asked: the unfused add and relu kernels' operations, in
// their order, one pass over dst (the inner loop vectorises at unit strides). A 16-bit dst holds
// the conv's rounded result, as the unfused conv2d stores it; the sum is rounded once more, as
// the unfused add stores it (relu is exact).
template <typename R>
void residual_epilogue(const ConvOperands& ops) {
  const ConvProblem& p = ops.problem;
  const auto& rs = p.r_strides;
  const auto& ss = p.residual_strides;
  const auto* residual = static_cast<const R*>(ops.residual);
  auto* result = static_cast<R*>(ops.r);
  for (std::int64_t a = 0; a < p.n; ++a) {
    for (std::int64_t b = 0; b < p.o; ++b) {
      for (std::int64_t y = 0; y < p.oh; ++y) {
        const R* from = residual + a * ss[0] + b * ss[1] + y * ss[2];
        R* to = result + a * rs[0] + b * rs[1] + y * rs[2];
        if constexpr (std::is_same_v<R, float>) {
          if (rs[3] == 1 && ss[3] == 1) {
            for (std::int64_t x = 0; x < p.ow; ++x) to[x] = scalar::Add{}(to[x], from[x]);
            if (p.relu) {
              for (std::int64_t x = 0; x < p.ow; ++x) to[x] = scalar::Relu{}(to[x]);
            }
            continue;
          }
        }
        for (std::int64_t x = 0; x < p.ow; ++x) {
          const R sum = narrow_float<R>(scalar::Add{}(static_cast<float>(to[x * rs[3]]),
                                                      static_cast<float>(from[x * ss[3]])));
          to[x * rs[3]] = p.relu ? narrow_float<R>(scalar::Relu{}(static_cast<float>(sum))) : sum;
        }
      }
    }
  }
}

// The element at `index`'s first point of a port whose view holds `dtype` (float32 or 16-bit).
template <typename Port>
auto base_of(const Port& port, const Range& index) {
  constexpr bool kOutput = std::is_same_v<Port, OutputPort>;
  using Void = std::conditional_t<kOutput, void, const void>;
  const auto base = [&]<typename T>() -> Void* {
    return strided<std::conditional_t<kOutput, T, const T>>(port, index).base;
  };
  switch (port.view.dtype()) {
    case DType::kBFloat16:
      return base.template operator()<BFloat16>();
    case DType::kFloat16:
      return base.template operator()<Float16>();
    default:
      return base.template operator()<float>();
  }
}

// What plain and grouped convolutions share once the extents are set: the window, stride and
// input size, the views' strides and the operands' base pointers.
void finish_operands(ConvOperands& ops, const InputPort& x, const InputPort& w, const OutputPort& r,
                     const Range& index, std::int64_t s) {
  ConvProblem& p = ops.problem;
  const Point& window = x.ipf->shape();
  p.kh = window[2];
  p.kw = window[3];
  p.stride = s;
  p.ih = (p.oh - 1) * s + p.kh;
  p.iw = (p.ow - 1) * s + p.kw;
  p.x_strides = view_strides(x.view);
  p.w_strides = view_strides(w.view);
  p.r_strides = view_strides(r.view);
  p.src = x.view.dtype();
  p.dst = r.view.dtype();
  ops.x = base_of(x, index);
  ops.w = base_of(w, index);
  ops.r = base_of(r, index);
}

// The storage dtypes onednn_conv takes: x and w float32, bfloat16 or float16 alike; the result
// theirs, or float32 for 16-bit ones.
bool conv_dtypes(const InputPort& x, const InputPort& w, const OutputPort& r) {
  const DType src = x.view.dtype(), dst = r.view.dtype();
  return (src == DType::kFloat32 || is_half_float(src)) && w.view.dtype() == src &&
         (dst == src || dst == DType::kFloat32);
}

}  // namespace

std::optional<ConvOperands> onednn_conv_operands(const KernelCall& call, const Range& index) {
  return onednn_conv_operands(call.input("x"), call.input("w"), call.output("result"), index);
}

std::optional<ConvOperands> onednn_conv_operands(const InputPort& x, const InputPort& w,
                                                 const OutputPort& r, const Range& index) {
  const Point& window = x.ipf->shape();
  if (index.rank() != 5 || index.is_empty() || window.rank() != 4 || window != w.ipf->shape() ||
      window[0] != 1 || window[1] != 1 || !has_unit_cells(*r.ipf) || !conv_dtypes(x, w, r)) {
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
  finish_operands(ops, x, w, r, index, s);
  return ops;
}

bool add_residual(ConvOperands& ops, const InputPort& port, const Range& index) {
  if (port.view.dtype() != ops.problem.dst) return false;
  ops.problem.residual = true;
  ops.problem.residual_strides = view_strides(port.view);
  ops.residual = base_of(port, index);
  return true;
}

std::optional<ConvOperands> onednn_grouped_conv_operands(const KernelCall& call,
                                                         const Range& index) {
  const InputPort& x = call.input("x");
  const InputPort& w = call.input("w");
  const OutputPort& r = call.output("result");
  const Point& window = x.ipf->shape();
  if (index.rank() != 6 || index.is_empty() || window.rank() != 4 || window != w.ipf->shape() ||
      window[0] != 1 || window[1] != 1 || !has_unit_cells(*r.ipf) || !conv_dtypes(x, w, r)) {
    return std::nullopt;
  }
  const zspace::AffineMap& xm = x.ipf->map();
  const zspace::AffineMap& wm = w.ipf->map();
  const zspace::AffineMap& rm = r.ipf->map();
  if (xm.in_rank() != 6 || wm.in_rank() != 6 || rm.in_rank() != 6) return std::nullopt;
  const std::int64_t s = xm.at(2, 3), cg = xm.at(1, 1), og = rm.at(1, 1);
  // The rows of kernels/conv.yaml's grouped_conv2d over [n, g, og, oh, ow, cg].
  const std::array<std::array<std::array<std::int64_t, 6>, 4>, 3> rows = {{
      {{{1, 0, 0, 0, 0, 0}, {0, cg, 0, 0, 0, 1}, {0, 0, 0, s, 0, 0}, {0, 0, 0, 0, s, 0}}},
      {{{0, og, 1, 0, 0, 0}, {0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}}},
      {{{1, 0, 0, 0, 0, 0}, {0, og, 1, 0, 0, 0}, {0, 0, 0, 1, 0, 0}, {0, 0, 0, 0, 1, 0}}},
  }};
  const std::array<const zspace::AffineMap*, 3> maps = {&xm, &wm, &rm};
  for (std::size_t m = 0; m < 3; ++m) {
    if (maps[m]->out_rank() != 4) return std::nullopt;
    for (std::size_t k = 0; k < 4; ++k) {
      for (std::size_t j = 0; j < 6; ++j) {
        if (maps[m]->at(k, j) != rows[m][k][j]) return std::nullopt;
      }
    }
  }
  const std::int64_t groups = index.extent(1);
  if (s < 1 || (groups > 1 && (index.extent(5) != cg || index.extent(2) != og))) {
    return std::nullopt;  // neighbouring groups' channels are not adjacent in this box
  }
  ConvOperands ops;
  ConvProblem& p = ops.problem;
  p.groups = groups;
  p.n = index.extent(0);
  p.o = groups * index.extent(2);
  p.oh = index.extent(3);
  p.ow = index.extent(4);
  p.c = groups * index.extent(5);
  finish_operands(ops, x, w, r, index, s);
  return ops;
}

bool onednn_grouped_conv_pays_off(const Range& index) {
  constexpr std::int64_t kMinPixels = 64;
  return index.rank() == 6 && index.extent(0) * index.extent(3) * index.extent(4) >= kMinPixels;
}

bool onednn_conv_pays_off(const Range& index) {
  constexpr std::int64_t kMinChannels = 16, kMinPixels = 64;
  return index.rank() == 5 && index.extent(4) >= kMinChannels &&
         index.extent(0) * index.extent(2) * index.extent(3) >= kMinPixels;
}

bool onednn_conv(const ConvOperands& ops) {
  ConvCache& cache = conv_cache();
  std::optional<ConvPrimitive>& p = primitive(cache, ops.problem);
  if (!p) return false;
  // oneDNN takes non-const handles; it only reads src and the filters.
  memory x(p->x, cache.engine, const_cast<void*>(ops.x));
  memory w(p->w, cache.engine, const_cast<void*>(ops.w));
  memory r(p->r, cache.engine, ops.r);
  try {
    if (p->blocked) {
      if (ops.problem.residual) {
        memory residual(p->residual, cache.engine, const_cast<void*>(ops.residual));
        p->residual_in.execute(cache.stream, residual, p->r_blk);
      }
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
    if (p->loop_epilogue) {
      switch (ops.problem.dst) {
        case DType::kBFloat16:
          residual_epilogue<BFloat16>(ops);
          break;
        case DType::kFloat16:
          residual_epilogue<Float16>(ops);
          break;
        default:
          residual_epilogue<float>(ops);
      }
    }
  } catch (const dnnl::error& e) {
    const ConvProblem& q = ops.problem;
    throw Error(fmt::format(
        "oneDNN convolution failed: {} for n {} c {} {}×{} o {} {}×{} stride {} groups {} "
        "dtype {}",
        e.what(), q.n, q.c, q.ih, q.iw, q.o, q.kh, q.kw, q.stride, q.groups,
        ir::dtype_name(q.src)));
  }
  count_onednn_conv();
  if (is_half_float(ops.problem.src)) {
    count_half_native();
    half_runs.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

std::uint64_t half_conv_runs() {
  return half_runs.load(std::memory_order_relaxed);
}

}  // namespace tapestry::runtime::fast
