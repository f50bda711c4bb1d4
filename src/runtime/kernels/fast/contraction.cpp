// Contraction plans (contraction.h) and the fast linear and matmul kernels.
#include "contraction.h"

#include <algorithm>
#include <span>
#include <type_traits>

namespace tapestry::runtime::fast {

namespace {

// The extent of a port's cells along their one non-unit dim and the view's stride there
// (extent 1 for single-element cells); nullopt when the cells extend along two dims.
struct Line {
  std::int64_t extent = 1;
  std::int64_t stride = 0;
};

template <typename Port>
std::optional<Line> cell_line(const Port& port) {
  const Point& shape = port.ipf->shape();
  std::optional<Line> line = Line{};
  bool found = false;
  for (std::size_t k = 0; k < shape.rank(); ++k) {
    if (shape[k] == 1) continue;
    if (found) return std::nullopt;
    found = true;
    line = Line{shape[k], port.view.stride(k)};
  }
  return line;
}

// How BLAS sees a rows×cols matrix with element strides (s_row, s_col): stored as is with unit
// columns, or stored transposed with unit rows; ld is the other stride. A dim of extent 1 may
// have any stride. nullopt when neither is unit or ld is too small for the stored rows.
struct Storage {
  bool trans = false;
  std::int64_t ld = 0;
};

std::optional<Storage> storage(std::int64_t rows, std::int64_t cols, std::int64_t s_row,
                               std::int64_t s_col) {
  if (cols == 1 || s_col == 1) {
    const std::int64_t ld = rows == 1 ? cols : s_row;
    if (ld >= std::max<std::int64_t>(cols, 1)) return Storage{false, ld};
  }
  if (rows == 1 || s_row == 1) {
    const std::int64_t ld = cols == 1 ? rows : s_col;
    if (ld >= std::max<std::int64_t>(rows, 1)) return Storage{true, ld};
  }
  return std::nullopt;
}

// A run of index dims that walk A and C as one: extent and the strides of its unit step.
struct Group {
  std::int64_t extent = 1, a = 0, c = 0;
  std::vector<std::size_t> dims;
};

// Merges the m dims (in index order) into groups whose strides nest; returns the largest.
Group largest_m_group(const Range& index, const std::vector<std::size_t>& m_dims,
                      const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& c) {
  std::vector<Group> groups;
  for (std::size_t j : m_dims) {
    const std::int64_t e = index.extent(j);
    if (!groups.empty() && groups.back().a == a[j] * e && groups.back().c == c[j] * e) {
      Group& g = groups.back();
      g.extent *= e;
      g.a = a[j];
      g.c = c[j];
      g.dims.push_back(j);
    } else {
      groups.push_back(Group{e, a[j], c[j], {j}});
    }
  }
  if (groups.empty()) return Group{};
  return *std::max_element(groups.begin(), groups.end(),
                           [](const Group& x, const Group& y) { return x.extent < y.extent; });
}

// Orients the plan's GEMM: C row-major (else the transposed problem), A and B as stored.
template <typename T>
bool orient(ContractionPlan<T>& p) {
  std::optional<Storage> c = storage(p.m, p.n, p.c_m, p.c_n);
  p.swapped = !c || c->trans;
  if (p.swapped) {
    c = storage(p.n, p.m, p.c_n, p.c_m);
    if (!c || c->trans) return false;
  }
  p.args = GemmArgs{.m = p.swapped ? p.n : p.m, .n = p.swapped ? p.m : p.n, .k = p.k};
  p.args.ldc = c->ld;
  if (p.k == 0) return true;  // no product: C = 0
  const std::optional<Storage> a =
      p.swapped ? storage(p.n, p.k, p.b_n, p.b_k) : storage(p.m, p.k, p.a_m, p.a_k);
  const std::optional<Storage> b =
      p.swapped ? storage(p.k, p.m, p.a_k, p.a_m) : storage(p.k, p.n, p.b_k, p.b_n);
  if (!a || !b) return false;
  p.args.trans_a = a->trans;
  p.args.lda = a->ld;
  p.args.trans_b = b->trans;
  p.args.ldb = b->ld;
  return fits_blas(p.args);
}

}  // namespace

template <typename T>
std::optional<ContractionPlan<T>> plan_contraction(const Range& index, const InputPort& a,
                                                   const InputPort& b, const OutputPort& c) {
  const std::optional<Line> la = cell_line(a), lb = cell_line(b);
  if (!has_unit_cells(*c.ipf) || !la || !lb || la->extent != lb->extent) return std::nullopt;
  const Strided<const T> as = strided<const T>(a, index), bs = strided<const T>(b, index);
  const Strided<T> cs = strided<T>(c, index);
  ContractionPlan<T> p{.a = as.base, .b = bs.base, .c = cs.base};
  p.spread.assign(index.rank(), false);
  std::vector<bool> not_batch(index.rank(), true);
  std::vector<std::size_t> m_dims;
  int k_dim = -1;
  for (std::size_t j = 0; j < index.rank(); ++j) {
    if (index.extent(j) == 1) continue;
    p.spread[j] = true;
    if (cs.coef[j] == 0) {
      if (k_dim >= 0) return std::nullopt;  // two reductions
      k_dim = static_cast<int>(j);
    } else if (as.coef[j] != 0 && bs.coef[j] == 0) {
      m_dims.push_back(j);
    } else if (as.coef[j] == 0 && bs.coef[j] != 0) {
      if (p.n_dim < 0 || index.extent(j) > p.n) {
        if (p.n_dim >= 0) not_batch[static_cast<std::size_t>(p.n_dim)] = false;
        p.n_dim = static_cast<int>(j);
        p.n = index.extent(j);
      } else {
        not_batch[j] = false;
      }
    } else {
      not_batch[j] = false;
    }
  }
  if (k_dim >= 0) {
    if (la->extent != 1) return std::nullopt;  // a reduction over index points and windows
    p.k = index.extent(static_cast<std::size_t>(k_dim));
    p.a_k = as.coef[static_cast<std::size_t>(k_dim)];
    p.b_k = bs.coef[static_cast<std::size_t>(k_dim)];
  } else {
    p.k = la->extent;
    p.a_k = la->stride;
    p.b_k = lb->stride;
  }
  if (p.n_dim >= 0) {
    p.b_n = bs.coef[static_cast<std::size_t>(p.n_dim)];
    p.c_n = cs.coef[static_cast<std::size_t>(p.n_dim)];
  }
  const Group g = largest_m_group(index, m_dims, as.coef, cs.coef);
  p.m = g.extent;
  p.a_m = g.a;
  p.c_m = g.c;
  for (std::size_t j : m_dims) {
    not_batch[j] = std::find(g.dims.begin(), g.dims.end(), j) != g.dims.end();
  }
  p.batch = make_nest<3>(index, {&as.coef, &bs.coef, &cs.coef}, not_batch);
  if (!orient(p)) return std::nullopt;
  return p;
}

template <typename T>
std::optional<EpilogueStep<T>> bias_step(const ContractionPlan<T>& plan, const Range& index,
                                         const InputPort& port) {
  if (!has_unit_cells(*port.ipf)) return std::nullopt;
  const Strided<const T> s = strided<const T>(port, index);
  for (std::size_t j = 0; j < index.rank(); ++j) {
    if (plan.spread[j] && static_cast<int>(j) != plan.n_dim && s.coef[j] != 0) return std::nullopt;
  }
  const std::int64_t step = plan.n_dim >= 0 ? s.coef[static_cast<std::size_t>(plan.n_dim)] : 0;
  return EpilogueStep<T>{.bias = s.base, .step = step};
}

// The epilogue steps on rows [0, m) of one C block: every step on a group of rows before the
// next group, a group as many rows as fill ~16 KiB (one row when rows are long or not
// contiguous), so the group stays in L1 across the steps while short rows (a 32-wide linear) are
// not one call per step per row. Each element sees the steps in order, so the values do not
// depend on the grouping.
template <typename T>
void apply_epilogue(const ContractionPlan<T>& p, T* c, std::span<const EpilogueStep<T>> steps) {
  if (steps.empty()) return;
  constexpr std::int64_t kGroupElements = 16384 / static_cast<std::int64_t>(sizeof(T));
  const bool dense = p.c_n == 1 && p.c_m == p.n;
  const std::int64_t group =
      dense ? std::max<std::int64_t>(1, kGroupElements / std::max<std::int64_t>(1, p.n)) : 1;
  for (std::int64_t g0 = 0; g0 < p.m; g0 += group) {
    const std::int64_t g1 = std::min(p.m, g0 + group);
    for (const EpilogueStep<T>& s : steps) {
      if (s.bias != nullptr) {
        for (std::int64_t r = g0; r < g1; ++r)
          add_in_place(c + r * p.c_m, p.c_n, s.bias, s.step, p.n);
      } else if (dense) {
        unary_in_place(s.op, c + g0 * p.c_m, 1, (g1 - g0) * p.n);
      } else {
        for (std::int64_t r = g0; r < g1; ++r) unary_in_place(s.op, c + r * p.c_m, p.c_n, p.n);
      }
    }
  }
}

namespace {

// How many leading epilogue steps oneDNN's matmul primitive can apply as post-ops, computing
// them exactly as the epilogue would: a contiguous bias along n, then a ReLU (float; C in its
// row-major orientation). 0: none. The steps after them run as the epilogue pass. Taking a
// prefix, not all-or-nothing, keeps a fused linear ⇒ X the unfused linear's own call (its bias
// inside the primitive) for every X but relu.
template <typename T>
std::size_t post_op_prefix(const ContractionPlan<T>& p, const std::vector<EpilogueStep<T>>& steps) {
  if constexpr (!std::is_same_v<T, float>) {
    return 0;
  } else {
    if (steps.empty() || p.k == 0 || p.swapped || p.c_n != 1) return 0;
    std::size_t taken = 0;
    if (steps[0].bias != nullptr) {
      if (steps[0].step != 1 && p.n != 1) return 0;
      taken = 1;
    }
    if (taken < steps.size() && steps[taken].bias == nullptr && steps[taken].op == UnaryOp::kRelu) {
      ++taken;
    }
    return taken;
  }
}

// One batch point: C = A·B in one GEMM call (the same call whatever follows, so a fused chain
// calls the GEMM on the same blocks as its unfused producer), with the post-op prefix of the
// epilogue inside oneDNN's matmul primitive when it applies, then the rest of the epilogue.
template <typename T>
void contract_point(const ContractionPlan<T>& p, const T* a, const T* b, T* c,
                    const std::vector<EpilogueStep<T>>& steps) {
  std::size_t done = post_op_prefix(p, steps);
  if constexpr (std::is_same_v<T, float>) {
    if (done > 0) {
      const bool has_bias = steps[0].bias != nullptr;
      const bool relu = done == (has_bias ? 2U : 1U);
      if (!gemm_with_post_ops(p.args, a, b, has_bias ? steps[0].bias : nullptr, relu, c)) done = 0;
    }
  }
  if (done == 0) {
    if (p.k == 0) {
      for (std::int64_t r = 0; r < p.m; ++r) {
        for (std::int64_t j = 0; j < p.n; ++j) c[r * p.c_m + j * p.c_n] = T{0};
      }
    } else if (p.swapped) {
      gemm(p.args, b, a, T{0}, c);
    } else {
      gemm(p.args, a, b, T{0}, c);
    }
  }
  apply_epilogue(p, c, std::span<const EpilogueStep<T>>(steps).subspan(done));
}

}  // namespace

template <typename T>
void run_contraction(const ContractionPlan<T>& p, const std::vector<EpilogueStep<T>>& steps) {
  for_each_run(p.batch, [&](const auto& at, std::int64_t len, const auto& step) {
    for (std::int64_t i = 0; i < len; ++i) {
      contract_point(p, p.a + at[0] + i * step[0], p.b + at[1] + i * step[1],
                     p.c + at[2] + i * step[2], steps);
    }
  });
}

template std::optional<ContractionPlan<float>> plan_contraction(const Range&, const InputPort&,
                                                                const InputPort&,
                                                                const OutputPort&);
template std::optional<ContractionPlan<double>> plan_contraction(const Range&, const InputPort&,
                                                                 const InputPort&,
                                                                 const OutputPort&);
template std::optional<EpilogueStep<float>> bias_step(const ContractionPlan<float>&, const Range&,
                                                      const InputPort&);
template std::optional<EpilogueStep<double>> bias_step(const ContractionPlan<double>&, const Range&,
                                                       const InputPort&);
template std::optional<ContractionPlan<BFloat16>> plan_contraction(const Range&, const InputPort&,
                                                                   const InputPort&,
                                                                   const OutputPort&);
template std::optional<ContractionPlan<Float16>> plan_contraction(const Range&, const InputPort&,
                                                                  const InputPort&,
                                                                  const OutputPort&);
template std::optional<EpilogueStep<BFloat16>> bias_step(const ContractionPlan<BFloat16>&,
                                                         const Range&, const InputPort&);
template std::optional<EpilogueStep<Float16>> bias_step(const ContractionPlan<Float16>&,
                                                        const Range&, const InputPort&);
template void apply_epilogue(const ContractionPlan<float>&, float*,
                             std::span<const EpilogueStep<float>>);
template void run_contraction(const ContractionPlan<float>&,
                              const std::vector<EpilogueStep<float>>&);
template void run_contraction(const ContractionPlan<double>&,
                              const std::vector<EpilogueStep<double>>&);

// ---- kernels ----------------------------------------------------------------------------------

namespace {

// linear (x, w, optional bias) or matmul (a, b): the fast path when the call is a float
// contraction with a plan; false sends it to the reference.
template <typename T>
bool contract(const KernelCall& call, std::string_view lhs, std::string_view rhs, bool with_bias) {
  const InputPort* a = call.find_input(lhs);
  const InputPort* b = call.find_input(rhs);
  const InputPort* bias = with_bias ? call.find_input("bias") : nullptr;
  auto results = call.outputs.list("result");
  const std::size_t inputs = 2 + (bias != nullptr ? 1 : 0);
  if (a == nullptr || b == nullptr || results.size() != 1 || call.outputs.size() != 1 ||
      call.inputs.size() != inputs) {
    return false;
  }
  const std::optional<ContractionPlan<T>> plan =
      plan_contraction<T>(call.index, *a, *b, results[0]);
  if (!plan) return false;
  std::vector<EpilogueStep<T>> steps;
  if (bias != nullptr) {
    const std::optional<EpilogueStep<T>> step = bias_step(*plan, call.index, *bias);
    if (!step) return false;
    steps.push_back(*step);
  }
  if constexpr (is_half_float_v<T>) {
    return run_half_contraction(*plan, steps);
  } else {
    run_contraction(*plan, steps);
    return true;
  }
}

// The f32/f64 kernel; `widened` runs it on float32 copies of a 16-bit call (the fallback).
void contraction_kernel(const KernelCall& call, std::string_view lhs, std::string_view rhs,
                        bool with_bias, const KernelFn& widened) {
  const std::optional<DType> dtype = uniform_dtype(call);
  bool done = false;
  if (dtype && !call.index.is_empty()) {
    if (*dtype == DType::kFloat32) done = contract<float>(call, lhs, rhs, with_bias);
    if (*dtype == DType::kFloat64) done = contract<double>(call, lhs, rhs, with_bias);
    if (*dtype == DType::kBFloat16) done = contract<BFloat16>(call, lhs, rhs, with_bias);
    if (*dtype == DType::kFloat16) done = contract<Float16>(call, lhs, rhs, with_bias);
  }
  if (done) {
    count_fast();
  } else if (has_half_float_port(call)) {
    widened(call);  // float32 copies: the contraction above, or the reference
  } else {
    run_reference(call);
  }
}

void linear_kernel(const KernelCall& call) {
  static const KernelFn widened = widen_half_floats(&linear_kernel);
  contraction_kernel(call, "x", "w", true, widened);
}

void matmul_kernel(const KernelCall& call) {
  static const KernelFn widened = widen_half_floats(&matmul_kernel);
  contraction_kernel(call, "a", "b", false, widened);
}

}  // namespace

void register_fast_contraction(ExecutableKernels& registry) {
  // Native: a 16-bit call runs oneDNN's bf16/f16 matmul where the CPU has it, else it widens.
  registry.add_native("linear", &linear_kernel);
  registry.add_native("linear_nobias", &linear_kernel);  // linear's GEMM path, no bias to add
  registry.add_native("matmul", &matmul_kernel);
}

}  // namespace tapestry::runtime::fast
