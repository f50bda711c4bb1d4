// linear, linear_nobias and matmul through cuBLASLt (gemm_kernels.h).
#include "gemm_kernels.h"

#include <array>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "gemm_plan.h"
#include "pointwise_kernels.h"
#include "port_layout.h"
#include "simple_gemm.h"

namespace tapestry::gpu::kernels {

namespace {

using runtime::InputPort;
using runtime::KernelCall;
using runtime::OutputPort;

std::atomic<bool> g_force_simple{false};

// ---- types ------------------------------------------------------------------------------------

cudaDataType_t cuda_type(ir::DType t) {
  switch (t) {
    case ir::DType::kFloat64:
      return CUDA_R_64F;
    case ir::DType::kBFloat16:
      return CUDA_R_16BF;
    case ir::DType::kFloat16:
      return CUDA_R_16F;
    default:
      return CUDA_R_32F;
  }
}

// The largest power of two (≤ 256) dividing every value (addresses and byte strides).
std::uint32_t alignment(std::initializer_list<std::uint64_t> values) {
  std::uint64_t all = 256;
  for (std::uint64_t v : values) all |= v;
  return static_cast<std::uint32_t>(all & (~all + 1));
}

// ---- the algorithm cache ----------------------------------------------------------------------

// cuBLASLt's algorithm for one GEMM configuration: the heuristic's first choice until the
// candidates it ranked next were timed once (tune_algorithm), then the fastest of them.
struct CachedAlgo {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
  std::vector<cublasLtMatmulAlgo_t> candidates;  // the heuristic's, best first
  bool tuned = false;
};

// How many of the heuristic's candidates are timed, and how often each.
constexpr int kTuneCandidates = 8;
constexpr int kTuneRepeats = 3;

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::vector<std::int64_t>, CachedAlgo>& cache() {
  static std::map<std::vector<std::int64_t>, CachedAlgo> c;
  return c;
}

void check_lt(const KernelCall& call, cublasStatus_t status, std::string_view what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    call.fail(fmt::format("{}: cuBLASLt status {} ({})", what, static_cast<int>(status),
                          cublasLtGetStatusString(status)));
  }
}

// Owns the descriptors of one cuBLASLt call.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
    if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

template <typename T>
void set_layout(const KernelCall& call, cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a,
                T value) {
  check_lt(call, cublasLtMatrixLayoutSetAttribute(l, a, &value, sizeof(value)), "matrix layout");
}

template <typename T>
void set_desc(const KernelCall& call, cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
              T value) {
  check_lt(call, cublasLtMatmulDescSetAttribute(d, a, &value, sizeof(value)), "matmul descriptor");
}

template <typename T>
void set_pref(const KernelCall& call, cublasLtMatmulPreference_t p,
              cublasLtMatmulPreferenceAttributes_t a, T value) {
  check_lt(call, cublasLtMatmulPreferenceSetAttribute(p, a, &value, sizeof(value)),
           "matmul preference");
}

// Pointwise over call.index with the reduced dim cut to one point: bias and result cells once.
KernelCall output_cells_call(const KernelCall& call, std::size_t k_dim) {
  KernelCall c = call;
  const std::int64_t s = call.index.start()[k_dim];
  c.index = call.index.with_dim(k_dim, s, s + 1);
  return c;
}

void add_bias_after(const KernelCall& call, const DeviceContext& ctx, const Gemm& g) {
  const KernelCall c = output_cells_call(call, g.k_dim);
  const InputPort result_in{runtime::ConstView(g.c->view), g.c->ipf};
  const std::array<const InputPort*, 2> in{&result_in, g.bias};
  launch_pointwise_call(c, ctx, PointwiseOp::kAdd, *g.c, in);
}

void relu_after(const KernelCall& call, const DeviceContext& ctx, const Gemm& g) {
  const KernelCall c = output_cells_call(call, g.k_dim);
  const InputPort result_in{runtime::ConstView(g.c->view), g.c->ipf};
  const std::array<const InputPort*, 1> in{&result_in};
  launch_pointwise_call(c, ctx, PointwiseOp::kRelu, *g.c, in);
}

}  // namespace

bool gemm_supports(const KernelCall& call) {
  const std::optional<Gemm> g = plan_gemm(call);
  if (!g || g->k == 0) return false;  // an empty sum: the host writes the bias (or 0)
  const std::optional<ColumnMajorGemm> p = column_major_gemm(*g);
  if (!p) return false;
  if (looped_calls(*p) > kMaxGemmLoop) return false;
  // The pointwise fallbacks (bias after the GEMM, K = 0) must fit the engine too.
  return g->c->view.rank() <= static_cast<std::size_t>(kMaxRank);
}

void gemm_launch(const KernelCall& call, const DeviceContext& ctx, bool fuse_relu) {
  const std::optional<Gemm> planned = plan_gemm(call);
  if (!planned) call.fail("the GPU's GEMM cannot express this call (supports() said no)");
  const Gemm& g = *planned;
  if (g.m == 0 || g.n == 0) return;
  for (const BatchDim& b : g.batch) {
    if (b.extent == 0) return;
  }
  if (g.k == 0) call.fail("an empty reduction is left to the host (supports() said no)");
  const std::optional<ColumnMajorGemm> planned_p = column_major_gemm(g);
  if (!planned_p) call.fail("the GPU's GEMM cannot express this call (supports() said no)");
  const ColumnMajorGemm& p = *planned_p;

  const ir::DType in_type = g.a->view.dtype();
  const ir::DType out_type = g.c->view.dtype();
  const bool f64 = in_type == ir::DType::kFloat64;
  const cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F
          : (ctx.allow_tf32 && in_type == ir::DType::kFloat32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                              : CUBLAS_COMPUTE_32F);
  const cudaDataType_t scale_type = f64 ? CUDA_R_64F : CUDA_R_32F;
  const std::int64_t in_bytes = static_cast<std::int64_t>(ir::dtype_size_bytes(in_type)),
                     out_bytes = static_cast<std::int64_t>(ir::dtype_size_bytes(out_type));

  const auto* a_ptr = static_cast<const std::byte*>(device_address(*p.pa, *p.la));
  const auto* b_ptr = static_cast<const std::byte*>(device_address(*p.pb, *p.lb));
  auto* d_ptr = static_cast<std::byte*>(device_address(*g.c, g.lc));
  const void* bias_ptr = g.bias != nullptr ? device_address(*g.bias, g.lbias) : nullptr;

  // Batch: the strided one (innermost, nothing broadcast) and the looped ones.
  std::int32_t batch_count = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  std::vector<std::array<std::int64_t, 4>> looped;
  for (std::size_t i = 0; i < p.batch.size(); ++i) {
    const auto& b = p.batch[i];
    if (is_strided_batch(p, i)) {
      batch_count = static_cast<std::int32_t>(b[0]);
      stride_a = b[1];
      stride_b = b[2];
      stride_d = b[3];
    } else {
      looped.push_back(b);
    }
  }
  std::uint64_t a_bits = reinterpret_cast<std::uintptr_t>(a_ptr) | stride_a * in_bytes;
  std::uint64_t b_bits = reinterpret_cast<std::uintptr_t>(b_ptr) | stride_b * in_bytes;
  std::uint64_t d_bits = reinterpret_cast<std::uintptr_t>(d_ptr) | stride_d * out_bytes;
  for (const auto& l : looped) {
    a_bits |= static_cast<std::uint64_t>(l[1] * in_bytes);
    b_bits |= static_cast<std::uint64_t>(l[2] * in_bytes);
    d_bits |= static_cast<std::uint64_t>(l[3] * out_bytes);
  }
  const std::uint32_t align_a = alignment({a_bits}), align_b = alignment({b_bits}),
                      align_d = alignment({d_bits});

  const bool bias_epilogue_possible = g.bias != nullptr && p.swapped && (g.bias_n == 1 || g.n == 1);
  auto* handle = static_cast<cublasLtHandle_t>(ctx.cublaslt);

  // Tries the epilogue that fuses most, then less; returns the descriptors and algorithm.
  std::vector<std::int64_t> used_key;  // the cache entry `make` found or made
  const auto make = [&](cublasLtEpilogue_t epilogue, Descriptors& ds) -> std::optional<CachedAlgo> {
    check_lt(call, cublasLtMatmulDescCreate(&ds.op, compute, scale_type), "matmul descriptor");
    set_desc(call, ds.op, CUBLASLT_MATMUL_DESC_TRANSA, p.a.trans ? CUBLAS_OP_T : CUBLAS_OP_N);
    set_desc(call, ds.op, CUBLASLT_MATMUL_DESC_TRANSB, p.b.trans ? CUBLAS_OP_T : CUBLAS_OP_N);
    set_desc(call, ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    const bool with_bias =
        epilogue == CUBLASLT_EPILOGUE_BIAS || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    if (with_bias) set_desc(call, ds.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_ptr);
    const cudaDataType_t in_cuda = cuda_type(in_type), out_cuda = cuda_type(out_type);
    check_lt(call,
             cublasLtMatrixLayoutCreate(&ds.a, in_cuda, static_cast<std::uint64_t>(p.a.rows),
                                        static_cast<std::uint64_t>(p.a.cols), p.a.ld),
             "matrix layout");
    check_lt(call,
             cublasLtMatrixLayoutCreate(&ds.b, in_cuda, static_cast<std::uint64_t>(p.b.rows),
                                        static_cast<std::uint64_t>(p.b.cols), p.b.ld),
             "matrix layout");
    check_lt(call,
             cublasLtMatrixLayoutCreate(&ds.d, out_cuda, static_cast<std::uint64_t>(p.d.rows),
                                        static_cast<std::uint64_t>(p.d.cols), p.d.ld),
             "matrix layout");
    if (batch_count > 1) {
      set_layout(call, ds.a, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch_count);
      set_layout(call, ds.b, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch_count);
      set_layout(call, ds.d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch_count);
      set_layout(call, ds.a, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride_a);
      set_layout(call, ds.b, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride_b);
      set_layout(call, ds.d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride_d);
    }
    const std::uint64_t bias_bits =
        with_bias ? reinterpret_cast<std::uintptr_t>(bias_ptr) : std::uint64_t{256};
    const std::vector<std::int64_t> key{static_cast<std::int64_t>(in_cuda),
                                        static_cast<std::int64_t>(out_cuda),
                                        static_cast<std::int64_t>(compute),
                                        p.a.trans,
                                        p.b.trans,
                                        p.m,
                                        p.n,
                                        p.k,
                                        p.a.ld,
                                        p.b.ld,
                                        p.d.ld,
                                        batch_count,
                                        stride_a,
                                        stride_b,
                                        stride_d,
                                        static_cast<std::int64_t>(epilogue),
                                        align_a,
                                        align_b,
                                        align_d,
                                        alignment({bias_bits}),
                                        static_cast<std::int64_t>(ctx.workspace_bytes),
                                        ctx.device};
    {
      const std::lock_guard<std::mutex> lock(cache_mutex());
      const auto it = cache().find(key);
      if (it != cache().end()) {
        used_key = key;
        return it->second;
      }
    }
    check_lt(call, cublasLtMatmulPreferenceCreate(&ds.pref), "matmul preference");
    set_pref(call, ds.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
             static_cast<std::uint64_t>(ctx.workspace_bytes));
    set_pref(call, ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a);
    set_pref(call, ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b);
    set_pref(call, ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d);
    set_pref(call, ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d);
    std::array<cublasLtMatmulHeuristicResult_t, kTuneCandidates> results{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle, ds.op, ds.a, ds.b, ds.d, ds.d, ds.pref, kTuneCandidates, results.data(), &found);
    CachedAlgo cached;
    if (status == CUBLAS_STATUS_SUCCESS) {
      for (int i = 0; i < found; ++i) {
        if (results[static_cast<std::size_t>(i)].state == CUBLAS_STATUS_SUCCESS &&
            results[static_cast<std::size_t>(i)].workspaceSize <= ctx.workspace_bytes)
          cached.candidates.push_back(results[static_cast<std::size_t>(i)].algo);
      }
    }
    cached.found = !cached.candidates.empty();
    if (cached.found) cached.algo = cached.candidates.front();
    cached.tuned = cached.candidates.size() <= 1;
    const std::lock_guard<std::mutex> lock(cache_mutex());
    cache().emplace(key, cached);
    used_key = key;
    return cached;
  };

  std::vector<cublasLtEpilogue_t> tries;
  if (bias_epilogue_possible)
    tries.push_back(fuse_relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS);
  if (fuse_relu) tries.push_back(CUBLASLT_EPILOGUE_RELU);
  tries.push_back(CUBLASLT_EPILOGUE_DEFAULT);
  if (g_force_simple.load()) tries.clear();
  bool refused = false;
  for (cublasLtEpilogue_t epilogue : tries) {
    Descriptors ds;
    std::optional<CachedAlgo> algo = make(epilogue, ds);
    if (!algo || !algo->found) continue;
    const float alpha32 = 1.0F, beta32 = 0.0F;
    const double alpha64 = 1.0, beta64 = 0.0;
    const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
    const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
    // The first call of a configuration outside a CUDA graph capture times the heuristic's
    // candidates on this very call (the output is written again below) and keeps the fastest:
    // the heuristic's first choice is not always the fastest (cuBLASLt's documentation
    // recommends timing several), and this is what PyTorch-level speed needs on large GEMMs.
    if (!algo->tuned && looped.empty()) {
      auto* stream = static_cast<cudaStream_t>(ctx.stream);
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(stream, &capturing) == cudaSuccess &&
          capturing == cudaStreamCaptureStatusNone) {
        cudaEvent_t t0 = nullptr, t1 = nullptr;
        float best_ms = -1;
        if (cudaEventCreate(&t0) == cudaSuccess && cudaEventCreate(&t1) == cudaSuccess) {
          for (const cublasLtMatmulAlgo_t& candidate : algo->candidates) {
            const auto one = [&] {
              return cublasLtMatmul(handle, ds.op, alpha, a_ptr, ds.a, b_ptr, ds.b, beta, d_ptr,
                                    ds.d, d_ptr, ds.d, &candidate, ctx.workspace,
                                    ctx.workspace_bytes, stream) == CUBLAS_STATUS_SUCCESS;
            };
            if (!one()) continue;  // warm-up; an algorithm refused here is not a candidate
            bool ok = cudaEventRecord(t0, stream) == cudaSuccess;
            for (int r = 0; r < kTuneRepeats && ok; ++r) ok = one();
            ok = ok && cudaEventRecord(t1, stream) == cudaSuccess &&
                 cudaEventSynchronize(t1) == cudaSuccess;
            float ms = 0;
            if (!ok || cudaEventElapsedTime(&ms, t0, t1) != cudaSuccess) continue;
            if (best_ms < 0 || ms < best_ms) {
              best_ms = ms;
              algo->algo = candidate;
            }
          }
        }
        if (t0 != nullptr) cudaEventDestroy(t0);
        if (t1 != nullptr) cudaEventDestroy(t1);
        (void)cudaGetLastError();
        algo->tuned = true;
        const std::lock_guard<std::mutex> lock(cache_mutex());
        cache()[used_key] = *algo;
      }
    }
    // The looped batch points, row-major.
    std::vector<std::int64_t> at(looped.size(), 0);
    while (true) {
      std::int64_t oa = 0, ob = 0, od = 0;
      for (std::size_t i = 0; i < looped.size(); ++i) {
        oa += at[i] * looped[i][1];
        ob += at[i] * looped[i][2];
        od += at[i] * looped[i][3];
      }
      // A call cuBLASLt refuses (it checks the algorithm against the pointers and layouts) goes
      // to the plain GEMM below, which recomputes every batch point.
      if (cublasLtMatmul(handle, ds.op, alpha, a_ptr + oa * in_bytes, ds.a, b_ptr + ob * in_bytes,
                         ds.b, beta, d_ptr + od * out_bytes, ds.d, d_ptr + od * out_bytes, ds.d,
                         &algo->algo, ctx.workspace, ctx.workspace_bytes,
                         static_cast<cudaStream_t>(ctx.stream)) != CUBLAS_STATUS_SUCCESS) {
        refused = true;
        break;
      }
      std::size_t i = looped.size();
      while (i > 0 && ++at[i - 1] == looped[i - 1][0]) at[--i] = 0;
      if (i == 0) break;
    }
    if (refused) break;
    const bool bias_done =
        epilogue == CUBLASLT_EPILOGUE_BIAS || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    const bool relu_done =
        epilogue == CUBLASLT_EPILOGUE_RELU || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    if (g.bias != nullptr && !bias_done) add_bias_after(call, ctx, g);
    if (fuse_relu && !relu_done) relu_after(call, ctx, g);
    return;
  }
  // cuBLASLt has no algorithm for this plan (an alignment or leading dimension its kernels do not
  // take), or refused the call: the plain CUDA GEMM, one thread per output element.
  SimpleGemm simple;
  simple.in = *elem_type(in_type);
  simple.out = *elem_type(out_type);
  simple.m = p.m;
  simple.n = p.n;
  simple.k = p.k;
  simple.a_trans = p.a.trans;
  simple.b_trans = p.b.trans;
  simple.lda = p.a.ld;
  simple.ldb = p.b.ld;
  simple.ldd = p.d.ld;
  if (p.batch.size() > static_cast<std::size_t>(kMaxRank)) {
    call.fail(
        fmt::format("cuBLASLt has no algorithm for this GEMM (m {}, n {}, k {}), and it has "
                    "more batch dims than the plain GEMM takes",
                    p.m, p.n, p.k));
  }
  simple.batch_rank = static_cast<int>(p.batch.size());
  for (std::size_t i = 0; i < p.batch.size(); ++i) {
    simple.batch_extent[i] = p.batch[i][0];
    simple.batch_a[i] = p.batch[i][1];
    simple.batch_b[i] = p.batch[i][2];
    simple.batch_d[i] = p.batch[i][3];
  }
  simple.a = a_ptr;
  simple.b = b_ptr;
  simple.d = d_ptr;
  simple.bias = bias_ptr;
  simple.bias_along_rows = p.swapped;
  simple.bias_step = g.bias_n;
  simple.relu = fuse_relu;
  check_cuda(call, launch_simple_gemm(simple, ctx.stream), "plain GEMM launch");
}

namespace {

void launch(const KernelCall& call, const DeviceContext& ctx) {
  gemm_launch(call, ctx);
}

}  // namespace

void force_simple_gemm(bool on) {
  g_force_simple = on;
}

void register_gemm_kernels(DeviceKernels& kernels) {
  for (const char* name : {"linear", "linear_nobias", "matmul", "linear_grad_w"}) {
    kernels.add(name, DeviceKernel{&gemm_supports, &launch});
  }
}

}  // namespace tapestry::gpu::kernels
