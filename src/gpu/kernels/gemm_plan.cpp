// The host-side plan of a device GEMM (gemm_plan.h).
#include "gemm_plan.h"

#include <algorithm>
#include <limits>

namespace tapestry::gpu::kernels {

using runtime::InputPort;
using runtime::KernelCall;
using runtime::OutputPort;

namespace {

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

// linear_grad_w: result[o, i] = Σ_b d_result[b, o]·x[b, i], index [batch..., out, in] with the
// batch dims the reduction: A = d_result (M = out), B = x (N = in), K = the batch dims, merged.
std::optional<Gemm> plan_grad_w(const KernelCall& call) {
  Gemm g;
  g.a = call.find_input("d_result");
  g.b = call.find_input("x");
  if (g.a == nullptr || g.b == nullptr || call.outputs.size() != 1 || !call.outputs.has("result")) {
    return std::nullopt;
  }
  g.c = &call.output("result");
  if (!dtypes_fit(g)) return std::nullopt;
  const std::size_t rank = call.index.rank();
  if (rank < 2 || !has_unit_cells(*g.a->ipf) || !has_unit_cells(*g.b->ipf) ||
      !has_unit_cells(*g.c->ipf)) {
    return std::nullopt;
  }
  g.la = port_layout(*g.a, call.index);
  g.lb = port_layout(*g.b, call.index);
  g.lc = port_layout(*g.c, call.index);
  const std::size_t md = rank - 2, nd = rank - 1;
  g.m = call.index.extent(md);
  g.a_m = g.la.coef[md];
  g.c_m = g.lc.coef[md];
  g.n = call.index.extent(nd);
  g.b_n = g.lb.coef[nd];
  g.c_n = g.lc.coef[nd];
  if ((g.m > 1 && g.lb.coef[md] != 0) || (g.n > 1 && g.la.coef[nd] != 0)) return std::nullopt;
  std::vector<BatchDim> k;
  g.k = 1;
  for (std::size_t j = 0; j < md; ++j) {
    g.k *= call.index.extent(j);
    if (call.index.extent(j) > 1 && g.lc.coef[j] != 0) return std::nullopt;
    push_dim(k, {call.index.extent(j), g.la.coef[j], g.lb.coef[j], 0});
  }
  if (k.size() > 1) return std::nullopt;  // batch dims that do not merge into one K
  g.a_k = k.empty() ? 0 : k[0].a;
  g.b_k = k.empty() ? 0 : k[0].b;
  g.k_dim = 0;
  return g;
}

}  // namespace

std::optional<Gemm> plan_gemm(const KernelCall& call) {
  {
    std::string_view kernel = call.kernel;
    if (kernel.starts_with("op:")) kernel.remove_prefix(3);
    if (kernel == "linear_grad_w") return plan_grad_w(call);
  }
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

namespace {

// The logical rows × cols matrix with element steps rs, cs, as an operand.
std::optional<MatrixLayout> operand_layout(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                           std::int64_t cs) {
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= rows)) {
    return MatrixLayout{false, rows, cols, cols == 1 ? rows : std::max(cs, rows)};
  }
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= cols)) {
    return MatrixLayout{true, cols, rows, rows == 1 ? cols : std::max(rs, cols)};
  }
  return std::nullopt;
}

// The output (never transposed).
std::optional<MatrixLayout> output_layout(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                          std::int64_t cs) {
  std::optional<MatrixLayout> l = operand_layout(rows, cols, rs, cs);
  if (l && l->trans) {
    if (rows == 1 && cols == 1) return MatrixLayout{false, 1, 1, 1};
    return std::nullopt;
  }
  return l;
}

}  // namespace

std::optional<ColumnMajorGemm> column_major_gemm(const Gemm& g) {
  ColumnMajorGemm p;
  std::optional<MatrixLayout> a, b, d;
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

std::int64_t looped_calls(const ColumnMajorGemm& p) {
  std::int64_t calls = 1;
  for (std::size_t i = 0; i < p.batch.size(); ++i) {
    const auto& b = p.batch[i];
    if (!is_strided_batch(p, i)) calls *= b[0];
  }
  return calls;
}

bool is_strided_batch(const ColumnMajorGemm& p, std::size_t i) {
  const auto& b = p.batch[i];
  return i + 1 == p.batch.size() && b[1] != 0 && b[2] != 0 && b[3] != 0 &&
         b[0] <= std::numeric_limits<std::int32_t>::max();
}

}  // namespace tapestry::gpu::kernels
