// GEMM dispatch: the process-wide backend switch and the per-shape choice of kAuto.
#include "gemm.h"

#include <atomic>
#include <limits>

#include <cblas.h>
#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

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
  cblas_sgemm(CblasRowMajor, cblas_trans(g.trans_a), cblas_trans(g.trans_b), static_cast<int>(g.m),
              static_cast<int>(g.n), static_cast<int>(g.k), 1.0f, a, static_cast<int>(g.lda), b,
              static_cast<int>(g.ldb), beta, c, static_cast<int>(g.ldc));
}

void gemm(const GemmArgs& g, const double* a, const double* b, double beta, double* c) {
  cblas_dgemm(CblasRowMajor, cblas_trans(g.trans_a), cblas_trans(g.trans_b), static_cast<int>(g.m),
              static_cast<int>(g.n), static_cast<int>(g.k), 1.0, a, static_cast<int>(g.lda), b,
              static_cast<int>(g.ldb), beta, c, static_cast<int>(g.ldc));
}

}  // namespace fast

}  // namespace tapestry::runtime
