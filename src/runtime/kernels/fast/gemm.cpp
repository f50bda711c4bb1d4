// GEMM dispatch: the process-wide backend switch and the per-shape choice of kAuto.
#include "gemm.h"

#include <atomic>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

#include <cblas.h>
#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "tapestry/runtime/kernel_path.h"
#include "tapestry/support/error.h"

namespace tapestry::runtime {

namespace {

std::atomic<GemmBackend> current_backend{GemmBackend::kAuto};

}  // namespace

void set_gemm_backend(GemmBackend backend) {
  current_backend.store(backend, std::memory_order_relaxed);
}

GemmBackend gemm_backend() {
  return current_backend.load(std::memory_order_relaxed);
}

namespace fast {

// Below this many multiply-adds oneDNN's per-call overhead (argument checks, a JIT kernel
// lookup) outweighs its faster inner kernel: measured in bench/kernels_bench.cpp, see
// docs/runtime.md ("Fast kernels").
constexpr std::int64_t kOneDnnMinWork = std::int64_t{32} * 32 * 32;

bool fits_blas(const GemmArgs& args) {
  constexpr std::int64_t kMax = std::numeric_limits<int>::max();
  for (std::int64_t v : {args.m, args.n, args.k, args.lda, args.ldb, args.ldc}) {
    if (v < 1 || v > kMax) return false;
  }
  return true;
}

GemmBackend auto_backend(std::int64_t m, std::int64_t n, std::int64_t k) {
  return m * n * k >= kOneDnnMinWork ? GemmBackend::kOneDnn : GemmBackend::kOpenBlas;
}

namespace {

// Checked in every build (not an assertion): a failed call leaves C unwritten, so the kernel
// must fail rather than return garbage.
void check_dnnl(dnnl_status_t status, const char* call, const GemmArgs& g) {
  if (status == dnnl_success) return;
  throw Error(
      fmt::format("{} failed: {} (status {}) for m {} n {} k {}, trans_a {}, trans_b {}, "
                  "lda {} ldb {} ldc {}",
                  call, dnnl_status2str(status), static_cast<int>(status), g.m, g.n, g.k, g.trans_a,
                  g.trans_b, g.lda, g.ldb, g.ldc));
}

CBLAS_TRANSPOSE cblas_trans(bool trans) {
  return trans ? CblasTrans : CblasNoTrans;
}

}  // namespace

void gemm(const GemmArgs& g, const float* a, const float* b, float beta, float* c) {
  GemmBackend backend = gemm_backend();
  if (backend == GemmBackend::kAuto) backend = auto_backend(g.m, g.n, g.k);
  if (backend == GemmBackend::kOneDnn) {
    const dnnl_status_t status = dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.m, g.n,
                                            g.k, 1.0f, a, g.lda, b, g.ldb, beta, c, g.ldc);
    check_dnnl(status, "dnnl_sgemm", g);
    count_onednn_gemm();
    return;
  }
  note_kernel_path(KernelPath::kOpenBlas);
  cblas_sgemm(CblasRowMajor, cblas_trans(g.trans_a), cblas_trans(g.trans_b), static_cast<int>(g.m),
              static_cast<int>(g.n), static_cast<int>(g.k), 1.0f, a, static_cast<int>(g.lda), b,
              static_cast<int>(g.ldb), beta, c, static_cast<int>(g.ldc));
}

namespace {

// One cached matmul primitive: the problem it was made for is its key.
struct PostOpKey {
  GemmArgs g;
  bool bias = false;
  bool relu = false;

  bool operator==(const PostOpKey& o) const {
    return g.m == o.g.m && g.n == o.g.n && g.k == o.g.k && g.trans_a == o.g.trans_a &&
           g.trans_b == o.g.trans_b && g.lda == o.g.lda && g.ldb == o.g.ldb && g.ldc == o.g.ldc &&
           bias == o.bias && relu == o.relu;
  }
};

struct PostOpKeyHash {
  std::size_t operator()(const PostOpKey& k) const {
    std::size_t h = 0;
    for (std::int64_t v : {k.g.m, k.g.n, k.g.k, k.g.lda, k.g.ldb, k.g.ldc}) {
      h = h * 1000003U ^ static_cast<std::size_t>(v);
    }
    return h * 8 + (k.g.trans_a ? 4U : 0U) + (k.g.trans_b ? 2U : 0U) + (k.bias ? 1U : 0U) +
           (k.relu ? 16U : 0U);
  }
};

struct PostOpPrimitive {
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, bias, c;
};

// Per thread: oneDNN objects are not shared between the executor's threads.
struct PostOpCache {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::unordered_map<PostOpKey, std::optional<PostOpPrimitive>, PostOpKeyHash> primitives;
};

PostOpCache& post_op_cache() {
  thread_local PostOpCache cache;
  return cache;
}

// The primitive for `key`, made on first use; nullopt when oneDNN refuses it (remembered).
const std::optional<PostOpPrimitive>& post_op_primitive(PostOpCache& cache, const PostOpKey& key) {
  auto found = cache.primitives.find(key);
  if (found != cache.primitives.end()) return found->second;
  using dnnl::memory;
  const GemmArgs& g = key.g;
  const auto f32 = memory::data_type::f32;
  std::optional<PostOpPrimitive> made;
  try {
    PostOpPrimitive p;
    p.a =
        memory::desc({g.m, g.k}, f32, g.trans_a ? memory::dims{1, g.lda} : memory::dims{g.lda, 1});
    p.b =
        memory::desc({g.k, g.n}, f32, g.trans_b ? memory::dims{1, g.ldb} : memory::dims{g.ldb, 1});
    p.c = memory::desc({g.m, g.n}, f32, memory::dims{g.ldc, 1});
    p.bias = key.bias ? memory::desc({1, g.n}, f32, memory::dims{g.n, 1}) : memory::desc();
    dnnl::primitive_attr attr;
    if (key.relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0F, dnnl::algorithm::eltwise_relu, 0.0F, 0.0F);  // oneDNN 2.x
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::desc desc =
        key.bias ? dnnl::matmul::desc(p.a, p.b, p.bias, p.c) : dnnl::matmul::desc(p.a, p.b, p.c);
    p.primitive = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, cache.engine));
    made = std::move(p);
  } catch (const dnnl::error&) {
    made.reset();  // the caller computes it the other way
  }
  return cache.primitives.emplace(key, std::move(made)).first->second;
}

}  // namespace

bool gemm_with_post_ops(const GemmArgs& g, const float* a, const float* b, const float* bias,
                        bool relu, float* c) {
  GemmBackend backend = gemm_backend();
  if (backend == GemmBackend::kAuto) backend = auto_backend(g.m, g.n, g.k);
  if (backend != GemmBackend::kOneDnn) return false;
  PostOpCache& cache = post_op_cache();
  const std::optional<PostOpPrimitive>& p =
      post_op_primitive(cache, PostOpKey{g, bias != nullptr, relu});
  if (!p) return false;
  using dnnl::memory;
  // oneDNN takes non-const handles; it only reads A, B and the bias.
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(p->a, cache.engine, const_cast<float*>(a))},
      {DNNL_ARG_WEIGHTS, memory(p->b, cache.engine, const_cast<float*>(b))},
      {DNNL_ARG_DST, memory(p->c, cache.engine, c)}};
  if (bias != nullptr) {
    args.emplace(DNNL_ARG_BIAS, memory(p->bias, cache.engine, const_cast<float*>(bias)));
  }
  try {
    p->primitive.execute(cache.stream, args);
    cache.stream.wait();
  } catch (const dnnl::error& e) {
    throw Error(
        fmt::format("oneDNN matmul failed: {} for m {} n {} k {}", e.what(), g.m, g.n, g.k));
  }
  count_onednn_gemm();
  count_post_op_gemm();
  return true;
}

void gemm(const GemmArgs& g, const double* a, const double* b, double beta, double* c) {
  note_kernel_path(KernelPath::kOpenBlas);
  cblas_dgemm(CblasRowMajor, cblas_trans(g.trans_a), cblas_trans(g.trans_b), static_cast<int>(g.m),
              static_cast<int>(g.n), static_cast<int>(g.k), 1.0, a, static_cast<int>(g.lda), b,
              static_cast<int>(g.ldb), beta, c, static_cast<int>(g.ldc));
}

}  // namespace fast

}  // namespace tapestry::runtime
