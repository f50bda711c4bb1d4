// The 16-bit GEMM (half_gemm.h): oneDNN matmul primitives over bf16/f16 memory, cached per
// problem and thread.
#include "half_gemm.h"

#include <atomic>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "tapestry/support/error.h"

namespace tapestry::runtime::fast {

namespace {

using dnnl::memory;

std::atomic<std::uint64_t> runs{0};

// The problem as an ordered tuple: the cache's key.
auto key_of(const HalfGemm& p) {
  const GemmArgs& g = p.args;
  return std::make_tuple(g.m, g.n, g.k, g.trans_a, g.trans_b, g.lda, g.ldb, g.ldc, p.src, p.dst,
                         p.bias.has_value(), p.bias.value_or(DType::kFloat32), p.bias_step, p.relu);
}
using Key = decltype(key_of(HalfGemm{}));

struct Primitive {
  dnnl::matmul matmul;
  memory::desc a, b, bias, c;
};

// Per thread, as gemm.cpp's post-op cache: oneDNN objects are not shared between threads.
struct Cache {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, std::optional<Primitive>> primitives;
};

Cache& cache() {
  thread_local Cache c;
  return c;
}

}  // namespace

memory::data_type onednn_type(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16:
      return memory::data_type::bf16;
    case DType::kFloat16:
      return memory::data_type::f16;
    default:
      return memory::data_type::f32;
  }
}

namespace {

// The primitive for `p`, made on first use; nullopt (remembered) when oneDNN refuses it.
const std::optional<Primitive>& primitive(Cache& c, const HalfGemm& p) {
  const Key key = key_of(p);
  auto found = c.primitives.find(key);
  if (found != c.primitives.end()) return found->second;
  const GemmArgs& g = p.args;
  const memory::data_type src = onednn_type(p.src);
  std::optional<Primitive> made;
  try {
    Primitive m;
    m.a =
        memory::desc({g.m, g.k}, src, g.trans_a ? memory::dims{1, g.lda} : memory::dims{g.lda, 1});
    m.b =
        memory::desc({g.k, g.n}, src, g.trans_b ? memory::dims{1, g.ldb} : memory::dims{g.ldb, 1});
    m.c = memory::desc({g.m, g.n}, onednn_type(p.dst), memory::dims{g.ldc, 1});
    if (p.bias) {
      m.bias = memory::desc({1, g.n}, onednn_type(*p.bias),
                            memory::dims{g.n * p.bias_step, p.bias_step});
    }
    dnnl::primitive_attr attr;
    if (p.relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0F, dnnl::algorithm::eltwise_relu, 0.0F, 0.0F);  // oneDNN 2.x
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::desc desc =
        p.bias ? dnnl::matmul::desc(m.a, m.b, m.bias, m.c) : dnnl::matmul::desc(m.a, m.b, m.c);
    m.matmul = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, c.engine));
    made = std::move(m);
  } catch (const dnnl::error&) {
    made.reset();  // unimplemented here (no bf16/f16 ISA): the caller widens
  }
  return c.primitives.emplace(key, std::move(made)).first->second;
}

}  // namespace

bool half_gemm_available(const HalfGemm& problem) {
  return primitive(cache(), problem).has_value();
}

bool run_half_gemm(const HalfGemm& p, const void* a, const void* b, const void* bias, void* c) {
  Cache& cached = cache();
  const std::optional<Primitive>& made = primitive(cached, p);
  if (!made) return false;
  // oneDNN takes non-const handles; it only reads A, B and the bias.
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(made->a, cached.engine, const_cast<void*>(a))},
      {DNNL_ARG_WEIGHTS, memory(made->b, cached.engine, const_cast<void*>(b))},
      {DNNL_ARG_DST, memory(made->c, cached.engine, c)}};
  if (p.bias)
    args.emplace(DNNL_ARG_BIAS, memory(made->bias, cached.engine, const_cast<void*>(bias)));
  try {
    made->matmul.execute(cached.stream, args);
    cached.stream.wait();
  } catch (const dnnl::error& e) {
    const GemmArgs& g = p.args;
    throw Error(
        fmt::format("oneDNN 16-bit matmul failed: {} for m {} n {} k {}", e.what(), g.m, g.n, g.k));
  }
  count_onednn_gemm();
  runs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::uint64_t half_gemm_runs() {
  return runs.load(std::memory_order_relaxed);
}

}  // namespace tapestry::runtime::fast
