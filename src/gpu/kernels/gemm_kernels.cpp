// linear, linear_nobias and matmul through cuBLASLt (gemm_kernels.h).
#include "gemm_kernels.h"

#include <array>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "pointwise_kernels.h"
#include "port_layout.h"

namespace tapestry::gpu::kernels {

namespace {

using runtime::InputPort;
using runtime::KernelCall;
using runtime::OutputPort;

// One batch dim of the GEMM: its extent and the element steps of A, B and C along it.
struct BatchDim {
  std::int64_t extent = 1, a = 0, b = 0, c = 0;
};

// C[M, N] = A[M, K]·B[K, N] (+ bias[N]) with element steps along every dim; see the file comment
// of gemm_kernels.h.
struct Gemm {
  std::int64_t m = 1, n = 1, k = 1;
  std::int64_t a_m = 0, a_k = 0, b_k = 0, b_n = 0, c_m = 0, c_n = 0, bias_n = 0;
  std::vector<BatchDim> batch;  // outermost first
  const InputPort* a = nullptr;
  const InputPort* b = nullptr;
  const OutputPort* c = nullptr;
  const InputPort* bias = nullptr;
  PortLayout la, lb, lc, lbias;
  std::size_t k_dim = 0;  // the index dim of the reduction
};

// Fails unless the cell window of `ipf` is 1 in every dim but `dim`; returns its extent there.
std::optional<std::int64_t> window_along(const zspace::IndexProjection& ipf, std::size_t dim) {
  const zspace::Point& shape = ipf.shape();
  for (std::size_t d = 0; d < shape.rank(); ++d) {
    if (d != dim && shape[d] != 1) return std::nullopt;
  }
  return dim < shape.rank() ? std::optional(shape[dim]) : std::nullopt;
}

// The element step along K of an operand whose cells hold `window` elements `stride` apart along
// k and whose index dim k steps `coef`: K = extent·window merged into one dim, when it can be.
std::optional<std::int64_t> k_step(std::int64_t extent, std::int64_t window, std::int64_t coef,
                                   std::int64_t stride) {
  if (window == 1) return coef;
  if (extent == 1 || coef == window * stride) return stride;
  return std::nullopt;
}

// Appends dims (extent > 1) to `dims`, merging one into the previous where every operand walks
// both as one dim.
void push_dim(std::vector<BatchDim>& dims, BatchDim d) {
  if (d.extent == 1) return;
  if (!dims.empty()) {
    BatchDim& o = dims.back();
    if (o.a == d.a * d.extent && o.b == d.b * d.extent && o.c == d.c * d.extent) {
      o.extent *= d.extent;
      o.a = d.a;
      o.b = d.b;
      o.c = d.c;
      return;
    }
  }
  dims.push_back(d);
}

bool is_matmul(const KernelCall& call) {
  std::string_view k = call.kernel;
  if (k.starts_with("op:")) k.remove_prefix(3);
  return k == "matmul";
}

bool dtypes_fit(const Gemm& g) {
  const ir::DType in = g.a->view.dtype();
  const ir::DType out = g.c->view.dtype();
  if (g.b->view.dtype() != in) return false;
  if (g.bias != nullptr && g.bias->view.dtype() != out) return false;
  switch (in) {
    case ir::DType::kFloat32:
    case ir::DType::kFloat64:
      return out == in;
    case ir::DType::kBFloat16:
    case ir::DType::kFloat16:
      return out == in || out == ir::DType::kFloat32;
    default:
      return false;
  }
}

std::optional<Gemm> plan(const KernelCall& call) {
  const bool matmul = is_matmul(call);
  Gemm g;
  g.a = call.find_input(matmul ? "a" : "x");
  g.b = call.find_input(matmul ? "b" : "w");
  g.bias = matmul ? nullptr : call.find_input("bias");
  if (g.a == nullptr || g.b == nullptr || call.outputs.size() != 1 || !call.outputs.has("result")) {
    return std::nullopt;
  }
  g.c = &call.output("result");
  if (!dtypes_fit(g)) return std::nullopt;
  const std::size_t rank = call.index.rank();
  if (rank < (matmul ? 3U : 2U) || g.a->view.rank() < 1 || g.b->view.rank() < 2)
    return std::nullopt;
  if (!has_unit_cells(*g.c->ipf) || (g.bias != nullptr && !has_unit_cells(*g.bias->ipf))) {
    return std::nullopt;
  }
  const std::size_t a_kdim = g.a->view.rank() - 1;
  const std::size_t b_kdim = matmul ? g.b->view.rank() - 2 : 1;
  const auto wa = window_along(*g.a->ipf, a_kdim);
  const auto wb = window_along(*g.b->ipf, b_kdim);
  if (!wa || !wb || *wa != *wb) return std::nullopt;
  g.la = port_layout(*g.a, call.index);
  g.lb = port_layout(*g.b, call.index);
  g.lc = port_layout(*g.c, call.index);
  if (g.bias != nullptr) g.lbias = port_layout(*g.bias, call.index);

  const std::size_t kd = rank - 1;
  g.k_dim = kd;
  const std::int64_t k_extent = call.index.extent(kd);
  const auto ak = k_step(k_extent, *wa, g.la.coef[kd], g.a->view.stride(a_kdim));
  const auto bk = k_step(k_extent, *wb, g.lb.coef[kd], g.b->view.stride(b_kdim));
  if (!ak || !bk || g.lc.coef[kd] != 0) return std::nullopt;
  if (g.bias != nullptr && g.lbias.coef[kd] != 0) return std::nullopt;
  g.k = k_extent * *wa;
  g.a_k = *ak;
  g.b_k = *bk;

  // N: linear's `out`, matmul's `n` (the dim before k); A does not move along it.
  const std::size_t nd = rank - 2;
  g.n = call.index.extent(nd);
  g.b_n = g.lb.coef[nd];
  g.c_n = g.lc.coef[nd];
  if (g.bias != nullptr) g.bias_n = g.lbias.coef[nd];
  if (g.n > 1 && g.la.coef[nd] != 0) return std::nullopt;

  std::vector<BatchDim> dims;
  const std::size_t batch_end = matmul ? rank - 3 : rank - 2;
  for (std::size_t j = 0; j < batch_end; ++j) {
    if (g.bias != nullptr && call.index.extent(j) > 1 && g.lbias.coef[j] != 0) return std::nullopt;
    push_dim(dims, {call.index.extent(j), g.la.coef[j], g.lb.coef[j], g.lc.coef[j]});
  }
  if (matmul) {
    const std::size_t md = rank - 3;
    g.m = call.index.extent(md);
    g.a_m = g.la.coef[md];
    g.c_m = g.lc.coef[md];
    if (g.m > 1 && g.lb.coef[md] != 0) return std::nullopt;
    g.batch = std::move(dims);
  } else {
    // linear: the innermost (merged) batch dim that B does not move along is M.
    if (!dims.empty() && dims.back().b == 0) {
      g.m = dims.back().extent;
      g.a_m = dims.back().a;
      g.c_m = dims.back().c;
      dims.pop_back();
    }
    g.batch = std::move(dims);
  }
  return g;
}

// ---- cuBLASLt layouts -------------------------------------------------------------------------

// A stored matrix as cuBLASLt sees it: column-major rows × cols with leading dimension ld,
// transposed (op T) or not.
struct Layout {
  bool trans = false;
  std::int64_t rows = 0, cols = 0, ld = 0;
};

// The logical rows × cols matrix with element steps rs, cs, as an operand.
std::optional<Layout> operand_layout(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                     std::int64_t cs) {
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= rows)) {
    return Layout{false, rows, cols, cols == 1 ? rows : std::max(cs, rows)};
  }
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= cols)) {
    return Layout{true, cols, rows, rows == 1 ? cols : std::max(rs, cols)};
  }
  return std::nullopt;
}

// The output (never transposed).
std::optional<Layout> output_layout(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                    std::int64_t cs) {
  std::optional<Layout> l = operand_layout(rows, cols, rs, cs);
  if (l && l->trans) {
    if (rows == 1 && cols == 1) return Layout{false, 1, 1, 1};
    return std::nullopt;
  }
  return l;
}

// The column-major problem D[m', n'] = A'·B' of a Gemm: with C row-major (c_n = 1) it computes
// Cᵀ = Bᵀ·Aᵀ, so that the bias along n lies along D's rows.
struct ColumnMajor {
  bool swapped = false;
  std::int64_t m = 0, n = 0, k = 0;
  Layout a, b, d;
  const InputPort* pa = nullptr;
  const InputPort* pb = nullptr;
  const PortLayout* la = nullptr;
  const PortLayout* lb = nullptr;
  // Element steps of A', B' and D along each batch dim.
  std::vector<std::array<std::int64_t, 4>> batch;  // extent, a', b', d
};

std::optional<ColumnMajor> column_major(const Gemm& g) {
  ColumnMajor p;
  std::optional<Layout> a, b, d;
  if (g.c_n == 1 || g.n == 1) {
    p.swapped = true;
    p.m = g.n;
    p.n = g.m;
    a = operand_layout(g.n, g.k, g.b_n, g.b_k);
    b = operand_layout(g.k, g.m, g.a_k, g.a_m);
    d = output_layout(g.n, g.m, g.c_n, g.c_m);
    p.pa = g.b;
    p.pb = g.a;
    p.la = &g.lb;
    p.lb = &g.la;
  } else {
    p.m = g.m;
    p.n = g.n;
    a = operand_layout(g.m, g.k, g.a_m, g.a_k);
    b = operand_layout(g.k, g.n, g.b_k, g.b_n);
    d = output_layout(g.m, g.n, g.c_m, g.c_n);
    p.pa = g.a;
    p.pb = g.b;
    p.la = &g.la;
    p.lb = &g.lb;
  }
  if (!a || !b || !d) return std::nullopt;
  p.k = g.k;
  p.a = *a;
  p.b = *b;
  p.d = *d;
  for (const BatchDim& dim : g.batch) {
    p.batch.push_back(p.swapped ? std::array{dim.extent, dim.b, dim.a, dim.c}
                                : std::array{dim.extent, dim.a, dim.b, dim.c});
  }
  return p;
}

// Batch dims: the innermost goes to cuBLASLt as a strided batch when no operand is broadcast
// along it (step 0); the others are looped on the host, at most kMaxLoop GEMM calls.
constexpr std::int64_t kMaxLoop = 4096;

std::int64_t looped_calls(const ColumnMajor& p) {
  std::int64_t calls = 1;
  for (std::size_t i = 0; i < p.batch.size(); ++i) {
    const auto& b = p.batch[i];
    const bool strided = i + 1 == p.batch.size() && b[1] != 0 && b[2] != 0 && b[3] != 0;
    if (!strided) calls *= b[0];
  }
  return calls;
}

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

std::int64_t type_bytes(ir::DType t) {
  return t == ir::DType::kFloat64 ? 8 : t == ir::DType::kFloat32 ? 4 : 2;
}

// The largest power of two (≤ 256) dividing every value (addresses and byte strides).
std::uint32_t alignment(std::initializer_list<std::uint64_t> values) {
  std::uint64_t all = 256;
  for (std::uint64_t v : values) all |= v;
  return static_cast<std::uint32_t>(all & (~all + 1));
}

// ---- the algorithm cache ----------------------------------------------------------------------

struct CachedAlgo {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
};

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
  const std::optional<Gemm> g = plan(call);
  if (!g || g->k == 0) return false;  // an empty sum: the host writes the bias (or 0)
  const std::optional<ColumnMajor> p = column_major(*g);
  if (!p) return false;
  if (looped_calls(*p) > kMaxLoop) return false;
  // The pointwise fallbacks (bias after the GEMM, K = 0) must fit the engine too.
  return g->c->view.rank() <= static_cast<std::size_t>(kMaxRank);
}

void gemm_launch(const KernelCall& call, const DeviceContext& ctx, bool fuse_relu) {
  const std::optional<Gemm> planned = plan(call);
  if (!planned) call.fail("the GPU's GEMM cannot express this call (supports() said no)");
  const Gemm& g = *planned;
  if (g.m == 0 || g.n == 0) return;
  for (const BatchDim& b : g.batch) {
    if (b.extent == 0) return;
  }
  if (g.k == 0) call.fail("an empty reduction is left to the host (supports() said no)");
  const std::optional<ColumnMajor> planned_p = column_major(g);
  if (!planned_p) call.fail("the GPU's GEMM cannot express this call (supports() said no)");
  const ColumnMajor& p = *planned_p;

  const ir::DType in_type = g.a->view.dtype();
  const ir::DType out_type = g.c->view.dtype();
  const bool f64 = in_type == ir::DType::kFloat64;
  const cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F
          : (ctx.allow_tf32 && in_type == ir::DType::kFloat32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                              : CUBLAS_COMPUTE_32F);
  const cudaDataType_t scale_type = f64 ? CUDA_R_64F : CUDA_R_32F;
  const std::int64_t in_bytes = type_bytes(in_type), out_bytes = type_bytes(out_type);

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
    if (i + 1 == p.batch.size() && b[1] != 0 && b[2] != 0 && b[3] != 0 &&
        b[0] <= std::numeric_limits<std::int32_t>::max()) {
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
      if (it != cache().end()) return it->second;
    }
    check_lt(call, cublasLtMatmulPreferenceCreate(&ds.pref), "matmul preference");
    set_pref(call, ds.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
             static_cast<std::uint64_t>(ctx.workspace_bytes));
    set_pref(call, ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a);
    set_pref(call, ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b);
    set_pref(call, ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d);
    set_pref(call, ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, ds.op, ds.a, ds.b, ds.d,
                                                                 ds.d, ds.pref, 1, &result, &found);
    CachedAlgo cached;
    cached.found =
        status == CUBLAS_STATUS_SUCCESS && found > 0 && result.workspaceSize <= ctx.workspace_bytes;
    if (cached.found) cached.algo = result.algo;
    const std::lock_guard<std::mutex> lock(cache_mutex());
    cache().emplace(key, cached);
    return cached;
  };

  std::vector<cublasLtEpilogue_t> tries;
  if (bias_epilogue_possible)
    tries.push_back(fuse_relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS);
  if (fuse_relu) tries.push_back(CUBLASLT_EPILOGUE_RELU);
  tries.push_back(CUBLASLT_EPILOGUE_DEFAULT);
  for (cublasLtEpilogue_t epilogue : tries) {
    Descriptors ds;
    const std::optional<CachedAlgo> algo = make(epilogue, ds);
    if (!algo || !algo->found) continue;
    const float alpha32 = 1.0F, beta32 = 0.0F;
    const double alpha64 = 1.0, beta64 = 0.0;
    const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
    const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
    // The looped batch points, row-major.
    std::vector<std::int64_t> at(looped.size(), 0);
    while (true) {
      std::int64_t oa = 0, ob = 0, od = 0;
      for (std::size_t i = 0; i < looped.size(); ++i) {
        oa += at[i] * looped[i][1];
        ob += at[i] * looped[i][2];
        od += at[i] * looped[i][3];
      }
      check_lt(call,
               cublasLtMatmul(handle, ds.op, alpha, a_ptr + oa * in_bytes, ds.a,
                              b_ptr + ob * in_bytes, ds.b, beta, d_ptr + od * out_bytes, ds.d,
                              d_ptr + od * out_bytes, ds.d, &algo->algo, ctx.workspace,
                              ctx.workspace_bytes, static_cast<cudaStream_t>(ctx.stream)),
               "cublasLtMatmul");
      std::size_t i = looped.size();
      while (i > 0 && ++at[i - 1] == looped[i - 1][0]) at[--i] = 0;
      if (i == 0) break;
    }
    const bool bias_done =
        epilogue == CUBLASLT_EPILOGUE_BIAS || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    const bool relu_done =
        epilogue == CUBLASLT_EPILOGUE_RELU || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    if (g.bias != nullptr && !bias_done) add_bias_after(call, ctx, g);
    if (fuse_relu && !relu_done) relu_after(call, ctx, g);
    return;
  }
  call.fail(fmt::format("cuBLASLt has no algorithm for this GEMM (m {}, n {}, k {}, batch {})", p.m,
                        p.n, p.k, batch_count));
}

namespace {

void launch(const KernelCall& call, const DeviceContext& ctx) {
  gemm_launch(call, ctx);
}

}  // namespace

void register_gemm_kernels(DeviceKernels& kernels) {
  for (const char* name : {"linear", "linear_nobias", "matmul"}) {
    kernels.add(name, DeviceKernel{&gemm_supports, &launch});
  }
}

}  // namespace tapestry::gpu::kernels
