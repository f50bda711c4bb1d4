// One operation's float64 evaluation and error rule (error_rules.h; the table is in oracle.h).
#include "error_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <utility>

#include <oneapi/tbb/parallel_reduce.h>

#include "kernels/fast/elementwise_vector.h"
#include "operation_blocks.h"
#include "run_support.h"
#include "tapestry/metakernel/kernel_facts.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/kernel.h"

namespace tapestry::runtime::detail {

namespace {

using metakernel::ErrorRule;

// The rule an operation follows: its kernel's facts' error_rule (metakernel/kernel_facts.h),
// `monoid` resolved by the operation's reduction monoid (sum, max, reduce: sum → additive,
// prod → product, max/min → selection; none → fallback); a kernel without facts: kFallback.
ErrorRule rule_of(std::string_view kernel, std::optional<ir::Monoid> monoid) {
  const ErrorRule rule = metakernel::kernel_facts(kernel).error_rule;
  if (rule != ErrorRule::kMonoid) return rule;
  if (!monoid) return ErrorRule::kFallback;
  if (*monoid == ir::Monoid::kSum) return ErrorRule::kAdditive;
  if (*monoid == ir::Monoid::kProd) return ErrorRule::kProduct;
  return ErrorRule::kSelection;
}

// Whether the kernel gives exact results on small integers (every value it forms is a sum,
// product, selection or copy of integers): its facts' `exact`, never for a product of many terms
// or an unknown kernel.
bool is_exact_kernel(std::string_view kernel, ErrorRule rule) {
  return metakernel::kernel_facts(kernel).exact && rule != ErrorRule::kProduct &&
         rule != ErrorRule::kFallback;
}

template <typename F>
Buffer map_values(const Buffer& in, F f) {
  Buffer out(DType::kFloat64, in.range(), Buffer::Uninitialized{});
  const std::span<const double> from = in.values<double>();
  const std::span<double> to = out.values<double>();
  for_cells(from.size(), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) to[i] = f(from[i]);
  });
  return out;
}

// Whether pred holds for some cell (chunks in parallel; a bool is the same in any order).
template <typename F>
bool any_cell(std::size_t n, F pred) {
  return tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, n, kCellChunk), false,
      [&](const tbb::blocked_range<std::size_t>& r, bool found) {
        for (std::size_t i = r.begin(); i < r.end() && !found; ++i) found = pred(i);
        return found;
      },
      [](bool a, bool b) { return a || b; }, tbb::simple_partitioner());
}

Buffer abs_of(const Buffer& b) {
  return map_values(b, [](double v) { return std::abs(v); });
}
Buffer square_of(const Buffer& b) {
  return map_values(b, [](double v) { return v * v; });
}

// ---- certain cells ------------------------------------------------------------------------
// A cell is *exact* when σ = D = 0: a graph input (a mask's −inf included), exp(−inf), a masked
// softmax weight. A cell whose float64 value is ±inf or NaN is a class, not a number: σ = D = 0
// says every computation of it gives that same ±inf or NaN (oracle.h), ∞ that the class is not
// known. The rules below derive both from the cells the output reads.

bool is_exact(double sigma, double bound) {
  return sigma == 0 && bound == 0;
}
// σ finite: the cell's error is bounded — its bar min(λσ, D) is finite (false for NaN). D = ∞
// alone is a worst case that overflowed (D squares through a variance's 4·Dmax² and through
// q·kᵀ's Dq·Dk: ViT-B/16's LayerNorms reach 1e308 by the third layer); the bar is then λσ,
// exactly as for a D of 1e300, which no rule distinguishes from ∞ (docs/runtime.md, "What
// verifying costs": ViT-B/16).
bool is_known(double sigma, double bound) {
  return std::isfinite(sigma) && !std::isnan(bound);
}
// σ and D of a cell whose float64 value is ±inf or NaN.
double class_scale(bool certain) {
  return certain ? 0.0 : INFINITY;
}
// A finite cell whose computed value may have the other sign or be 0: its bar reaches 0. Times
// an infinity, such a factor may give ±inf or NaN.
bool may_cross_zero(double value, double bar) {
  return std::isfinite(value) && bar > 0 && !(bar < std::abs(value));
}

// 1 where `pred(value, σ, D)` holds, else 0, cell by cell (same range): a buffer the operation's
// own kernel can count or combine.
Buffer indicator(const Buffer& value, const Buffer& sigma, const Buffer& bound,
                 const std::function<bool(double, double, double)>& pred) {
  Buffer out(DType::kFloat64, value.range(), Buffer::Uninitialized{});
  const std::span<const double> v = value.values<double>(), s = sigma.values<double>(),
                                d = bound.values<double>();
  const std::span<double> o = out.values<double>();
  for_cells(o.size(), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) o[i] = pred(v[i], s[i], d[i]) ? 1.0 : 0.0;
  });
  return out;
}

// A cell that may be nonzero in a float computation: nonzero in float64, or not exact.
bool may_be_nonzero(double value, double sigma, double bound) {
  return value != 0 || !is_exact(sigma, bound);
}

bool has_exact_zero(const Buffer& value, const Buffer& sigma, const Buffer& bound) {
  const std::span<const double> v = value.values<double>(), s = sigma.values<double>(),
                                d = bound.values<double>();
  return any_cell(v.size(), [&](std::size_t i) { return !may_be_nonzero(v[i], s[i], d[i]); });
}

bool any_non_finite(const Buffer& b) {
  const std::span<const double> v = b.values<double>();
  return any_cell(v.size(), [&](std::size_t i) { return !std::isfinite(v[i]); });
}

// The largest cell, at least 0 (NaN is skipped): the same in any order, so chunks in parallel.
double max_of(const Buffer& b) {
  const std::span<const double> v = b.values<double>();
  return tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, v.size(), kCellChunk), 0.0,
      [&](const tbb::blocked_range<std::size_t>& r, double m) {
        for (std::size_t i = r.begin(); i < r.end(); ++i) m = std::max(m, v[i]);
        return m;
      },
      [](double x, double y) { return std::max(x, y); }, tbb::simple_partitioner());
}

// The largest |cell|, at least 0 (NaN is skipped): max_of(abs_of(b)) without the copy.
double max_abs_of(const Buffer& b) {
  const std::span<const double> v = b.values<double>();
  return tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, v.size(), kCellChunk), 0.0,
      [&](const tbb::blocked_range<std::size_t>& r, double m) {
        for (std::size_t i = r.begin(); i < r.end(); ++i) m = std::max(m, std::abs(v[i]));
        return m;
      },
      [](double x, double y) { return std::max(x, y); }, tbb::simple_partitioner());
}

// The walk of a rule with one cell of each operand per index point: rows along the trailing
// index dims that every operand steps through evenly (for each, step(d) = step(d + 1)·extent
// (d + 1); the last dim always) merged into one — the whole index space when every operand is
// laid out in index order — cut into segments of at most kCellChunk cells that run in parallel.
// Cell j of a row starting at index point p is each operand's cell(p) + j·step(last). A row of
// 56 cells (an NCHW image's) no longer pays for locating every operand's cell, checks and all.
//   index [8, 256, 56, 56], every operand contiguous   one row of 6,422,528 cells, 392 segments
//   index [4, 3], an operand broadcast along dim 0      4 rows of 3
struct RowWalk {
  Range rows;               // the index space with the merged dims at their first point
  std::int64_t length = 0;  // cells in a row
  std::size_t per_row = 0;  // segments in a row
  std::size_t last = 0;     // the index's last dim: the operands' steps along a row
  std::size_t count = 0;    // segments in all

  struct Segment {
    Point row;  // the row's first index point
    std::int64_t begin = 0, end = 0;
  };
  [[nodiscard]] Segment segment(std::size_t q) const {
    const std::int64_t r = static_cast<std::int64_t>(q / per_row);
    const std::int64_t begin = static_cast<std::int64_t>(q % per_row * kCellChunk);
    return {unravel(rows, r), begin,
            std::min(length, begin + static_cast<std::int64_t>(kCellChunk))};
  }
};

// `evenly(d, extent)`: whether every operand's step(d) is its step(d + 1) times `extent`, the
// extent of dim d + 1 (dims d + 1 and on then form one row with d).
template <typename Evenly>
RowWalk row_walk(const Range& index, const Evenly& evenly) {
  RowWalk w;
  const std::size_t rank = index.rank();
  if (index.is_empty()) return w;
  if (rank == 0) {
    w.rows = index;
    w.length = 1;
    w.per_row = 1;
    w.count = 1;
    return w;
  }
  w.last = rank - 1;
  std::size_t first = rank - 1;  // the first merged dim
  while (first > 0 && evenly(first - 1, index.extent(first))) --first;
  w.rows = index;
  w.length = 1;
  for (std::size_t d = first; d < rank; ++d) {
    w.length *= index.extent(d);
    w.rows = w.rows.with_dim(d, index.start()[d], index.start()[d] + 1);
  }
  const auto chunk = static_cast<std::int64_t>(kCellChunk);
  w.per_row = static_cast<std::size_t>((w.length + chunk - 1) / chunk);
  w.count = static_cast<std::size_t>(w.rows.size()) * w.per_row;
  return w;
}

// The two scales of n roundings of relative size ≤ u on terms of magnitude A (Σ|terms|):
//   proxy  √n·u·A      Higham & Mary: the roundings are independent, mean zero and bounded,
//                      so their sum is within λ·√n·u·A with probability ≥ 1 − 2·exp(−λ²/2)
//   bound  γn·A        Higham §3.1, γn = n·u / (1 − n·u): the worst case, in any order
// Both add n·tiny: each rounding may flush a subnormal to zero.
struct Rounding {
  double proxy = 0, bound = 0;
};
Rounding rounding(double n, double u, double tiny, double a) {
  if (n <= 0) return {};
  return {std::sqrt(n) * u * a + n * tiny, n * u / (1 - n * u) * a + n * tiny};
}

// √(a² + b²), never below the exact value: std::hypot's guard against overflow costs ~10× the
// plain formula, which suffices below 2^500 (its two roundings and the square root's are
// covered by the factor).
inline double hypot_up(double a, double b) {
  if (std::abs(a) < 0x1p500 && std::abs(b) < 0x1p500)
    return std::sqrt(a * a + b * b) * (1 + 0x1p-50);
  return std::hypot(a, b) * (1 + 0x1p-52);
}

double closest_to_zero(double lo, double hi) {
  return lo > 0 ? lo : (hi < 0 ? hi : 0.0);
}

double normal_pdf(double t) {
  return std::exp(-0.5 * t * t) / std::sqrt(2 * std::numbers::pi);
}
double normal_cdf(double t) {
  return 0.5 * std::erfc(-t / std::numbers::sqrt2);
}

// The largest |f′| over [x − w, x + w] for the smooth unary kernels.
double max_slope(std::string_view kernel, double x, double w) {
  if (kernel == "exp") return std::exp(x + w);
  if (kernel == "tanh") {
    const double t = std::tanh(closest_to_zero(x - w, x + w));
    return 1 - t * t;
  }
  if (kernel == "sigmoid") {
    const double s = 1 / (1 + std::exp(-closest_to_zero(x - w, x + w)));
    return s * (1 - s);
  }
  if (kernel == "sqrt") {
    const double lo = x - w;  // f′ = 1 / (2√t) is largest at the interval's low end
    return lo > 0 ? 0.5 / std::sqrt(lo) : INFINITY;
  }
  if (kernel == "log") {
    const double lo = x - w;  // f′ = 1 / t, likewise
    return lo > 0 ? 1 / lo : INFINITY;
  }
  // gelu: f′(t) = Φ(t) + t·φ(t) lies in [−0.17, 1.13] (its maximum 1.1289 at t = √2), and
  // |f″(t)| = |(2 − t²)·φ(t)| ≤ 2·φ(0) < 0.8, so over the interval |f′| ≤ |f′(x)| + 0.8·w
  // (+ 2^−50 for f′(x)'s float64 roundings): one sample, a bound everywhere.
  return std::min(1.13, std::abs(normal_cdf(x) + x * normal_pdf(x)) + 0.8 * w + 0x1p-50);
}

// ---- float32 sums of nonnegative terms ---------------------------------------------------
// bilinear's magnitudes, σ² and D terms and live-term counts are sums of nonnegative products.
// Run as a float32 GEMM on operands rounded up (x̃ ≥ x, w̃ ≥ w, each the float64 number the
// float64 run would read, rounded up), any summation order gives Ŝ ≥ (1 − γ24(n))·Σx̃w̃ ≥
// (1 − γ24(n))·Σxw while nothing underflows or overflows (Higham §3.1, nonnegative terms), and
// the float64 GEMM gives at most (1 + γ53(n))·Σxw; so Ŝ·(1 + γ53(n))/(1 − γ24(n)), rounded up,
// is ≥ the float64 number: the bars only grow, by ~n·2^−24 relative. Sums of integers that stay
// below 2^24 (counts of live terms, exact mode's small integers) are exact in both: no factor.

// The smallest float ≥ d (d ≥ 0; +inf above FLT_MAX, NaN stays NaN). Below d, f is a finite
// float ≥ 0 (d > f ≥ 0 and d ≤ FLT_MAX rounds to at most FLT_MAX), so the next float up is the
// next bit pattern.
[[gnu::always_inline]] inline float round_up(double d) {
  const auto f = static_cast<float>(d);
  return static_cast<double>(f) < d ? std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) + 1U)
                                    : f;
}

// Whether float32 sums may stand in for float64 ones: a user who set oneDNN's default
// floating-point math mode to a lower precision (bf16, tf32 …) gets float64 throughout.
bool strict_float32() {
  static const bool strict = [] {
    const char* mode = std::getenv("ONEDNN_DEFAULT_FPMATH_MODE");
    return mode == nullptr || std::string_view(mode) == "STRICT" ||
           std::string_view(mode) == "strict" || std::string_view(mode).empty();
  }();
  return strict;
}

}  // namespace

SharedZeros::SharedZeros(std::int64_t cells)
    : data_(static_cast<double*>(
          std::calloc(static_cast<std::size_t>(std::max<std::int64_t>(cells, 1)), sizeof(double)))),
      cells_(cells) {
  if (data_ == nullptr) throw std::bad_alloc();
}

SharedZeros::~SharedZeros() {
  std::free(data_);  // NOLINT(cppcoreguidelines-no-malloc): calloc's zero pages are the point
}

Buffer SharedZeros::view(const Range& range, DType dtype) const {
  TAPESTRY_ASSERT(range.size() <= cells_, "a SharedZeros view larger than the region");
  TAPESTRY_ASSERT(dtype == DType::kFloat64 || dtype == DType::kFloat32,
                  "a SharedZeros view is float64 or float32");
  return Buffer::borrow(dtype, range, reinterpret_cast<std::byte*>(data_));
}

bool SharedZeros::holds(const Buffer& b) const {
  return b.is_borrowed() && b.bytes() == reinterpret_cast<const std::byte*>(data_);
}

// The unit roundoff of storing a float32 result in a 16-bit dtype (or a float64 one in float32,
// a cast), and half the spacing of its subnormals (the absolute error of rounding a value below
// its smallest normal).
struct StorageRoundoff {
  double u;
  double tiny;
};
StorageRoundoff storage_roundoff(DType dtype) {
  if (dtype == DType::kFloat32) return {0x1p-24, 0x1p-150};
  return dtype == DType::kBFloat16 ? StorageRoundoff{0x1p-8, 0x1p-134}
                                   : StorageRoundoff{0x1p-11, 0x1p-25};
}

// Whether a move (a copy; cast when the dtypes differ) from `from` into `to` can round: when
// some value of `from` is not one of `to`'s. Widening (bf16/f16 → f32 → f64) and copies are
// exact; bf16 ↔ f16 round both ways (f16 has fewer exponent bits, bf16 fewer fraction bits).
bool move_rounds(DType from, DType to) {
  if (from == to || to == DType::kFloat64) return false;
  if (to == DType::kFloat32) return from == DType::kFloat64;
  return ir::is_float(from);
}

// A bf16/f16 output is the float32 result rounded once: |round(y) − y| ≤ us·|y| + tiny, and
// |y| ≤ |v| + D (v the float64 value, D the bound so far). σ adds it as an independent term, D
// as a worst case.
void add_storage_rounding(DType dtype, RuleResult& result) {
  const StorageRoundoff s = storage_roundoff(dtype);
  for (std::size_t o = 0; o < result.sigmas.size(); ++o) {
    const std::span<const double> v = result.values[o].values<double>();
    const std::span<double> sigma = result.sigmas[o].values<double>();
    const std::span<double> bound = result.bounds[o].values<double>();
    for_cells(v.size(), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) {
        // ±inf and NaN are stored exactly: a certain cell stays so.
        if (!std::isfinite(v[i])) continue;
        const double r = s.u * (std::abs(v[i]) + bound[i]) + s.tiny;
        sigma[i] = std::hypot(sigma[i], s.u * std::abs(v[i]) + s.tiny);
        bound[i] += r;
      }
    });
  }
}

// Everything one rule works on.
struct OperationEval::Ctx {
  const BufferMap& value;
  const BufferMap& sigma;
  const ir::OperationView op;
  const SpareBuffers& spare;
  std::vector<const Buffer*> in_value;             // per input entry
  std::vector<const Buffer*> in_sigma;             // per input entry (float inputs)
  std::vector<const Buffer*> in_bound;             // per input entry (float inputs)
  std::vector<ir::SelectionMap::Entry> ins, outs;  // the selections, in order
  double u = 0;                                    // unit roundoff of the computation's dtype
  double tiny = 0;                                 // its smallest normal number
  RuleResult result;
  // Buffers made from the inputs while the rule runs (CellMap), by kind and entry.
  std::map<std::pair<std::string, std::size_t>, Buffer> made;
  // The float32 transforms of run_single, by kind and entry (rounded up).
  std::map<std::pair<std::string, std::size_t>, Single> singles;
  std::size_t flags = 0;  // flag() CellMaps made so far (each its own kind)

  // The buffer `make()` gives for (kind, entry i), made once.
  template <typename F>
  const Buffer& memo(const std::string& kind, std::size_t i, F make) {
    auto it = made.find({kind, i});
    if (it == made.end()) it = made.emplace(std::pair{kind, i}, make()).first;
    return it->second;
  }

  // The input entry named `name` (position 0), or -1.
  [[nodiscard]] int entry(std::string_view name) const {
    for (std::size_t i = 0; i < ins.size(); ++i) {
      if (ins[i].name == name && ins[i].position == 0) return static_cast<int>(i);
    }
    return -1;
  }
};

OperationEval::OperationEval(const ir::Graph& graph, ir::OperationId op,
                             const ExecutableKernels& kernels, double lambda,
                             const SharedZeros* zeros, SingleSums single_sums,
                             double product_roundoff, ChainSingles* chain)
    : graph_(graph),
      op_(op),
      kernels_(kernels),
      kernel_(kernels.lookup(graph.operation(op).kernel(), graph.display_name(op))),
      lambda_(lambda),
      zeros_(zeros),
      single_sums_(strict_float32() ? single_sums : SingleSums::kNever),
      product_roundoff_(product_roundoff),
      chain_(chain) {
  const ir::OperationView view = graph.operation(op);
  const Range index = *view.ipf_index();
  double window = 1;
  for (const auto& e : view.ipf_signature()->inputs.entries()) {
    double cells = 1;
    for (std::int64_t s : e.value.shape()) cells *= static_cast<double>(s);
    window = std::max(window, cells);
  }
  terms_ = window;
  const auto& names = view.body().index_names;
  for (const ir::Reduction& r : view.body().reductions) {
    auto it = std::find(names.begin(), names.end(), r.dim);
    if (it != names.end())
      terms_ *= static_cast<double>(index.shape()[static_cast<std::size_t>(it - names.begin())]);
  }
}

std::vector<Buffer> OperationEval::call(KernelFn kernel, const std::vector<const Buffer*>& inputs,
                                        DType dtype, const nlohmann::json* params) const {
  const ir::OperationView op = graph_.operation(op_);
  const ir::IpfSignature& signature = *op.ipf_signature();
  const Range index = *op.ipf_index();
  std::vector<Buffer> outputs;
  for (const auto& e : op.outputs().entries())
    outputs.emplace_back(dtype, graph_.tensor(e.value.tensor).range());
  KernelCall kc{.kernel = op.kernel(),
                .operation = graph_.node(op_).display_name(),
                .index = index,
                .params = params != nullptr ? params : &op.params(),
                .index_names = op.body().index_names,
                .reductions = op.body().reductions};
  std::size_t i = 0;
  for (const auto& e : op.inputs().entries()) {
    const zspace::IndexProjection& ipf = checked_ipf(e, signature.inputs, index);
    kc.inputs.append(e.name, InputPort{inputs[i++]->view(e.value.range), &ipf});
  }
  i = 0;
  for (const auto& e : op.outputs().entries()) {
    const zspace::IndexProjection& ipf = checked_ipf(e, signature.outputs, index);
    kc.outputs.append(e.name, OutputPort{outputs[i++].view(e.value.range), &ipf});
  }
  call_in_blocks(kernel, kc);
  return outputs;
}

RuleResult OperationEval::run(const BufferMap& value, const BufferMap& sigma,
                              const BufferMap& bound, const SpareBuffers& spare) const {
  const ir::OperationView op = graph_.operation(op_);
  Ctx c{.value = value, .sigma = sigma, .op = op, .spare = spare};
  DType dtype = DType::kFloat64;
  for (const auto& e : op.inputs().entries()) {
    c.ins.push_back(e);
    c.in_value.push_back(&value.at(e.value.tensor));
    auto s = sigma.find(e.value.tensor);
    c.in_sigma.push_back(s == sigma.end() ? nullptr : &s->second);
    auto b = bound.find(e.value.tensor);
    c.in_bound.push_back(b == bound.end() ? nullptr : &b->second);
  }
  for (const auto& e : op.outputs().entries()) {
    c.outs.push_back(e);
    c.result.outputs.push_back(e.value.tensor);
    dtype = tensor_dtype(graph_, e.value.tensor);
  }
  const bool floats = ir::is_float(dtype);
  // bf16 and f16 compute in float32 (executable_kernels.h): float32's roundoff inside the
  // kernel, then one storage rounding of the output (add_storage_rounding).
  const bool single = dtype == DType::kFloat32 || is_half_float(dtype);
  c.u = single ? 0x1p-24 : 0x1p-53;
  c.tiny = single ? FLT_MIN : DBL_MIN;
  c.result.values = call(kernel_, c.in_value, floats ? DType::kFloat64 : dtype);

  std::optional<ir::Monoid> monoid;
  if (!op.body().reductions.empty()) monoid = op.body().reductions.front().monoid;
  const ErrorRule rule = rule_of(op.kernel(), monoid);
  c.result.exact = is_exact_kernel(op.kernel(), rule);
  if (rule == ErrorRule::kIndex && !c.in_sigma.empty() && c.in_sigma[0] != nullptr) {
    index(c);  // an integer result (a position) of float values: its bar
    return std::move(c.result);
  }
  if (!floats) return std::move(c.result);  // integers: exact, no sigma
  std::vector<Buffer> exact_integers;       // σ = D = 0 of integer inputs, for the worst-case rule
  // where's condition may be an integer mask choosing floats: exact, as the fallback's integers.
  if (rule == ErrorRule::kFallback || rule == ErrorRule::kChoice)
    exact_integers = exact_integer_inputs(c);
  // Fused stages round each bf16/f16 intermediate: the worst case counts in 16-bit roundoff.
  if (rule == ErrorRule::kFallback && is_half_float(dtype)) c.u = storage_roundoff(dtype).u;
  for (std::size_t i = 0; i < c.in_sigma.size(); ++i) {
    // A move's integer inputs (gather's indices) are exact and only say which cells it copies.
    if (rule == ErrorRule::kMove && !ir::is_float(c.in_value[i]->dtype())) continue;
    if (c.in_sigma[i] == nullptr || c.in_bound[i] == nullptr)
      throw Error(
          fmt::format("operation '{}' mixes integer and float tensors", graph_.display_name(op_)));
  }
  switch (rule) {
    case ErrorRule::kBilinear:
      bilinear(c);
      break;
    case ErrorRule::kAdditive:
      additive(c, op.kernel() == "sub" ? "add" : op.kernel());
      break;
    case ErrorRule::kProduct:
      product(c);
      break;
    case ErrorRule::kSelection:
      selection(c, monoid == ir::Monoid::kMin);
      break;
    case ErrorRule::kElementwise:
      elementwise(c);
      break;
    case ErrorRule::kSoftmax:
      softmax(c);
      break;
    case ErrorRule::kAverage:
      average(c);
      break;
    case ErrorRule::kVariance:
      variance(c);
      break;
    case ErrorRule::kMove:
      move(c);
      break;
    case ErrorRule::kDecision:
      decision(c);
      break;
    case ErrorRule::kChoice:
      choice(c);
      break;
    case ErrorRule::kGate:
      gate(c);
      break;
    case ErrorRule::kIndex:   // an integer result: handled above
    case ErrorRule::kMonoid:  // resolved by rule_of
    case ErrorRule::kFallback:
      fallback(c);
      break;
  }
  // A 16-bit output is stored rounded; a move stores its input's cells, rounded only when it
  // narrows them (cast f64 → f32, or into a 16-bit dtype).
  // A mask's 0/1, where's chosen cells and a gate's d_result or 0 are stored as they are (exact
  // in every dtype).
  const bool stored_rounded =
      rule == ErrorRule::kMove
          ? move_rounds(tensor_dtype(graph_, c.ins.front().value.tensor), dtype)
          : is_half_float(dtype) && rule != ErrorRule::kDecision && rule != ErrorRule::kChoice &&
                rule != ErrorRule::kGate;
  if (stored_rounded) add_storage_rounding(dtype, c.result);
  // A D of ∞ times an exact 0 (a weight, a slope, a deviation) is NaN: it is ∞ — no worst case.
  for (Buffer& d : c.result.bounds) {
    const std::span<double> dv = d.values<double>();
    for_cells(dv.size(), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i)
        if (std::isnan(dv[i])) dv[i] = INFINITY;
    });
  }
  return std::move(c.result);
}

// The bar of each cell of an input: min(λ·σ, D) (oracle.h).
Buffer OperationEval::bar_of(const Buffer& sigma, const Buffer& bound) const {
  Buffer out(DType::kFloat64, sigma.range(), Buffer::Uninitialized{});
  const std::span<const double> s = sigma.values<double>(), d = bound.values<double>();
  const std::span<double> o = out.values<double>();
  const double l = lambda_;
  for_cells(o.size(), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) o[i] = std::min(l * s[i], d[i]);
  });
  return out;
}

// bilinear's kernel runs: the kernel on one buffer per input entry — `on_w(i)` for the w entry,
// `on_x(i)` for the others (x, the bias; the bias zeroed when `zero_bias`).
std::vector<Buffer> OperationEval::run_bilinear(const Ctx& c, int w, int bias, const CellMap& on_x,
                                                const CellMap& on_w, bool zero_bias) const {
  std::optional<Buffer> zero;  // the zeroed bias
  std::vector<const Buffer*> p;
  p.reserve(c.in_value.size());
  for (std::size_t i = 0; i < c.in_value.size(); ++i) {
    const auto idx = static_cast<int>(i);
    if (idx == w) {
      p.push_back(&on_w(i));
    } else if (idx == bias && zero_bias) {
      const Range& range = c.in_value[i]->range();
      zero = zeros_ != nullptr && range.size() <= zeros_->cells() ? zeros_->view(range)
                                                                  : Buffer(DType::kFloat64, range);
      p.push_back(&*zero);
    } else {
      p.push_back(&on_x(i));
    }
  }
  return call(kernel_, p, DType::kFloat64);
}

// Input entry i as a 0/1 buffer: pred(value, σ, D) cell by cell (made once per predicate: each
// CellMap made by flag is its own kind).
OperationEval::CellMap OperationEval::flag(Ctx& c, CellPredicate pred) {
  const std::string kind = fmt::format("flag{}", c.flags++);
  return [&c, kind, pred = std::move(pred)](std::size_t i) -> const Buffer& {
    return c.memo(kind, i,
                  [&] { return indicator(*c.in_value[i], *c.in_sigma[i], *c.in_bound[i], pred); });
  };
}

bool OperationEval::all_zero(const Buffer& b) const {
  if (zeros_ != nullptr && zeros_->holds(b)) return true;
  const std::span<const double> v = b.values<double>();
  return !any_cell(v.size(), [&](std::size_t i) { return v[i] != 0; });
}

// Per output cell of a bilinear kernel whose value is ±inf or NaN: how many of its terms make
// its class uncertain — one that reads a cell of unknown error, or that multiplies an infinity
// by a factor whose bar reaches 0 (inf·0 is NaN). 0: every computation gives the same class.
std::vector<Buffer> OperationEval::bilinear_hazards(Ctx& c, int w, int bias) const {
  const double l = lambda_;
  const CellMap unknown = flag(c, [](double, double s, double d) { return !is_known(s, d); });
  const CellMap ones = flag(c, [](double, double, double) { return true; });
  const CellMap infinite = flag(c, [](double v, double, double) { return !std::isfinite(v); });
  const CellMap loose =
      flag(c, [l](double v, double s, double d) { return may_cross_zero(v, std::min(l * s, d)); });
  std::vector<Buffer> hazard = run_bilinear(c, w, bias, unknown, ones, false);
  for (const auto& [on_x, on_w] :
       {std::pair{ones, unknown}, std::pair{infinite, loose}, std::pair{loose, infinite}}) {
    const std::vector<Buffer> more = run_bilinear(c, w, bias, on_x, on_w, true);
    for (std::size_t o = 0; o < hazard.size(); ++o) {
      const std::span<double> h = hazard[o].values<double>();
      const std::span<const double> m = more[o].values<double>();
      for_cells(h.size(), [&](std::size_t lo, std::size_t hi) {
        for (std::size_t i = lo; i < hi; ++i) h[i] += m[i];
      });
    }
  }
  return hazard;
}

// A float32 transform's cells [lo, hi): o[k] = round_up(f(v[k], sg[k], d[k])), with the
// smallest nonzero and the largest cell and whether any is ∞ or NaN. Compiled for the baseline,
// AVX2 and AVX-512 (fast::VectorIsa; the same IEEE operations in each: the same bits).
struct Extent {
  float lo = INFINITY, hi = 0;
  bool bad = false;
};
// Branch-free over the bit patterns, so that it vectorises (float min and max do not, for NaN's
// sake): round_up is the pattern plus one where the float is below the double, and patterns of
// floats ≥ 0 order as their values (NaN and −0 above +∞: both count as bad, as a negative cell
// would).
template <typename F>
[[gnu::always_inline]] inline Extent fill_cells(const F& f, const double* v, const double* sg,
                                                const double* d, float* o, std::size_t lo,
                                                std::size_t hi) {
  constexpr std::uint32_t kInf = 0x7f800000U, kMax = 0x7f7fffffU;  // +∞, FLT_MAX
  std::uint32_t low = kInf, high = 0;
  for (std::size_t k = lo; k < hi; ++k) {
    const double t = f(v[k], sg[k], d[k]);
    const auto near = static_cast<float>(t);
    const std::uint32_t bits =
        std::bit_cast<std::uint32_t>(near) + (static_cast<double>(near) < t ? 1U : 0U);
    o[k] = std::bit_cast<float>(bits);
    low = std::min(low, bits == 0 ? kInf : bits);
    high = std::max(high, bits);
  }
  const bool bad = high > kMax;
  return {std::bit_cast<float>(std::min(low, kInf)), bad ? INFINITY : std::bit_cast<float>(high),
          bad};
}
template <typename F>
[[gnu::target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,bmi2,prefer-vector-width=512")]] Extent
fill_cells_avx512(const F& f, const double* v, const double* sg, const double* d, float* o,
                  std::size_t lo, std::size_t hi) {
  return fill_cells(f, v, sg, d, o, lo, hi);
}
template <typename F>
[[gnu::target("avx2,fma,bmi2")]] Extent fill_cells_avx2(const F& f, const double* v,
                                                        const double* sg, const double* d, float* o,
                                                        std::size_t lo, std::size_t hi) {
  return fill_cells(f, v, sg, d, o, lo, hi);
}

// The float32 form of `t` on an input (value, σ, D): each cell rounded up, its range and
// whether all are integers. A σ or D that is a view of the shared zeros stays one.
namespace {
Single make_single(const CellTransform& t, const Buffer& value, const Buffer& sigma,
                   const Buffer& bound, const SharedZeros* zeros) {
  if (zeros != nullptr &&
      ((t.of_sigma && zeros->holds(sigma)) || (t.of_bound && zeros->holds(bound)))) {
    return Single{.buffer = zeros->view(value.range(), DType::kFloat32)};
  }
  Single out{.buffer = Buffer(DType::kFloat32, value.range(), Buffer::Uninitialized{})};
  const std::span<const double> v = value.values<double>(), sg = sigma.values<double>(),
                                d = bound.values<double>();
  const std::span<float> o = out.buffer.values<float>();
  // One branch-free pass (fill_cells: it vectorises, on AVX-512 where the CPU has it): each
  // cell rounded up, the smallest nonzero and the largest cell, and whether any is ∞ or NaN.
  const auto fill = [&](auto f) {
    const fast::VectorIsa isa = fast::vector_isa();
    return tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, o.size(), kCellChunk), Extent{},
        [&](const tbb::blocked_range<std::size_t>& r, Extent e) {
          const Extent part =
              isa == fast::VectorIsa::kAvx512 ? fill_cells_avx512(f, v.data(), sg.data(), d.data(),
                                                                  o.data(), r.begin(), r.end())
              : isa == fast::VectorIsa::kAvx2
                  ? fill_cells_avx2(f, v.data(), sg.data(), d.data(), o.data(), r.begin(), r.end())
                  : fill_cells(f, v.data(), sg.data(), d.data(), o.data(), r.begin(), r.end());
          return Extent{std::min(e.lo, part.lo), std::max(e.hi, part.hi), e.bad || part.bad};
        },
        [](Extent a, const Extent& b) {
          return Extent{std::min(a.lo, b.lo), std::max(a.hi, b.hi), a.bad || b.bad};
        },
        tbb::simple_partitioner());
  };
  using Of = CellTransform::Of;
  Extent all;
  switch (t.of) {
    case Of::kAbs:
      all = fill([](double x, double, double) { return std::abs(x); });
      break;
    case Of::kSquare:
      all = fill([](double x, double, double) { return x * x; });
      break;
    case Of::kSigmaSquared:
      all = fill([](double, double s, double) { return s * s; });
      break;
    case Of::kBound:
      all = fill([](double, double, double b) { return b; });
      break;
    case Of::kAbsPlusBound:
      all = fill([](double x, double, double b) { return std::abs(x) + b; });
      break;
    case Of::kNonzero:
      all = fill([](double x, double s, double b) { return may_be_nonzero(x, s, b) ? 1.0 : 0.0; });
      break;
  }
  out.lo = all.lo;
  out.hi = all.hi;
  out.fits = !all.bad && all.lo >= FLT_MIN;  // no ∞, NaN or subnormal (lo is ∞ if all zero)
  // Integers matter only for sums that can stay below 2^24 (exact): scanned only then.
  out.integers = out.fits && all.hi < 0x1p24F &&
                 !any_cell(o.size(), [&](std::size_t k) { return o[k] != std::trunc(o[k]); });
  return out;
}
}  // namespace

// The float32 form of `t` on input entry i, made once per operation — or once per oracle chain
// for a tensor every block of the chain reads whole (ChainSingles: a weight).
const Single& OperationEval::single_of(Ctx& c, const CellTransform& t, std::size_t i) const {
  if (chain_ != nullptr) {
    if (auto w = chain_->whole.find(c.ins[i].value.tensor); w != chain_->whole.end()) {
      const std::pair<std::string, ir::TensorId> key{std::string(t.kind), w->second};
      if (auto it = chain_->made.find(key); it != chain_->made.end()) return it->second;
      return chain_->made
          .emplace(key, make_single(t, *c.in_value[i], *c.in_sigma[i], *c.in_bound[i], zeros_))
          .first->second;
    }
  }
  const std::pair<std::string, std::size_t> key{std::string(t.kind), i};
  if (auto it = c.singles.find(key); it != c.singles.end()) return it->second;
  return c.singles
      .emplace(key, make_single(t, *c.in_value[i], *c.in_sigma[i], *c.in_bound[i], zeros_))
      .first->second;
}

std::optional<std::vector<Buffer>> OperationEval::run_single(Ctx& c, int w, int bias,
                                                             const CellTransform& tx,
                                                             const CellTransform& tw,
                                                             bool zero_bias, bool count,
                                                             double* factor_out) const {
  if (single_sums_ == SingleSums::kNever) return std::nullopt;
  std::string_view kernel = c.op.kernel();
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  // Sums of products whose float32 kernels form each cell as a plain sum of the same products,
  // in some order, with or without fused multiply-adds (the bound above holds for every such
  // order): the GEMM libraries, and for conv2d oneDNN's direct convolution
  // (algorithm::convolution_direct: no Winograd or FFT transform of the operands), im2col +
  // GEMM, or the reference loops; grouped_conv2d likewise, per group.
  if (kernel != "linear" && kernel != "linear_nobias" && kernel != "matmul" && kernel != "conv2d" &&
      kernel != "grouped_conv2d")
    return std::nullopt;
  const double n = terms_ + 2;  // the products, the bias, one to spare
  if (n >= 0x1p22) return std::nullopt;
  // Where the GEMM is cheap next to a pass over its operands (few rows against a large weight:
  // ViT-B/16's 17 tokens), rounding the operands costs more than float32 saves.
  // A tensor an oracle chain's every block reads whole is rounded once for all its blocks.
  double operand_cells = 0;
  for (std::size_t i = 0; i < c.in_value.size(); ++i) {
    const bool shared = chain_ != nullptr && chain_->whole.contains(c.ins[i].value.tensor);
    operand_cells +=
        static_cast<double>(c.in_value[i]->size()) /
        (shared ? static_cast<double>(std::max<std::int64_t>(1, chain_->blocks)) : 1.0);
  }
  double output_cells = 0;
  for (const Buffer& b : c.result.values) output_cells += static_cast<double>(b.size());
  if (single_sums_ == SingleSums::kWherePays && output_cells * terms_ < 64 * operand_cells)
    return std::nullopt;
  std::optional<Buffer> zero;  // the zeroed bias
  std::vector<const Buffer*> p;
  p.reserve(c.in_value.size());
  const Single* xs = nullptr;
  const Single* ws = nullptr;
  float bias_hi = 0;
  bool integers = true;
  for (std::size_t i = 0; i < c.in_value.size(); ++i) {
    const auto idx = static_cast<int>(i);
    if (idx == bias && zero_bias) {
      zero = zeros_ != nullptr && c.in_value[i]->range().size() <= zeros_->cells()
                 ? zeros_->view(c.in_value[i]->range(), DType::kFloat32)
                 : Buffer(DType::kFloat32, c.in_value[i]->range());
      p.push_back(&*zero);
      continue;
    }
    const CellTransform& t = idx == w ? tw : tx;
    const Single& one = single_of(c, t, i);
    if (!one.fits) return std::nullopt;
    integers = integers && one.integers;
    if (idx == w) {
      ws = &one;
    } else if (idx == bias) {
      bias_hi = one.hi;
    } else {
      xs = &one;
    }
    p.push_back(&one.buffer);
  }
  if (xs == nullptr || ws == nullptr) return std::nullopt;
  // No product underflows (each nonzero one ≥ 2^−125, normal), no sum overflows (≤ 2^124).
  const double lo = static_cast<double>(xs->lo) * ws->lo;  // ∞ when either is all zero
  const double hi = static_cast<double>(xs->hi) * ws->hi * terms_ + bias_hi;
  if (lo < 0x1p-125 || hi > 0x1p124) return std::nullopt;
  // Integers summing below 2^24 are exact in float32 as in float64 (counts, exact mode).
  const bool exact = integers && hi < 0x1p24;
  TAPESTRY_ASSERT(!count || exact, "a count of live terms that float32 does not hold exactly");
  const double g24 = n * 0x1p-24 / (1 - n * 0x1p-24);
  const double g53 = n * 0x1p-53 / (1 - n * 0x1p-53);
  const double factor = exact ? 1.0 : (1 + g53) / (1 - g24) * (1 + 0x1p-49);
  std::vector<Buffer> sums = call(kernel_, p, DType::kFloat32);
  if (count) return sums;  // exact: kept in float32
  if (factor_out != nullptr) {
    *factor_out = factor;
    return sums;
  }
  std::vector<Buffer> out;
  out.reserve(sums.size());
  for (const Buffer& sum : sums) {
    Buffer o(DType::kFloat64, sum.range(), Buffer::Uninitialized{});
    const std::span<const float> from = sum.values<float>();
    const std::span<double> to = o.values<double>();
    for_cells(to.size(), [&](std::size_t lo_i, std::size_t hi_i) {
      for (std::size_t k = lo_i; k < hi_i; ++k) to[k] = static_cast<double>(from[k]) * factor;
    });
    out.push_back(std::move(o));
  }
  return out;
}

// The input entries bilinear multiplies: x and w, or a and b; a gradient kernel's cotangent
// d_result and the forward input it pairs with — conv2d_grad_weight(x, d_result): x and
// d_result; conv2d_grad_input(x, w, d_result): d_result and w, its x giving only the result's
// shape and range (`shape_only`: run_bilinear hands it x's transforms, which the kernel never
// reads). -1 where absent.
OperationEval::BilinearFactors OperationEval::bilinear_factors(const Ctx& c) {
  BilinearFactors f{.x = c.entry("x") >= 0 ? c.entry("x") : c.entry("a"),
                    .w = c.entry("w") >= 0 ? c.entry("w") : c.entry("b")};
  if (const int d = c.entry("d_result"); d >= 0) {
    if (f.w >= 0) {
      f.shape_only = f.x;
      f.x = d;
    } else {
      f.w = d;
    }
  }
  return f;
}

// linear's live-term counts when x or w holds no exact zero: every term of the other is live, so
// result[r, o] counts the live cells of row r of x (w has none) or of row o of w (x has none),
// plus 1 where bias[o] may be nonzero — a pass over one operand instead of a GEMM. Float32:
// counts below 2^24 are exact. Empty where the layout is not linear's whole tensors.
std::optional<std::vector<Buffer>> OperationEval::row_counts(const Ctx& c, int x, int w, int bias,
                                                             bool x_zeros, bool w_zeros) const {
  std::string_view kernel = c.op.kernel();
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  if ((kernel != "linear" && kernel != "linear_nobias") || (x_zeros && w_zeros) ||
      c.outs.size() != 1)
    return std::nullopt;
  for (std::size_t i = 0; i < c.ins.size(); ++i) {
    if (c.ins[i].value.range != c.in_value[i]->range()) return std::nullopt;  // a sub-box
  }
  const auto xi = static_cast<std::size_t>(x), wi = static_cast<std::size_t>(w);
  const Point xs = c.in_value[xi]->range().shape(), ws = c.in_value[wi]->range().shape();
  const Range& out_range = c.result.values.front().range();
  const Point os = out_range.shape();
  if (xs.rank() < 1 || ws.rank() != 2 || os.rank() != xs.rank() || xs[xs.rank() - 1] != ws[1] ||
      os[os.rank() - 1] != ws[0] || c.outs.front().value.range != out_range ||
      ws[1] + 1 >= (std::int64_t{1} << 24))
    return std::nullopt;
  for (std::size_t d = 0; d + 1 < xs.rank(); ++d) {
    if (xs[d] != os[d]) return std::nullopt;
  }
  const auto in = static_cast<std::size_t>(ws[1]);
  const auto outs = static_cast<std::size_t>(ws[0]);
  const std::size_t rows = in == 0 ? 0 : c.in_value[xi]->values<double>().size() / in;
  // The live cells of each row of the operand with exact zeros (x's rows, or w's).
  const std::size_t counted = x_zeros ? xi : wi;
  const std::size_t lines = x_zeros ? rows : outs;
  const std::span<const double> v = c.in_value[counted]->values<double>(),
                                sg = c.in_sigma[counted]->values<double>(),
                                d = c.in_bound[counted]->values<double>();
  std::vector<float> per_line(lines);
  for_cells(
      lines,
      [&](std::size_t lo, std::size_t hi) {
        for (std::size_t r = lo; r < hi; ++r) {
          std::size_t n = 0;
          for (std::size_t k = r * in; k < (r + 1) * in; ++k)
            n += may_be_nonzero(v[k], sg[k], d[k]) ? 1 : 0;
          per_line[r] = static_cast<float>(n);
        }
      },
      std::max<std::size_t>(1, kCellChunk / std::max<std::size_t>(in, 1)));
  std::vector<float> bias_live(outs, 0.0F);
  if (bias >= 0) {
    const auto bi = static_cast<std::size_t>(bias);
    const std::span<const double> bv = c.in_value[bi]->values<double>(),
                                  bs = c.in_sigma[bi]->values<double>(),
                                  bd = c.in_bound[bi]->values<double>();
    for (std::size_t o = 0; o < outs; ++o)
      bias_live[o] = may_be_nonzero(bv[o], bs[o], bd[o]) ? 1.0F : 0.0F;
  }
  Buffer count(DType::kFloat32, out_range, Buffer::Uninitialized{});
  const std::span<float> cv = count.values<float>();
  for_cells(
      rows,
      [&](std::size_t lo, std::size_t hi) {
        for (std::size_t r = lo; r < hi; ++r) {
          float* const row = cv.data() + r * outs;
          if (x_zeros) {
            for (std::size_t o = 0; o < outs; ++o) row[o] = per_line[r] + bias_live[o];
          } else {
            for (std::size_t o = 0; o < outs; ++o) row[o] = per_line[o] + bias_live[o];
          }
        }
      },
      std::max<std::size_t>(1, kCellChunk / std::max<std::size_t>(outs, 1)));
  std::vector<Buffer> result;
  result.push_back(std::move(count));
  return result;
}

// linear, matmul, conv2d, mul: out = Σ_k x_k·w_k (+ bias), n = terms (+1 with a bias).
//   A  = K(|x|, |w|, |bias|)                         Σ|terms| of each cell
//   σ² = K(σx², w², σbias²) + K(x², σw², 0) + proxy(A)²
//   D  = K(Dx, |w| + Dw, Dbias) + K(|x|, Dw, 0) + bound(A)
// (D is exact to every order: |Σ(x+Δx)(w+Δw) − Σxw| ≤ Σ|Δx|(|w|+|Δw|) + |x||Δw|.)
// A term with an exact zero factor (a masked attention weight, relu's certain 0) is 0 in every
// computation and rounds nothing: n counts the others, K(live x, live w, live bias), when an
// input holds exact zeros. A cell that is ±inf or NaN: bilinear_hazards.
void OperationEval::bilinear(Ctx& c) const {
  // An elementwise product, one cell of each factor per point: in one pass (binary_product).
  // Not under TF32 products, whose operand roundings only the general path adds.
  if (c.op.kernel() == "mul" && c.op.body().reductions.empty() && product_roundoff_ == 0 &&
      binary_product(c))
    return;
  const BilinearFactors factors = bilinear_factors(c);
  const int x = factors.x, w = factors.w;
  const int bias = c.entry("bias");
  if (x < 0 || w < 0) return fallback(c);
  const std::size_t n_in = c.in_value.size();
  for (std::size_t i = 0; i < n_in; ++i) {
    const auto idx = static_cast<int>(i);
    if (idx != x && idx != w && idx != bias && idx != factors.shape_only) return fallback(c);
  }
  const auto run = [&](const CellMap& on_x, const CellMap& on_w, bool zero_bias) {
    return run_bilinear(c, w, bias, on_x, on_w, zero_bias);
  };
  // The inputs' transforms, each made once (|w| serves a, d1 and d2): σ² of an exact input is
  // its σ (0² = 0), |x| + D of one whose D is 0 is |x| — the same numbers, not made again.
  const CellMap abs_value = [&](std::size_t i) -> const Buffer& {
    return c.memo("abs", i, [&] { return abs_of(*c.in_value[i]); });
  };
  const CellMap sq_value = [&](std::size_t i) -> const Buffer& {
    return c.memo("sq", i, [&] { return square_of(*c.in_value[i]); });
  };
  const CellMap sq_sigma = [&](std::size_t i) -> const Buffer& {
    if (zeros_ != nullptr && zeros_->holds(*c.in_sigma[i])) return *c.in_sigma[i];
    return c.memo("sq_sigma", i, [&] { return square_of(*c.in_sigma[i]); });
  };
  const CellMap bound = [&](std::size_t i) -> const Buffer& { return *c.in_bound[i]; };
  const CellMap abs_plus_bound = [&](std::size_t i) -> const Buffer& {
    if (zeros_ != nullptr && zeros_->holds(*c.in_bound[i])) return abs_value(i);
    return c.memo("abs_plus_bound", i, [&] {
      Buffer b = abs_of(*c.in_value[i]);
      const std::span<const double> d = c.in_bound[i]->values<double>();
      const std::span<double> v = b.values<double>();
      for_cells(v.size(), [&](std::size_t lo, std::size_t hi) {
        for (std::size_t k = lo; k < hi; ++k) v[k] += d[k];
      });
      return b;
    });
  };
  // 1. Which inputs carry an error in, and which hold an exact zero.
  bool x_carries = false;  // x or the bias carry an error in
  std::vector<bool> zeros_in(n_in);
  for (std::size_t i = 0; i < n_in; ++i) {
    if (static_cast<int>(i) != w) x_carries |= !all_zero(*c.in_bound[i]);
    zeros_in[i] = has_exact_zero(*c.in_value[i], *c.in_sigma[i], *c.in_bound[i]);
  }
  const bool exact_zeros = std::find(zeros_in.begin(), zeros_in.end(), true) != zeros_in.end();
  const bool w_carries = !all_zero(*c.in_bound[static_cast<std::size_t>(w)]);

  // 2. The kernel runs: magnitudes, propagated errors, live terms, hazards. Each transform is
  //    freed after the last run that reads it (the flags' runs come last, on their own).
  const auto forget = [&c](std::initializer_list<std::string_view> kinds) {
    const auto listed = [&](const auto& m) {
      return std::find(kinds.begin(), kinds.end(), m.first.first) != kinds.end();
    };
    std::erase_if(c.made, listed);
    std::erase_if(c.singles, listed);
  };
  // Each sum of nonnegative products as float32 GEMMs rounded up where they apply (run_single),
  // else in float64; the same transforms either way.
  using Of = CellTransform::Of;
  static constexpr CellTransform kAbs{"abs", Of::kAbs};
  static constexpr CellTransform kSq{"sq", Of::kSquare};
  static constexpr CellTransform kSqSigma{"sq_sigma", Of::kSigmaSquared, true};
  static constexpr CellTransform kBound{"bound", Of::kBound, false, true};
  static constexpr CellTransform kAbsPlusBound{"abs_plus_bound", Of::kAbsPlusBound};
  static constexpr CellTransform kLive{"live", Of::kNonzero};
  // A sum that only the cell loop below reads (not one that σ or D is written over) stays
  // float32 there, scaled as it is read: the same double(sum)·factor, without a float64 copy.
  struct Term {
    std::vector<Buffer> buffers;
    double factor = 1;  // of float32 buffers
  };
  const auto sums = [&](const CellTransform& tx, const CellTransform& tw, const CellMap& on_x,
                        const CellMap& on_w, bool zero_bias) {
    if (auto s = run_single(c, w, bias, tx, tw, zero_bias, false)) return std::move(*s);
    return run(on_x, on_w, zero_bias);
  };
  const auto term = [&](const CellTransform& tx, const CellTransform& tw, const CellMap& on_x,
                        const CellMap& on_w, bool zero_bias) {
    Term t;
    if (auto s = run_single(c, w, bias, tx, tw, zero_bias, false, &t.factor)) {
      t.buffers = std::move(*s);
    } else {
      t.buffers = run(on_x, on_w, zero_bias);
    }
    return t;
  };
  std::vector<Buffer> a = sums(kAbs, kAbs, abs_value, abs_value, false);
  std::vector<Buffer> d1, live, hazard;
  Term p1, p2, d2;
  if (!w_carries) {  // |x| and |bias| are read by d2 alone: freed before p1 and d1 make theirs
    const auto of_x = [w](const auto& m) {
      return m.first.first == "abs" && m.first.second != static_cast<std::size_t>(w);
    };
    std::erase_if(c.made, of_x);
    std::erase_if(c.singles, of_x);
  }
  if (x_carries) {
    p1 = term(kSqSigma, kSq, sq_sigma, sq_value, false);
    if (!w_carries) forget({"sq", "sq_sigma"});  // p2 does not run
    const bool w_exact =
        zeros_ != nullptr && zeros_->holds(*c.in_bound[static_cast<std::size_t>(w)]);
    d1 = sums(kBound, w_exact ? kAbs : kAbsPlusBound, bound, abs_plus_bound, false);
    forget({"abs_plus_bound", "bound"});
  }
  if (w_carries) {
    p2 = term(kSq, kSqSigma, sq_value, sq_sigma, true);
    if (x_carries) {
      d2 = term(kAbs, kBound, abs_value, bound, true);
    } else {
      d2.buffers = sums(kAbs, kBound, abs_value, bound, true);  // D is written over it
    }
  }
  forget({"abs", "sq", "sq_sigma", "bound"});
  if (exact_zeros) {
    if (auto counted = row_counts(c, x, w, bias, zeros_in[static_cast<std::size_t>(x)],
                                  zeros_in[static_cast<std::size_t>(w)])) {
      live = std::move(*counted);
    } else if (auto single = run_single(c, w, bias, kLive, kLive, false, true)) {
      live = std::move(*single);
    } else {
      const CellMap nonzero =
          flag(c, [](double v, double s, double d) { return may_be_nonzero(v, s, d); });
      live = run(nonzero, nonzero, false);
    }
    c.made.clear();
    c.singles.clear();
  }
  if (std::any_of(c.result.values.begin(), c.result.values.end(),
                  [](const Buffer& v) { return any_non_finite(v); }))
    hazard = bilinear_hazards(c, w, bias);

  // 3. Each output cell. σ is written over A and D over the first D term (each cell reads its
  //    own A and D term before writing them): no buffer more.
  const double n = terms_ + (bias >= 0 ? 1 : 0);
  // Operands rounded before they are multiplied (TF32 tensor cores on a float32 GEMM, u_t =
  // 2^-11): each product x·w becomes x(1+δ)·w(1+ε), |δ|, |ε| ≤ u_t, off by at most
  // (2u_t + u_t²)·|x·w|; over the cell's terms, (2u_t + u_t²)·A in both channels (σ takes the
  // worst case too: the roundings of one operand row are not independent of the others').
  const auto float32_operand = [&](int i) {
    return tensor_dtype(graph_, c.ins[static_cast<std::size_t>(i)].value.tensor) == DType::kFloat32;
  };
  const double rounded_products = product_roundoff_ > 0 && float32_operand(x) && float32_operand(w)
                                      ? (2 + product_roundoff_) * product_roundoff_
                                      : 0;
  const auto cells = [](const std::vector<Buffer>& b, std::size_t o) {
    return b.empty() ? nullptr : b[o].values<double>().data();
  };
  // A Term's cells of output o: float64, or float32 read as double(sum)·factor.
  struct TermCells {
    const double* f64 = nullptr;
    const float* f32 = nullptr;
    double factor = 1;
    double operator[](std::size_t i) const {
      return f64 != nullptr ? f64[i] : static_cast<double>(f32[i]) * factor;
    }
  };
  const auto term_cells = [](const Term& t, std::size_t o) {
    TermCells out;
    if (t.buffers.empty()) return out;
    if (t.buffers[o].dtype() == DType::kFloat32) {
      out.f32 = t.buffers[o].values<float>().data();
      out.factor = t.factor;
    } else {
      out.f64 = t.buffers[o].values<double>().data();
    }
    return out;
  };
  for (std::size_t o = 0; o < a.size(); ++o) {
    c.result.magnitudes.push_back(max_of(a[o]));
    const double* const av = cells(a, o);
    const TermCells p1v = term_cells(p1, o);
    const double* const d1v = cells(d1, o);
    const TermCells p2v = term_cells(p2, o);
    const TermCells d2v = term_cells(d2, o);
    // The live-term counts: float32 from run_single, float64 from the float64 run.
    const double* const lv =
        live.empty() || live[o].dtype() != DType::kFloat64 ? nullptr : cells(live, o);
    const float* const lv32 = live.empty() || live[o].dtype() != DType::kFloat32
                                  ? nullptr
                                  : live[o].values<float>().data();
    const double* const hv = cells(hazard, o);
    const std::span<const double> value = c.result.values[o].values<double>();
    Buffer s = std::move(a[o]);
    Buffer d = x_carries   ? std::move(d1[o])
               : w_carries ? std::move(d2.buffers[o])
                           : Buffer(DType::kFloat64, s.range(), Buffer::Uninitialized{});
    double* const sv = s.values<double>().data();
    double* const dv = d.values<double>().data();
    for_cells(value.size(), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) {
        if (!std::isfinite(value[i])) {
          sv[i] = dv[i] = class_scale(hv[i] == 0);
          continue;
        }
        const double terms = lv32 != nullptr ? lv32[i] : (lv != nullptr ? lv[i] : n);
        const Rounding r = rounding(terms, c.u, c.tiny, av[i]);
        double var = r.proxy * r.proxy;
        double worst = r.bound;
        if (rounded_products > 0) {
          const double e = rounded_products * av[i] * (1 + 0x1p-50);
          var += e * e;
          worst += e;
        }
        if (x_carries) {
          var += p1v[i];
          worst += d1v[i];
        }
        if (w_carries) {
          var += p2v[i];
          worst += d2v[i];
        }
        sv[i] = std::sqrt(var);
        dv[i] = worst;
      }
    });
    c.result.sigmas.push_back(std::move(s));
    c.result.bounds.push_back(std::move(d));
  }
}

// add, sub (as add), bias_add, and sum reductions: out = Σ terms, n = the additions: 1 for a
// binary op, terms − 1 for a reduction.
//   A = twin(|terms|);  σ² = twin(σ²) + proxy(A)²;  D = twin(D) + bound(A)
// Terms that are exact zeros (σ = D = 0) add without rounding: where an input holds some, n is
// twin(may be nonzero) − 1 per cell, so x + 0 of a mask's live cells is exact. A cell that is
// ±inf or NaN (a term is: −inf + x of a causal mask) has no rounding error: its class is certain
// when twin(σ²) and twin(D), the errors carried in, are finite.
void OperationEval::additive(Ctx& c, std::string_view twin) const {
  if (twin == "add" && c.op.body().reductions.empty() && binary_sum(c)) return;
  const KernelFn fn = kernels_.lookup(twin, graph_.display_name(op_));
  // The kernel on |x|, on σ² (an exact input's σ is its own square: a view of zeros) and on D;
  // each input transform is freed once its kernel has run.
  const auto run_on =
      [&](const std::function<const Buffer*(std::size_t, std::optional<Buffer>&)>& transform) {
        std::vector<std::optional<Buffer>> made(c.in_value.size());
        std::vector<const Buffer*> in;
        in.reserve(made.size());
        for (std::size_t i = 0; i < made.size(); ++i) in.push_back(transform(i, made[i]));
        return call(fn, in, DType::kFloat64);
      };
  std::vector<Buffer> a = run_on(
      [&](std::size_t i, std::optional<Buffer>& b) { return &b.emplace(abs_of(*c.in_value[i])); });
  std::vector<Buffer> p = run_on([&](std::size_t i, std::optional<Buffer>& b) -> const Buffer* {
    if (zeros_ != nullptr && zeros_->holds(*c.in_sigma[i])) return c.in_sigma[i];
    return &b.emplace(square_of(*c.in_sigma[i]));
  });
  std::vector<Buffer> d = call(fn, c.in_bound, DType::kFloat64);
  // Terms that are exact zeros (a mask's 0s, masked e^(x − m)) add without rounding: n is then
  // the number of terms that may be nonzero, less one, cell by cell.
  std::vector<Buffer> live;
  bool exact_zeros = false;
  for (std::size_t i = 0; i < c.in_value.size(); ++i)
    exact_zeros |= has_exact_zero(*c.in_value[i], *c.in_sigma[i], *c.in_bound[i]);
  if (exact_zeros) {
    const CellMap nonzero =
        flag(c, [](double v, double s, double b) { return may_be_nonzero(v, s, b); });
    std::vector<const Buffer*> flag_p;
    flag_p.reserve(c.in_value.size());
    for (std::size_t i = 0; i < c.in_value.size(); ++i) flag_p.push_back(&nonzero(i));
    live = call(fn, flag_p, DType::kFloat64);
  }
  const double n = c.op.body().reductions.empty() ? 1 : std::max(terms_ - 1, 0.0);
  for (std::size_t o = 0; o < a.size(); ++o) {
    const std::span<const double> av = a[o].values<double>();
    const std::span<const double> value = c.result.values[o].values<double>();
    const std::span<double> pv = p[o].values<double>(), dv = d[o].values<double>();
    for_cells(pv.size(), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) {
        if (!std::isfinite(value[i])) {  // a term is ±inf (a mask): certain if no error unknown
          pv[i] = dv[i] = class_scale(is_known(pv[i], dv[i]));
          continue;
        }
        const double additions =
            live.empty() ? n : std::min(n, std::max(live[o].values<double>()[i] - 1, 0.0));
        const Rounding r = rounding(additions, c.u, c.tiny, av[i]);
        pv[i] = std::sqrt(pv[i] + r.proxy * r.proxy);
        dv[i] += r.bound;
      }
    });
    c.result.magnitudes.push_back(max_of(a[o]));
    c.result.sigmas.push_back(std::move(p[o]));
    c.result.bounds.push_back(std::move(d[o]));
  }
}

// An output's σ and D: the spare buffers of an input whose last reader this is (written in
// place), else fresh float64 buffers of the output's range.
class OutputErrors {
 public:
  OutputErrors(Buffer* spare_sigma, Buffer* spare_bound, const zspace::Range& range) {
    TAPESTRY_ASSERT((spare_sigma == nullptr) == (spare_bound == nullptr),
                    "an input's spare σ and D come as a pair");
    if (spare_sigma == nullptr) {
      fresh_sigma_ = Buffer(DType::kFloat64, range);
      fresh_bound_ = Buffer(DType::kFloat64, range);
    }
    sigma_ = spare_sigma != nullptr ? spare_sigma : &fresh_sigma_;
    bound_ = spare_bound != nullptr ? spare_bound : &fresh_bound_;
  }
  OutputErrors(const OutputErrors&) = delete;
  OutputErrors& operator=(const OutputErrors&) = delete;

  [[nodiscard]] Buffer& sigma() { return *sigma_; }
  [[nodiscard]] Buffer& bound() { return *bound_; }

 private:
  Buffer fresh_sigma_, fresh_bound_;
  Buffer* sigma_ = nullptr;
  Buffer* bound_ = nullptr;
};

// binary_product: bilinear's rule for an elementwise a·b the same way — per cell A = |a||b|,
// σ² = proxy(A)² + σa²b² + a²σb², D = bound(A) + Da(|b| + Db) + |a|Db, n = 1 product or 0 where
// a factor is an exact zero, ±inf or NaN certain unless a factor is unknown or an infinity meets
// a factor whose bar reaches 0 (bilinear_hazards) — instead of its kernel runs on full-size
// transforms (attention's scores times a scale: 16.7 M cells, a dozen 134 MB buffers).
// additive's rule for x ± y, one cell of each per index point, in one pass: per cell
// A = |x| + |y|, σ² = σx² + σy² + proxy(A)², D = Dx + Dy + bound(A), with n = 1 addition, or 0
// where a term is an exact zero — the numbers of the general path (each of its kernel runs adds
// the same two float64 numbers), without its five full-size buffers of transforms and sums (the
// residual add of resnet_bottleneck: 6 × 51 MiB). σ and D go over an operand's spare ones when
// this operation reads it for the last time and at the output's own cells (elementwise's test).
template <bool kProduct>
bool OperationEval::binary_cells(Ctx& c) const {
  if (c.ins.size() != 2 || c.outs.size() != 1) return false;
  const ir::IpfSignature& signature = *c.op.ipf_signature();
  const Range index = *c.op.ipf_index();
  const auto& out_entry = c.outs.front();
  const zspace::IndexProjection& out_ipf = checked_ipf(out_entry, signature.outputs, index);
  const auto single_cells = [](const zspace::IndexProjection& ipf) {
    return std::all_of(ipf.shape().begin(), ipf.shape().end(),
                       [](std::int64_t s) { return s == 1; });
  };
  if (!single_cells(out_ipf)) return false;
  std::array<const zspace::IndexProjection*, 2> ipf{};
  for (std::size_t i = 0; i < 2; ++i) {
    ipf[i] = &checked_ipf(c.ins[i], signature.inputs, index);
    if (!single_cells(*ipf[i]) || c.in_value[i]->dtype() != DType::kFloat64 ||
        c.in_sigma[i]->dtype() != DType::kFloat64 || c.in_bound[i]->dtype() != DType::kFloat64)
      return false;
  }
  // σ and D over operand i's: its last reader, read at the output's cells only, its own buffers.
  const Range& out_range = graph_.tensor(out_entry.value.tensor).range();
  Buffer* spare_sigma = nullptr;
  Buffer* spare_bound = nullptr;
  for (std::size_t i = 0; i < 2 && spare_sigma == nullptr; ++i) {
    const ir::TensorId t = c.ins[i].value.tensor;
    auto it = c.spare.find(t);
    const auto owned = [&](const Buffer* b) {
      return b != nullptr && !b->is_borrowed() && b->dtype() == DType::kFloat64 &&
             b->range() == out_range;
    };
    if (it != c.spare.end() && c.ins[1 - i].value.tensor != t && owned(it->second.first) &&
        owned(it->second.second) && it->second.first == c.in_sigma[i] &&
        it->second.second == c.in_bound[i] && graph_.tensor(t).range() == out_range &&
        c.ins[i].value.range == out_entry.value.range && *ipf[i] == out_ipf) {
      spare_sigma = it->second.first;
      spare_bound = it->second.second;
      c.result.taken.push_back(t);
    }
  }
  OutputErrors errors(spare_sigma, spare_bound, out_range);
  Buffer& s = errors.sigma();
  Buffer& d = errors.bound();
  const Operand<const double> y(
      InputPort{c.result.values.front().view(out_entry.value.range), &out_ipf});
  const Operand<double> sy(OutputPort{s.view(out_entry.value.range), &out_ipf});
  const Operand<double> dy(OutputPort{d.view(out_entry.value.range), &out_ipf});
  std::vector<Operand<const double>> v, sv, dv;
  for (std::size_t i = 0; i < 2; ++i) {
    v.emplace_back(InputPort{c.in_value[i]->view(c.ins[i].value.range), ipf[i]});
    sv.emplace_back(InputPort{c.in_sigma[i]->view(c.ins[i].value.range), ipf[i]});
    dv.emplace_back(InputPort{c.in_bound[i]->view(c.ins[i].value.range), ipf[i]});
  }
  // Row by row (elementwise's walk, RowWalk); each segment's largest A.
  const RowWalk walk = row_walk(index, [&](std::size_t dim, std::int64_t extent) {
    const auto even = [&](const auto& o) { return o.step(dim) == o.step(dim + 1) * extent; };
    for (std::size_t i = 0; i < 2; ++i)
      if (!even(v[i]) || !even(sv[i]) || !even(dv[i])) return false;
    return even(y) && even(sy) && even(dy);
  });
  const auto step = [&](const auto& operand) {
    return index.rank() == 0 ? 0 : operand.step(walk.last);
  };
  const double u = c.u, tiny = c.tiny;
  const double magnitude = tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, walk.count, 1), 0.0,
      [&](const tbb::blocked_range<std::size_t>& range, double m) {
        for (std::size_t r = range.begin(); r < range.end(); ++r) {
          const RowWalk::Segment seg = walk.segment(r);
          const Point& p = seg.row;
          const double* const yp = y.cell(p);
          double* const sp = sy.cell(p);
          double* const dp = dy.cell(p);
          const double *const x0 = v[0].cell(p), *const x1 = v[1].cell(p);
          const double *const s0 = sv[0].cell(p), *const s1 = sv[1].cell(p);
          const double *const d0 = dv[0].cell(p), *const d1 = dv[1].cell(p);
          const std::int64_t vx0 = step(v[0]), vx1 = step(v[1]), vs0 = step(sv[0]),
                             vs1 = step(sv[1]), vd0 = step(dv[0]), vd1 = step(dv[1]);
          const std::int64_t step_y = step(y), step_s = step(sy), step_d = step(dy);
          for (std::int64_t j = seg.begin; j < seg.end; ++j) {
            const double a = x0[j * vx0], b = x1[j * vx1];
            const double sa = s0[j * vs0], sb = s1[j * vs1];
            const double da = d0[j * vd0], db = d1[j * vd1];
            if constexpr (kProduct) {
              // bilinear's numbers for one term a·b (x = a, w = b), in its order.
              const double aa = std::abs(a), ab = std::abs(b);
              const double magnitudes = aa * ab;
              m = std::max(m, magnitudes);
              if (!std::isfinite(yp[j * step_y])) {
                const double l = lambda_;
                const bool known = is_known(sa, da) && is_known(sb, db);
                const bool hazard =
                    (!std::isfinite(a) && may_cross_zero(b, std::min(l * sb, db))) ||
                    (!std::isfinite(b) && may_cross_zero(a, std::min(l * sa, da)));
                sp[j * step_s] = dp[j * step_d] = class_scale(known && !hazard);
                continue;
              }
              const double live =
                  may_be_nonzero(a, sa, da) && may_be_nonzero(b, sb, db) ? 1.0 : 0.0;
              const Rounding rd = rounding(live, u, tiny, magnitudes);
              double var = rd.proxy * rd.proxy;
              double worst = rd.bound;
              var += (sa * sa) * (b * b);
              worst += da * (ab + db);
              var += (a * a) * (sb * sb);
              worst += aa * db;
              sp[j * step_s] = std::sqrt(var);
              dp[j * step_d] = worst;
            } else {
              const double magnitudes = std::abs(a) + std::abs(b);
              m = std::max(m, magnitudes);
              const double var = sa * sa + sb * sb;
              const double worst = da + db;
              if (!std::isfinite(yp[j * step_y])) {
                sp[j * step_s] = dp[j * step_d] = class_scale(is_known(var, worst));
                continue;
              }
              const double live =
                  (may_be_nonzero(a, sa, da) ? 1.0 : 0.0) + (may_be_nonzero(b, sb, db) ? 1.0 : 0.0);
              const Rounding rd =
                  rounding(std::min(1.0, std::max(live - 1, 0.0)), u, tiny, magnitudes);
              sp[j * step_s] = std::sqrt(var + rd.proxy * rd.proxy);
              dp[j * step_d] = worst + rd.bound;
            }
          }
        }
        return m;
      },
      [](double a, double b) { return std::max(a, b); }, tbb::simple_partitioner());
  c.result.magnitudes.push_back(magnitude);
  c.result.sigmas.push_back(std::move(s));
  c.result.bounds.push_back(std::move(d));
  return true;
}

bool OperationEval::binary_sum(Ctx& c) const {
  return binary_cells<false>(c);
}

bool OperationEval::binary_product(Ctx& c) const {
  return binary_cells<true>(c);
}

// prod reductions: out = Π x_k over n factors (n − 1 multiplications, in any order).
//   P = K(|x|);  σ = (K(|x| + σx) − P) ⊕ √(n−1)·u·P;  D = K(|x| + Dx) − P + γ(n−1)·P
// K(|x| + Δ) − P bounds the propagated error to every order (|Π(x_k + e_k) − Π x_k| ≤
// Π(|x_k| + |e_k|) − Π|x_k|); for σ it adds the factors' errors linearly, a safe over-estimate
// of their quadrature. Magnitudes are the product's own: Π|x| may be far above max|x|.
void OperationEval::product(Ctx& c) const {
  const Buffer abs_x = abs_of(*c.in_value[0]);
  const auto shifted = [&](const Buffer& delta) {
    Buffer b = abs_x;
    const std::span<const double> d = delta.values<double>();
    const std::span<double> v = b.values<double>();
    for_cells(v.size(), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t k = lo; k < hi; ++k) v[k] += d[k];
    });
    return call(kernel_, {&b}, DType::kFloat64);
  };
  std::vector<Buffer> p = call(kernel_, {&abs_x}, DType::kFloat64);
  std::vector<Buffer> s = shifted(*c.in_sigma[0]), d = shifted(*c.in_bound[0]);
  // Where the product is ±inf or NaN: the kernel run as a sum counts the factors of unknown
  // error, the infinite ones, and those whose bar reaches 0 (inf·0 is NaN).
  std::vector<Buffer> unknown, infinite, loose;
  if (any_non_finite(c.result.values.front())) {
    nlohmann::json as_sum = c.op.params();
    as_sum["op"] = "sum";
    const auto count = [&](const std::function<bool(double, double, double)>& pred) {
      const Buffer flags = indicator(*c.in_value[0], *c.in_sigma[0], *c.in_bound[0], pred);
      return call(kernel_, {&flags}, DType::kFloat64, &as_sum);
    };
    const double l = lambda_;
    unknown = count([](double, double sg, double bd) { return !is_known(sg, bd); });
    infinite = count([](double v, double, double) { return !std::isfinite(v); });
    loose = count(
        [l](double v, double sg, double bd) { return may_cross_zero(v, std::min(l * sg, bd)); });
  }
  const double n = std::max(terms_ - 1, 0.0);
  for (std::size_t o = 0; o < p.size(); ++o) {
    const std::span<const double> pv = p[o].values<double>();
    const std::span<const double> value = c.result.values[o].values<double>();
    const std::span<double> sv = s[o].values<double>(), dv = d[o].values<double>();
    for_cells(pv.size(), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) {
        if (!std::isfinite(value[i])) {
          const bool certain =
              unknown[o].values<double>()[i] == 0 &&
              (infinite[o].values<double>()[i] == 0 || loose[o].values<double>()[i] == 0);
          sv[i] = dv[i] = class_scale(certain);
          continue;
        }
        const Rounding r = rounding(n, c.u, c.tiny, pv[i]);
        sv[i] = std::hypot(sv[i] - pv[i], r.proxy);
        dv[i] = dv[i] - pv[i] + r.bound;
      }
    });
    c.result.magnitudes.push_back(max_of(p[o]));
    c.result.sigmas.push_back(std::move(s[o]));
    c.result.bounds.push_back(std::move(d[o]));
  }
}

// max/min reductions, `reduce` max/min, `maximum`, max_pool2d: exact selections of one cell.
// Each kernel is monotone in every input, so with every input cell within e of its value the
// computed result lies in [K(x − e), K(x + e)], as does the value M = K(x):
//   D = max(K(x + D) − M, M − K(x − D));   σ = max(K(x + λσ) − M, M − K(x − λσ)) / λ
// Only the cells that may be selected count: a masked score (−1e9, off by up to 60) never is,
// however wide its own bar. Neither exceeds the largest D (σ) of the cells selected from (the
// old rule, kept as a cap; its kernel runs on −σ, −D then negated for min), and 2^−52·|M| covers
// the float64 rounding of x ± e. A cell of unknown error (σ not finite: is_known) makes the
// result unknown; a result that is ±inf or NaN is otherwise certain.
void OperationEval::selection(Ctx& c, bool negate) const {
  // The kernel on every input cell mapped by `f(value, σ, D)`; `widest` picks the largest of
  // the cells also when the kernel is a min.
  const auto run_on = [&](const std::function<double(double, double, double)>& f, bool widest) {
    const bool flip = widest && negate;
    std::vector<Buffer> in;
    in.reserve(c.in_value.size());
    for (std::size_t i = 0; i < c.in_value.size(); ++i) {
      Buffer b(DType::kFloat64, c.in_value[i]->range(), Buffer::Uninitialized{});
      const std::span<const double> v = c.in_value[i]->values<double>(),
                                    s = c.in_sigma[i]->values<double>(),
                                    d = c.in_bound[i]->values<double>();
      const std::span<double> o = b.values<double>();
      for_cells(o.size(), [&](std::size_t lo, std::size_t hi) {
        for (std::size_t k = lo; k < hi; ++k)
          o[k] = flip ? -f(v[k], s[k], d[k]) : f(v[k], s[k], d[k]);
      });
      in.push_back(std::move(b));
    }
    std::vector<const Buffer*> p;
    p.reserve(in.size());
    for (const Buffer& b : in) p.push_back(&b);
    std::vector<Buffer> out = call(kernel_, p, DType::kFloat64);
    if (flip) {
      for (Buffer& b : out) b = map_values(b, [](double v) { return -v; });
    }
    return out;
  };
  const double l = lambda_;
  const std::vector<Buffer> unknown =
      run_on([](double, double s, double d) { return is_known(s, d) ? 0.0 : 1.0; }, true);
  const std::vector<Buffer> widest_s = run_on([](double, double s, double) { return s; }, true);
  const std::vector<Buffer> widest_d = run_on([](double, double, double d) { return d; }, true);
  const std::vector<Buffer> hi_s =
      run_on([l](double v, double s, double) { return v + l * s; }, false);
  const std::vector<Buffer> lo_s =
      run_on([l](double v, double s, double) { return v - l * s; }, false);
  const std::vector<Buffer> hi_d = run_on([](double v, double, double d) { return v + d; }, false);
  const std::vector<Buffer> lo_d = run_on([](double v, double, double d) { return v - d; }, false);
  for (std::size_t o = 0; o < c.result.values.size(); ++o) {
    const Buffer& value = c.result.values[o];
    Buffer s(DType::kFloat64, value.range(), Buffer::Uninitialized{});
    Buffer d(DType::kFloat64, value.range(), Buffer::Uninitialized{});
    const std::span<const double> m = value.values<double>(), unk = unknown[o].values<double>(),
                                  ws = widest_s[o].values<double>(),
                                  wd = widest_d[o].values<double>(), hs = hi_s[o].values<double>(),
                                  ls = lo_s[o].values<double>(), hd = hi_d[o].values<double>(),
                                  ld = lo_d[o].values<double>();
    const std::span<double> sv = s.values<double>(), dv = d.values<double>();
    for_cells(m.size(), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) {
        if (unk[i] != 0 || !std::isfinite(m[i])) {
          sv[i] = dv[i] = class_scale(unk[i] == 0);
          continue;
        }
        const double slack = 0x1p-52 * std::abs(m[i]);
        sv[i] = std::min(ws[i], std::max(hs[i] - m[i], m[i] - ls[i]) / l + slack);
        dv[i] = std::min(wd[i], std::max(hd[i] - m[i], m[i] - ld[i]) + slack);
      }
    });
    c.result.magnitudes.push_back(max_abs_of(value));
    c.result.sigmas.push_back(std::move(s));
    c.result.bounds.push_back(std::move(d));
  }
}

// The error of the kernel itself for the smooth unary maps, as a bound on |computed − f(x)|:
// 4 ulp of the result (8·u·|f(x)|: the libm calls and the few roundings around them), and for
// gelu = ½·x·(1 + erf(x/√2)) also 4·u·|x|: where x < 0, 1 + erf cancels, so erf's own error
// (≲ 2·u), the rounding of 1 + erf (u) and the slope of erf at the rounded x/√2 (≤ 0.97·u)
// are errors of ½·x·(1 + erf) of size up to ~2·u·|x| that no multiple of |f(x)| bounds.
double kernel_error(std::string_view kernel, double x, double fx, double u) {
  const double ulps = 8 * u * std::abs(fx);
  return kernel == "gelu" ? ulps + 4 * u * std::abs(x) : ulps;
}

namespace {

// One cell an elementwise rule reads: its float64 value and error scales.
struct Cell {
  double value = 0, sigma = 0, bound = 0;

  [[nodiscard]] double bar(double lambda) const { return std::min(lambda * sigma, bound); }
  [[nodiscard]] bool known() const { return is_known(sigma, bound); }
  // Its sign is certain and it is not 0: exact and non-zero, or its bar short of 0.
  [[nodiscard]] bool sign_certain(double lambda) const {
    if (!known()) return false;
    if (is_exact(sigma, bound)) return value != 0;
    return std::isfinite(value) && bar(lambda) < std::abs(value);
  }
};

struct Scales {
  double sigma = 0, bound = 0;
};

Scales unknown_scales() {
  return {INFINITY, INFINITY};
}

// Whether f(t) is ±inf or NaN, for the unary kernels that can make one from a finite t (exp
// overflows, sqrt of a negative number); the others never do.
std::optional<bool> non_finite_at(std::string_view kernel, double t) {
  if (kernel == "exp") return !std::isfinite(std::exp(t));
  if (kernel == "sqrt") return !std::isfinite(std::sqrt(t));
  if (kernel == "log") return !std::isfinite(std::log(t));
  return std::nullopt;
}

// A unary kernel's σ and D at one cell (elementwise below). An input that is ±inf or NaN and
// known is exact: every kernel gives its exact limit there (exp(−inf) = 0, tanh(+inf) = 1,
// docs/runtime.md). A finite input whose float64 result is ±inf or NaN (exp(800)) is certain
// where f has that class over all of [x − e, x + e].
// The unary kernels' kinds, told apart once per operation rather than by name at every cell.
enum class Unary { kRelu, kNeg, kStep, kSmooth };

Unary unary_kind(std::string_view kernel) {
  if (kernel == "relu") return Unary::kRelu;
  if (kernel == "neg") return Unary::kNeg;
  if (kernel == "floor" || kernel == "ceil" || kernel == "round") return Unary::kStep;
  return Unary::kSmooth;
}

Scales unary_scales(std::string_view kernel, Unary kind, const Cell& x, double out, double u,
                    double tiny, double lambda) {
  if (!x.known()) return unknown_scales();
  if (!std::isfinite(x.value)) return {};
  const double e = x.bar(lambda);
  if (!std::isfinite(out)) {
    const std::optional<bool> lo = non_finite_at(kernel, x.value - e);
    const std::optional<bool> hi = non_finite_at(kernel, x.value + e);
    const double c = class_scale(lo.value_or(false) && hi.value_or(false));
    return {c, c};
  }
  if (kind == Unary::kRelu) {
    const bool may_pass = x.value > -e;
    return may_pass ? Scales{x.sigma, x.bound} : Scales{};
  }
  if (kind == Unary::kNeg) return {x.sigma, x.bound};
  if (kind == Unary::kStep) {
    // Exact, monotone steps: the result within [f(x − e), f(x + e)], so off by at most that
    // width — 0 (certain) where the interval holds no step (an integer for floor and ceil, a
    // half for round), else the steps it holds (1 for a narrow bar).
    const auto f = [&](double t) {
      return kernel == "floor"  ? std::floor(t)
             : kernel == "ceil" ? std::ceil(t)
                                : std::nearbyint(t);
    };
    const double width = f(x.value + e) - f(x.value - e);
    return {width, width};
  }
  const double slope = max_slope(kernel, x.value, e);
  const double k = kernel_error(kernel, x.value, out, u) + tiny;
  return {hypot_up(slope * x.sigma, k), slope * x.bound + k};
}

// div at one cell: q = a / b. A result that is ±inf or NaN (a is, or b is exactly 0) is certain
// when both signs are (a non-finite or exact-zero operand is exact); one from a finite a and b
// ≠ 0 overflowed, and is left unknown.
Scales div_scales(const Cell& a, const Cell& b, double out, double u, double tiny, double lambda) {
  if (!a.known() || !b.known()) return unknown_scales();
  if (!std::isfinite(out)) {
    const auto exact_zero = [](const Cell& c) {
      return c.value == 0 && is_exact(c.sigma, c.bound);
    };
    const bool overflow = std::isfinite(a.value) && std::isfinite(b.value) && b.value != 0;
    const bool certain = (a.sign_certain(lambda) || exact_zero(a)) &&
                         (b.sign_certain(lambda) || exact_zero(b)) && !overflow;
    const double c = class_scale(certain);
    return {c, c};
  }
  const double margin = std::abs(b.value) - b.bar(lambda);
  if (!(margin > 0)) return unknown_scales();  // the denominator may be 0
  const double q = std::abs(out);
  const double round = u * q + tiny;
  return {std::hypot(a.sigma / margin, q * b.sigma / margin, round),
          (a.bound + q * b.bound) / margin + round};
}

// The range [lo, hi] of pow(t, s) over the box t ∈ [alo, ahi], s ∈ [blo, bhi], where pow is
// continuous on the box and monotone in each variable along every edge, so that its extremes lie
// at the corners (and, for an integer exponent and a base interval holding 0, at t = 0):
//   t ≥ 0, s > 0 or t > 0   t^s = e^(s·ln t), s·ln t bilinear in (s, ln t): extremes at corners
//   an exact integer n      t^n is monotone on each side of 0; n < 0 with 0 in reach is a pole
// Empty elsewhere (a negative base under an inexact exponent may give NaN; 0^s jumps at s = 0)
// and where a corner is not finite.
std::optional<std::pair<double, double>> pow_range(double alo, double ahi, double blo, double bhi) {
  std::array<double, 3> ts{alo, ahi, alo};
  const bool positive_base = alo > 0 || (alo == 0 && blo > 0);
  if (!positive_base) {
    const bool integer_exponent =
        blo == bhi && blo == std::nearbyint(blo) && std::abs(blo) < 0x1p53;
    if (!integer_exponent) return std::nullopt;
    const bool zero_in_reach = alo <= 0 && ahi >= 0;
    if (blo < 0 && zero_in_reach) return std::nullopt;
    if (zero_in_reach) ts[2] = 0;
  }
  double lo = INFINITY, hi = -INFINITY;
  for (double t : ts) {
    for (double e : {blo, bhi}) {
      const double f = std::pow(t, e);
      if (!std::isfinite(f)) return std::nullopt;
      lo = std::min(lo, f);
      hi = std::max(hi, f);
    }
  }
  return std::pair{lo, hi};
}

// pow at one cell: q = a^b. Exact operands: the kernel's own rounding (C's pow, < 1 ulp: 8·u·|q|
// as kernel_error), and a ±inf or NaN result is certain (the same special case in every dtype).
// Otherwise the deviation of q over the box of the operands' bars, from pow_range (exact, not
// first order: a^b is far from linear where b·ln a is large); unknown where the box reaches a
// pole, a NaN or an overflow, or an operand or the result is ±inf or NaN.
Scales pow_scales(const Cell& a, const Cell& b, double out, double u, double tiny, double lambda) {
  if (!a.known() || !b.known()) return unknown_scales();
  const double k = 8 * u * std::abs(out) + tiny;
  if (is_exact(a.sigma, a.bound) && is_exact(b.sigma, b.bound))
    return std::isfinite(out) ? Scales{k, k} : Scales{};
  if (!std::isfinite(out) || !std::isfinite(a.value) || !std::isfinite(b.value))
    return unknown_scales();
  const auto deviation = [&](double ea, double eb) {
    const auto r = pow_range(a.value - ea, a.value + ea, b.value - eb, b.value + eb);
    if (!r) return static_cast<double>(INFINITY);
    const double slack = 0x1p-51 * std::max(std::abs(r->first), std::abs(r->second));
    return std::max(r->second - out, out - r->first) + slack;
  };
  const double sigma = deviation(lambda * a.sigma, lambda * b.sigma) / lambda;
  if (!std::isfinite(sigma)) return unknown_scales();
  return {std::hypot(sigma, k), deviation(a.bound, b.bound) + k};
}

}  // namespace

namespace {

// Runs `f(cells, out) → Scales` at every index point of an operation whose inputs (up to
// three) and one output have one cell per point (IPF windows of 1, broadcasting in the IPFs),
// writing σ and D. Row by row (RowWalk: the trailing dims every operand steps through evenly,
// merged): each operand's cell is located once per segment of a row, then stepped
// (Operand::step); segments in parallel (each point writes its own cell).
template <typename F>
void each_point(const Range& index, const std::vector<Operand<const double>>& v,
                const std::vector<Operand<const double>>& sv,
                const std::vector<Operand<const double>>& dv, const Operand<const double>& y,
                const Operand<double>& sy, const Operand<double>& dy, const F& f) {
  const std::size_t n_in = v.size();
  TAPESTRY_ASSERT(n_in <= 3 && sv.size() == n_in && dv.size() == n_in,
                  "each_point takes up to three inputs with σ and D");
  const RowWalk walk = row_walk(index, [&](std::size_t dim, std::int64_t extent) {
    const auto even = [&](const auto& o) { return o.step(dim) == o.step(dim + 1) * extent; };
    for (std::size_t i = 0; i < n_in; ++i)
      if (!even(v[i]) || !even(sv[i]) || !even(dv[i])) return false;
    return even(y) && even(sy) && even(dy);
  });
  const auto step = [&](const auto& operand) {
    return index.rank() == 0 ? 0 : operand.step(walk.last);
  };
  for_cells(
      walk.count,
      [&](std::size_t lo, std::size_t hi) {
        for (std::size_t q = lo; q < hi; ++q) {
          const RowWalk::Segment seg = walk.segment(q);
          const Point& p = seg.row;
          std::array<const double*, 3> vp{}, sgp{}, dbp{};
          std::array<std::int64_t, 3> vs{}, ss{}, ds{};
          for (std::size_t i = 0; i < n_in; ++i) {
            vp[i] = v[i].cell(p);
            sgp[i] = sv[i].cell(p);
            dbp[i] = dv[i].cell(p);
            vs[i] = step(v[i]);
            ss[i] = step(sv[i]);
            ds[i] = step(dv[i]);
          }
          const double* yp = y.cell(p);
          double* sp = sy.cell(p);
          double* dp = dy.cell(p);
          const std::int64_t step_y = step(y), step_s = step(sy), step_d = step(dy);
          for (std::int64_t j = seg.begin; j < seg.end; ++j) {
            std::array<Cell, 3> cells{};
            for (std::size_t i = 0; i < n_in; ++i)
              cells[i] = Cell{vp[i][j * vs[i]], sgp[i][j * ss[i]], dbp[i][j * ds[i]]};
            const Scales sc = f(cells, yp[j * step_y]);
            sp[j * step_s] = sc.sigma;
            dp[j * step_d] = sc.bound;
          }
        }
      },
      1);
}

}  // namespace

// Unary maps, div and pow, cell by cell through the IPFs (broadcasting lives there). With e the
// bar of x (min(λσx, Dx)) — the widest the input's error can be:
//   relu     σx, Dx where x > −e (else the cell is 0 for sure)
//   floor, ceil, round   exact steps: σ = D = f(x + e) − f(x − e), 0 where no step is in reach
//   smooth   s = max |f′| over [x − e, x + e];  σ = s·σx ⊕ k;  D = s·Dx + k;  k = kernel_error
//   div      m = |b| − e_b (unbounded when ≤ 0);  σ = σa/m ⊕ |a/b|·σb/m ⊕ u·|a/b|,
//            D = (Da + |a/b|·Db)/m + u·|a/b|
//   pow      q = a^b over the box a ± λσa, b ± λσb: σ = max|q′ − q|/λ ⊕ 8u|q|; over a ± Da,
//            b ± Db: D = max|q′ − q| + 8u|q| (pow_range: the extremes are at the box's corners)
// (⊕ adds in quadrature; each formula adds tiny for a flushed subnormal.) Infinite and NaN
// inputs and results: unary_scales, div_scales.
void OperationEval::elementwise(Ctx& c) const {
  std::string_view kernel = c.op.kernel();
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  if (kernel == "mul_scalar" || kernel == "gelu_grad" || kernel == "tanh_grad" ||
      kernel == "sigmoid_grad" || kernel == "sqrt_grad")
    return derivative_product(c, kernel);
  const ir::IpfSignature& signature = *c.op.ipf_signature();
  const Range index = *c.op.ipf_index();
  const auto& in_entries = c.ins;
  const auto& out_entry = c.outs.front();
  const zspace::IndexProjection& out_ipf = checked_ipf(out_entry, signature.outputs, index);
  // σ and D written over the first input's, where this operation reads it for the last time,
  // reads no other cell of it (same cells, same IPF, no second entry of it) and they are its own
  // float64 buffers: each cell reads its input cell before writing it. Else fresh buffers.
  const Range& out_range = graph_.tensor(out_entry.value.tensor).range();
  Buffer* spare_sigma = nullptr;
  Buffer* spare_bound = nullptr;
  if (!in_entries.empty()) {
    const ir::TensorId t0 = in_entries[0].value.tensor;
    auto it = c.spare.find(t0);
    const auto owned = [&](const Buffer* b) {
      return b != nullptr && !b->is_borrowed() && b->dtype() == DType::kFloat64 &&
             b->range() == out_range;
    };
    const bool read_once = std::none_of(in_entries.begin() + 1, in_entries.end(),
                                        [&](const auto& e) { return e.value.tensor == t0; });
    if (it != c.spare.end() && read_once && owned(it->second.first) && owned(it->second.second) &&
        it->second.first == c.in_sigma[0] && it->second.second == c.in_bound[0] &&
        graph_.tensor(t0).range() == out_range &&
        in_entries[0].value.range == out_entry.value.range &&
        checked_ipf(in_entries[0], signature.inputs, index) == out_ipf) {
      spare_sigma = it->second.first;
      spare_bound = it->second.second;
    }
  }
  OutputErrors errors(spare_sigma, spare_bound, out_range);
  Buffer& s = errors.sigma();
  Buffer& d = errors.bound();
  const Operand<const double> y(
      InputPort{c.result.values.front().view(out_entry.value.range), &out_ipf});
  const Operand<double> sy(OutputPort{s.view(out_entry.value.range), &out_ipf});
  const Operand<double> dy(OutputPort{d.view(out_entry.value.range), &out_ipf});
  std::vector<Operand<const double>> v, sv, dv;
  for (std::size_t i = 0; i < in_entries.size(); ++i) {
    const zspace::IndexProjection& ipf = checked_ipf(in_entries[i], signature.inputs, index);
    v.emplace_back(InputPort{c.in_value[i]->view(in_entries[i].value.range), &ipf});
    sv.emplace_back(InputPort{c.in_sigma[i]->view(in_entries[i].value.range), &ipf});
    dv.emplace_back(InputPort{c.in_bound[i]->view(in_entries[i].value.range), &ipf});
  }
  if (v.empty()) return fallback(c);
  const bool div = kernel == "div";
  const bool pow = kernel == "pow";
  const Unary kind = unary_kind(kernel);
  if ((div || pow) && v.size() < 2) return fallback(c);
  // The operands the rule reads: a and b for div and pow, x for the unary kernels.
  const std::size_t k = div || pow ? 2 : 1;
  for (auto* operands : {&v, &sv, &dv})
    operands->erase(operands->begin() + static_cast<std::ptrdiff_t>(k), operands->end());
  each_point(index, v, sv, dv, y, sy, dy, [&](const std::array<Cell, 3>& in, double out) {
    return div   ? div_scales(in[0], in[1], out, c.u, c.tiny, lambda_)
           : pow ? pow_scales(in[0], in[1], out, c.u, c.tiny, lambda_)
                 : unary_scales(kernel, kind, in[0], out, c.u, c.tiny, lambda_);
  });
  c.result.magnitudes.push_back(max_abs_of(c.result.values.front()));
  c.result.sigmas.push_back(std::move(s));
  c.result.bounds.push_back(std::move(d));
  if (spare_sigma != nullptr) c.result.taken.push_back(in_entries[0].value.tensor);
}

// e^t for a masked score's term: 0 below t = −746, where e^t is under half the smallest
// subnormal and std::exp returns 0 too, but through glibc's slow underflow path (which sets
// errno) — most of a softmax rule's time on rows of large logits, where nearly every term is 0.
inline double exp_of_masked(double t) {
  return t < -746 ? 0.0 : std::exp(t);
}

// Softmax's propagated error, relative to y_i. With the inputs moved by |δ_j| ≤ Δ_j,
// y_i' = 1 / (1 + Σ_{j≠i} e^(x_j − x_i + δ_j − δ_i)), so y_i' lies in
//   [y_i / (y_i + e^Δ_i·A_i),  y_i / (y_i + e^−Δ_i·B_i)],
// A_i = Σ_{j≠i} y_j·e^Δ_j + M (M = Σ e^(x_j − m + Δ_j) over the terms that are 0 in float64: a
// bound of what they can add, as the normaliser is ≥ 1), B_i = Σ_{j≠i} y_j·e^−Δ_j. Subtracting
// y_i, with 1 − y_i = Σ_{j≠i} y_j (= S_i) and e^(a+b) − 1 = e^a·(e^b − 1) + (e^a − 1):
//   y_i − low  = y_i·G / (y_i + e^Δ_i·A_i),   G = e^Δ_i·(P_i + M) + expm1(Δ_i)·S_i
//   high − y_i = y_i·H / (y_i + e^−Δ_i·B_i),  H = e^−Δ_i·Q_i − expm1(−Δ_i)·S_i
// with P_i = Σ_{j≠i} y_j·expm1(Δ_j), Q_i = Σ_{j≠i} y_j·(−expm1(−Δ_j)). `spread` returns
// max(G/(…), H/(…)): the exact worst case, ∞ where a Δ is. Each "Σ_{j≠i}" is the row's sum less
// cell i's term; what that subtraction may lose (2^−50 of the row's sum) is added to the
// numerators and taken off the denominators.
//
// To first order both sides are S_i·Δ_i + Σ_{j≠i} y_j·Δ_j + M (dy_i = y_i·(dx_i − Σ_j y_j·dx_j):
// a cell's own move cancels in its normaliser, so a one-hot row's 1 moves only by its
// neighbours' weights). With τ the row's largest live Δ_j, G ≤ e^2τ·(that term) (expm1(x) ≤
// x·e^x, P_i ≤ e^τ·Σ_{j≠i} y_j·Δ_j, and the lower side's denominator is ≥ Σ_j y_j = 1) and
// H ≤ that term (1 − e^−x ≤ x) over a denominator ≥ e^−2τ: both sides are within e^2τ times
// the first-order term, for any τ. Rows with τ ≤ kSmall = 2^−8 take that term times
// factor(τ) = e^2τ·(1 + 2^−30) (`first_order`; the 2^−30 covers the float64 roundings of the
// sums and of Σ_j y_j = 1): at most 0.8% above the exact worst case, at two multiplications a
// cell where `spread` needs five exponentials. Other rows form the sums and take `spread`.
struct SoftmaxRow {
  static constexpr double kSmall = 0x1p-8;
  static constexpr double kLost = 0x1p-50;  // a bound of what a subtraction below may lose
  double s = 0, p = 0, q = 0, a = 0, b = 0, masked = 0;  // Σ y, Σ y·expm1(Δ), Σ y·−expm1(−Δ),
                                                         // Σ y·e^Δ, Σ y·e^−Δ, M
  bool finite = true;
  // A cell's move by up to Δ: expm1(Δ) and expm1(−Δ), each exponential of the rule from them
  // (e^±Δ = 1 + expm1(±Δ), within an ulp of exp's), so a cell costs two calls, made once for
  // the row's sums and its own spread.
  struct Move {
    double up = 0, down = 0;  // expm1(Δ), expm1(−Δ)
    explicit Move(double delta) : up(std::expm1(delta)), down(std::expm1(-delta)) {}
  };
  void add_live(double y, const Move& m) {
    finite = finite && std::isfinite(m.up);
    s += y;
    p += y * m.up;
    q += y * -m.down;
    a += y * (1 + m.up);
    b += y * (1 + m.down);
  }
  void add_masked(double most) { masked += most; }
  // Σ_{j≠i} from the row's `total` and cell i's `own` term: at least (`up`) or at most the truth.
  static double others_up(double total, double own) {
    return std::max(total - own, 0.0) + kLost * total;
  }
  static double others_down(double total, double own) {
    return std::max(total - own - kLost * total, 0.0);
  }
  // What first_order's term is multiplied by in a row whose largest live Δ is τ ≤ kSmall.
  static double factor(double tau) { return std::exp(2 * tau) * (1 + 0x1p-30); }
  // S_i·Δ_i + Σ_{j≠i} y_j·Δ_j + M, from the row's Σ y (`live_sum`) and Σ_j c_j (`sum`: the
  // live y_j·Δ_j and the masked M), times `factor` (factor(τ)).
  static double first_order(double live_sum, double sum, double y, double delta, double factor) {
    return (others_up(live_sum, y) * delta + others_up(sum, y * delta)) * factor;
  }
  [[nodiscard]] double spread(double y, const Move& m) const {
    if (!finite || !std::isfinite(masked)) return std::numeric_limits<double>::infinity();
    const double up = 1 + m.up, down = 1 + m.down;
    const double others_s = others_up(s, y);
    const double g = up * (others_up(p, y * m.up) + masked) + m.up * others_s;
    const double h = down * others_up(q, -y * m.down) - m.down * others_s;
    const double r = std::max(g / (y + up * (others_down(a, y * up) + masked)),
                              h / (y + down * others_down(b, y * down)));
    return std::isnan(r) ? std::numeric_limits<double>::infinity() : r;
  }
};

namespace {

// A mask operand's truth (kernels/masks.yaml: true where ≠ 0, NaN included) as a computation
// may see it: certain where the cell is exact, or finite with its bar short of 0; else either.
enum class Truth { kFalse, kTrue, kEither };

Truth truth_of(const Cell& x, double lambda) {
  if (!x.known()) return Truth::kEither;
  if (is_exact(x.sigma, x.bound)) return x.value != 0 ? Truth::kTrue : Truth::kFalse;
  return std::isfinite(x.value) && x.bar(lambda) < std::abs(x.value) ? Truth::kTrue
                                                                     : Truth::kEither;
}

// Whether a comparison of a and b is decided for every computation within their bars: both
// exact (every computation compares the oracle's values: ±inf and NaN included), or both known
// and finite-or-exact with |a − b| beyond the sum of the bars (and the float64 rounding of
// a − b). An equal pair that is not exact may compare either way (a tie within the bars).
bool comparison_certain(const Cell& a, const Cell& b, double lambda) {
  const bool exact_a = is_exact(a.sigma, a.bound), exact_b = is_exact(b.sigma, b.bound);
  if (exact_a && exact_b) return true;
  if (!a.known() || !b.known()) return false;
  if ((!exact_a && !std::isfinite(a.value)) || (!exact_b && !std::isfinite(b.value))) return false;
  if (std::isnan(a.value) || std::isnan(b.value)) return false;  // an exact NaN against a bar
  const double reach = (exact_a ? 0.0 : a.bar(lambda)) + (exact_b ? 0.0 : b.bar(lambda));
  const double gap = std::abs(a.value - b.value);
  const double slack = 0x1p-52 * std::max(std::abs(a.value), std::abs(b.value));
  return gap > reach + slack;  // an exact ±inf against a finite cell: gap = ∞
}

bool decided(std::string_view kernel, const std::array<Cell, 3>& in, double lambda) {
  if (kernel == "logical_not") return truth_of(in[0], lambda) != Truth::kEither;
  if (kernel.starts_with("logical_")) {
    const Truth a = truth_of(in[0], lambda), b = truth_of(in[1], lambda);
    if (kernel == "logical_and" && (a == Truth::kFalse || b == Truth::kFalse)) return true;
    if (kernel == "logical_or" && (a == Truth::kTrue || b == Truth::kTrue)) return true;
    return a != Truth::kEither && b != Truth::kEither;
  }
  return comparison_certain(in[0], in[1], lambda);  // equal, less, less_equal, greater, …
}

// A rule of one cell per point (each_point) over the inputs at entries `at` of `c` (in that
// order; `first_value`, when given, stands for the first one's values): forms the operands,
// runs `f` and appends the output's magnitudes, σ and D to `c.result`.
template <typename Ctx, typename F>
void per_point_rule(const ir::Graph& graph, Ctx& c, std::span<const int> at,
                    const Buffer* first_value, const F& f) {
  const ir::IpfSignature& signature = *c.op.ipf_signature();
  const Range index = *c.op.ipf_index();
  const auto& out_entry = c.outs.front();
  const zspace::IndexProjection& out_ipf = checked_ipf(out_entry, signature.outputs, index);
  const Range& out_range = graph.tensor(out_entry.value.tensor).range();
  Buffer s(DType::kFloat64, out_range), d(DType::kFloat64, out_range);
  std::vector<Operand<const double>> v, sv, dv;
  for (std::size_t k = 0; k < at.size(); ++k) {
    const auto i = static_cast<std::size_t>(at[k]);
    const zspace::IndexProjection& ipf = checked_ipf(c.ins[i], signature.inputs, index);
    const Buffer& value = k == 0 && first_value != nullptr ? *first_value : *c.in_value[i];
    v.emplace_back(InputPort{value.view(c.ins[i].value.range), &ipf});
    sv.emplace_back(InputPort{c.in_sigma[i]->view(c.ins[i].value.range), &ipf});
    dv.emplace_back(InputPort{c.in_bound[i]->view(c.ins[i].value.range), &ipf});
  }
  const Operand<const double> y(
      InputPort{c.result.values.front().view(out_entry.value.range), &out_ipf});
  const Operand<double> sy(OutputPort{s.view(out_entry.value.range), &out_ipf});
  const Operand<double> dy(OutputPort{d.view(out_entry.value.range), &out_ipf});
  each_point(index, v, sv, dv, y, sy, dy, f);
  c.result.magnitudes.push_back(max_abs_of(c.result.values.front()));
  c.result.sigmas.push_back(std::move(s));
  c.result.bounds.push_back(std::move(d));
}

}  // namespace

// equal, less, less_equal, greater, greater_equal, logical_and/or/xor/not: a 0/1 cell is exact
// (σ = D = 0) where every computation within the operands' bars e = min(λσ, D) decides alike —
//   comparisons  both operands exact, or |a − b| > e_a + e_b (+ 2^−52·max(|a|, |b|))
//   logic        each operand's truth certain (exact, or |x| > e_x), or one that settles the
//                result alone (a certain false for and, a certain true for or)
// — and else off by 1 at most: D = 1, σ = max(1, 1/λ), so the bar is 1 (a mask cell is 0 or 1,
// whatever its operands' errors, even unknown ones). A tie within the bars therefore passes
// either way, and a flipped decision with a margin fails.
void OperationEval::decision(Ctx& c) const {
  std::string_view kernel = c.op.kernel();
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  // The operands by port: a and b, or x (a selection map lists them by name).
  std::vector<int> at{c.entry("a"), c.entry("b")};
  if (at[0] < 0) at = {c.entry("x")};
  if (c.ins.size() != at.size() || std::ranges::find(at, -1) != at.end()) return fallback(c);
  const double l = lambda_;
  const Scales flip{std::max(1.0, 1.0 / l), 1.0};
  per_point_rule(graph_, c, at, nullptr, [&](const std::array<Cell, 3>& in, double) {
    return decided(kernel, in, l) ? Scales{} : flip;
  });
}

// where(cond, a, b). Where cond's truth is certain (truth_of: exact, an integer mask, or a bar
// short of 0) every computation takes the same branch: its σ and D, as they are (an exact ±inf
// branch stays certain; the other branch's ±inf or NaN never matters). Where cond may flip, a
// computation may take either branch:
//   a = b (the same float64 value)   σ = max(σa, σb), D = max(Da, Db)
//   otherwise, both finite           σ = |a − b|/λ + max(σa, σb), D = |a − b| + max(Da, Db)
//                                    (the other branch lies |a − b| away, then its own error)
//   otherwise                        unknown (σ = D = ∞: an ±inf against a finite value)
void OperationEval::choice(Ctx& c) const {
  // The entries by port (a selection map lists them by name: a, b, cond).
  const std::array<int, 3> at{c.entry("cond"), c.entry("a"), c.entry("b")};
  if (c.ins.size() != 3 || std::ranges::find(at, -1) != at.end()) return fallback(c);
  // An integer condition (exact: exact_integer_inputs) read as float64 values.
  const Buffer& cond_value = *c.in_value[static_cast<std::size_t>(at[0])];
  std::optional<Buffer> cond64;
  if (cond_value.dtype() != DType::kFloat64) {
    cond64.emplace(DType::kFloat64, cond_value.range(), Buffer::Uninitialized{});
    const std::span<double> to = cond64->values<double>();
    visit_dtype(cond_value.dtype(), [&]<typename T>() {
      const std::span<const T> from = cond_value.values<T>();
      for (std::size_t i = 0; i < to.size(); ++i) to[i] = static_cast<double>(from[i]);
    });
  }
  const double l = lambda_;
  per_point_rule(
      graph_, c, at, cond64 ? &*cond64 : nullptr, [&](const std::array<Cell, 3>& in, double) {
        const Truth t = truth_of(in[0], l);
        const Cell& a = in[1];
        const Cell& b = in[2];
        if (t == Truth::kTrue) return Scales{a.sigma, a.bound};
        if (t == Truth::kFalse) return Scales{b.sigma, b.bound};
        const bool same = a.value == b.value || (std::isnan(a.value) && std::isnan(b.value));
        if (same) return Scales{std::max(a.sigma, b.sigma), std::max(a.bound, b.bound)};
        if (!std::isfinite(a.value) || !std::isfinite(b.value)) return unknown_scales();
        const double gap = std::abs(a.value - b.value) * (1 + 0x1p-52);
        return Scales{gap / l + std::max(a.sigma, b.sigma), gap + std::max(a.bound, b.bound)};
      });
}

// relu_grad(x, d_result) = x > 0 ? d_result : 0, maximum_grad_a(a, b, d_result) = a ≥ b ?
// d_result : 0 and maximum_grad_b = b > a ? d_result : 0 (NaNs as maximum takes them)
// (kernels/autodiff.yaml): a cell is d_result or exactly 0, by a comparison of the other inputs.
// Where the comparison is certain (comparison_certain: both sides exact, or their bars short of
// each other; relu_grad compares x with an exact 0) every computation takes the same branch:
// d_result's σ and D, or an exact 0. Where it may flip, a computation may give d_result where the
// oracle gives 0 or the reverse:
//   g finite          σ = |g|/λ + σg, D = |g| + Dg   (where's rule with the branch b = 0)
//   g ±inf or NaN     unknown
// (`selection` bounded these by the widest input error, which no 0 obeys: an exact x > 0 and a
// d_result with an error got a bar of 0, and a flipped relu in bf16 was |g| outside its bar.)
void OperationEval::gate(Ctx& c) const {
  const std::string_view kernel = c.op.kernel();
  const bool relu = kernel == "relu_grad";
  const bool max_a = kernel == "maximum_grad_a";
  if (!relu && !max_a && kernel != "maximum_grad_b") return fallback(c);
  std::vector<int> at{c.entry("d_result")};
  if (relu) {
    at.push_back(c.entry("x"));
  } else {
    at.push_back(c.entry("a"));
    at.push_back(c.entry("b"));
  }
  if (c.ins.size() != at.size() || std::ranges::find(at, -1) != at.end()) return fallback(c);
  const double l = lambda_;
  per_point_rule(graph_, c, at, nullptr, [&](const std::array<Cell, 3>& in, double) {
    const Cell& g = in[0];
    const Cell zero{};  // an exact 0
    const Cell& lhs = in[1];
    const Cell& rhs = relu ? zero : in[2];
    if (comparison_certain(lhs, rhs, l)) {
      // As the kernels decide: maximum(a, b) took a where a ≥ b or a is NaN (b NaN: took b).
      const bool took_a =
          std::isnan(lhs.value) || (!std::isnan(rhs.value) && lhs.value >= rhs.value);
      const bool taken = relu ? lhs.value > 0 : took_a == max_a;
      return taken ? Scales{g.sigma, g.bound} : Scales{};
    }
    if (!g.known() || !std::isfinite(g.value)) return unknown_scales();
    const double gap = std::abs(g.value);
    return Scales{gap / l + g.sigma, gap + g.bound};
  });
}

// The derivative kernels of autodiff (kernels/autodiff.yaml): result = g·h(f), g the cotangent
// d_result and h a function of the forward cell f (x or y) —
//   gelu_grad     h(x) = Φ(x) + x·φ(x)   |h′| = |φ(x)(2 − x²)| ≤ 0.8, |h″| = |φ(x)(x³ − 4x)| < 0.78
//   tanh_grad     h(y) = 1 − y²          |h′| = 2|y|
//   sigmoid_grad  h(y) = y·(1 − y)       |h′| = |1 − 2y|
//   sqrt_grad     h(y) = 1 / (2y)        |h′| = 1 / (2y²)
// — and mul_scalar, result = x·s (s = factor / divisor, h = s, g = x). With f and g off by at
// most Δf and Δg, and L the largest |h′| within Δf of f:
//   |g′·h(f′) − g·h(f)| ≤ |h(f)|·Δg + |g|·L·Δf + L·Δf·Δg
// (exact to every order: |h(f′)| ≤ |h(f)| + L·Δf). D takes that with the bounds (L over the
// bound's width), σ the root sum of squares of the first two terms with the σs (L over the bar's
// width), each plus the kernel's own error k:
//   gelu_grad     one rounding of the float64 product: u·|out|, and the float64 h's own error:
//                 2^−53·|g|·(4·Φ + |x·φ|·(4 + x²)) (erfc, exp of the rounded −x²/2, the sum)
//   tanh_grad     y·y, 1 − y² and the product, in the dtype: |g|·u·(y² + |1 − y²|)·(1 + u) +
//   u·|out| sigmoid_grad  1 − y, y·(1 − y) and the product: 2u·|g·y·(1 − y)|·(1 + u) + u·|out|
//   sqrt_grad     2y is exact, the division rounds once: u·|out|
//   mul_scalar    s rounded to the dtype, then the product: (2u + u²)·|out|
// An input of unknown error makes the cell unknown; a result that is ±inf or NaN is certain
// when every input is exact. Where L is ∞ (sqrt_grad's y within its bound of 0, where the run
// may divide by 0) the cell is unknown.
void OperationEval::derivative_product(Ctx& c, std::string_view kernel) const {
  const bool scalar = kernel == "mul_scalar";
  const int forward = scalar ? -1 : (c.entry("x") >= 0 ? c.entry("x") : c.entry("y"));
  const int cotangent = scalar ? c.entry("x") : c.entry("d_result");
  if (cotangent < 0 || (!scalar && forward < 0) || c.ins.size() != (scalar ? 1U : 2U))
    return fallback(c);
  double s = 1;  // mul_scalar's factor / divisor, as its kernel forms it
  if (scalar) {
    const nlohmann::json& params = c.op.params();
    if (params.contains("factor")) s = params.at("factor").get<double>();
    s /= static_cast<double>(params.value("divisor", std::int64_t{1}));
  }
  enum class H { kGelu, kTanh, kSigmoid, kSqrt, kScale };
  const H h_kind = scalar                     ? H::kScale
                   : kernel == "gelu_grad"    ? H::kGelu
                   : kernel == "tanh_grad"    ? H::kTanh
                   : kernel == "sigmoid_grad" ? H::kSigmoid
                                              : H::kSqrt;
  const double u = c.u, tiny = c.tiny, l = lambda_;
  constexpr double kU53 = 0x1p-53;
  // h(f) and the largest |h′| within w of f.
  const auto slope = [h_kind](double f, double w, double hp) -> double {
    switch (h_kind) {
      case H::kGelu:
        return std::min(0.8, hp + 0.78 * w + 0x1p-50);
      case H::kTanh:
        return 2 * (std::abs(f) + w) * (1 + 0x1p-52);
      case H::kSigmoid:
        return (std::abs(1 - 2 * f) + 2 * w) * (1 + 0x1p-52);
      case H::kSqrt: {
        const double lo = std::abs(f) - w;
        return lo > 0 ? 0.5 / (lo * lo) * (1 + 0x1p-50) : INFINITY;
      }
      case H::kScale:
        return 0.0;
    }
    return INFINITY;
  };
  std::vector<int> at{cotangent};
  if (!scalar) at.push_back(forward);
  per_point_rule(graph_, c, at, nullptr, [&](const std::array<Cell, 3>& in, double out) {
    const Cell& g = in[0];
    const Cell f = scalar ? Cell{} : in[1];
    if (!g.known() || !f.known()) return unknown_scales();
    const bool exact = is_exact(g.sigma, g.bound) && is_exact(f.sigma, f.bound);
    if (!std::isfinite(out) || !std::isfinite(g.value) || !std::isfinite(f.value)) {
      const double k = class_scale(exact && !std::isfinite(out));
      return Scales{k, k};
    }
    const double ag = std::abs(g.value), aout = std::abs(out);
    if (h_kind == H::kScale) {
      const double k = (2 * u + u * u) * aout + tiny;
      const double as = std::abs(s);
      return Scales{hypot_up(as * g.sigma, k), as * g.bound + k};
    }
    double h = 0, hp = 0, k = u * aout + tiny;
    const double x = f.value;
    switch (h_kind) {
      case H::kGelu: {
        const double cdf = normal_cdf(x), xpdf = x * normal_pdf(x);
        h = cdf + xpdf;
        hp = std::abs(normal_pdf(x) * (2 - x * x));
        k += kU53 * ag * (4 * cdf + std::abs(xpdf) * (4 + x * x));
        break;
      }
      case H::kTanh:
        h = 1 - x * x;
        k += ag * u * (x * x + std::abs(h)) * (1 + u);
        break;
      case H::kSigmoid:
        h = x * (1 - x);
        k += 2 * u * std::abs(g.value * h) * (1 + u);
        break;
      case H::kSqrt:
        h = 0.5 / x;
        break;
      case H::kScale:
        break;
    }
    const double ah = std::abs(h) * (1 + 0x1p-50);  // h's float64 roundings
    // sqrt_grad with y within its bound of 0: the run's y may be 0, and g/(2y) ±inf or NaN.
    const double l_bar = slope(x, f.bar(l), hp);
    const double l_bound = slope(x, f.bound, hp);
    if (!std::isfinite(l_bar) || !std::isfinite(l_bound)) return unknown_scales();
    const double sigma = hypot_up(hypot_up(ah * g.sigma, ag * l_bar * f.sigma), k);
    const double bound = ah * g.bound + ag * l_bound * f.bound + l_bound * f.bound * g.bound + k;
    return Scales{sigma, bound};
  });
}

// softmax over the last dim of each row: y_i = e^(x_i − m) / Σ_j e^(x_j − m), m = max_j x_j.
//   propagated  dy_i = y_i·(dx_i − Σ_j y_j·dx_j), so to first order |Δy_i| ≤ y_i·(S_i·Δx_i +
//               Σ_{j≠i} c_j), S_i = Σ_{j≠i} y_j: c_j = y_j·Δx_j, or for a term that is 0 in
//               float64 (x_j = −inf, or e^(x_j − m) below the smallest double: a masked score)
//               e^(x_j − m + Δx_j), the most it can be whatever its error — 0 for a mask of −inf
//               or −1e9. That is a bound times e^2τ·(1 + 2^−30), τ the row's largest Δx_j;
//               rows with τ ≤ 2^−8 take it, a row with larger bars takes the exact worst
//               case over every move of its inputs within them instead (SoftmaxRow above: first
//               order fails once Δ ~ 1 — bf16 logits of ~1000 carry D ≈ 4 — and the naive bf16 run
//               of large logits fell 2.5× outside it)
//   rounding    x_i − m: u·|x_i − m|·y_i; exp, the division: 3·u·y_i; the sum of the n terms
//               that are not 0 in float64: √n·u·y_i (σ), (n − 1)·u·y_i (D)
//   y_i = 0     σ = D = e^(x_i − m + e_i + e_k) + tiny (e the bars, k the row's argmax: the
//               normaliser is ≥ e^(−e_k)); where that e^(…) is 0 in float64 the weight is 0 in
//               every computation (both kernels flush e^d below d = −745 at the latest): exact
//   ±inf, NaN   a row holding +inf or only −inf: certain when every cell of the row is known
// Δ = D, or λσ for σ (divided by λ after; σ sums its first-order terms linearly, a safe bound of
// their quadrature).
void OperationEval::softmax(Ctx& c) const {
  const ir::IpfSignature& signature = *c.op.ipf_signature();
  const Range index = *c.op.ipf_index();
  const auto& in_entry = c.ins.front();
  const auto& out_entry = c.outs.front();
  const zspace::IndexProjection& in_ipf = checked_ipf(in_entry, signature.inputs, index);
  const zspace::IndexProjection& out_ipf = checked_ipf(out_entry, signature.outputs, index);
  Buffer s(DType::kFloat64, graph_.tensor(out_entry.value.tensor).range());
  Buffer d(DType::kFloat64, graph_.tensor(out_entry.value.tensor).range());
  const Operand<const double> x(InputPort{c.in_value[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const double> sx(InputPort{c.in_sigma[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const double> dx(InputPort{c.in_bound[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const double> y(
      InputPort{c.result.values.front().view(out_entry.value.range), &out_ipf});
  const Operand<double> sy(OutputPort{s.view(out_entry.value.range), &out_ipf});
  const Operand<double> dy(OutputPort{d.view(out_entry.value.range), &out_ipf});
  const std::size_t last = x.rank() - 1;
  const std::int64_t n = x.window(last);
  const std::int64_t step_x = x.stride(last), step_y = y.stride(last);
  const double l = lambda_;
  for_cells(
      static_cast<std::size_t>(index.size()),
      [&](std::size_t lo, std::size_t hi) {
        for (std::size_t q = lo; q < hi; ++q) {
          const Point p = unravel(index, static_cast<std::int64_t>(q));
          const double* xr = x.cell(p);
          const double* sr = sx.cell(p);
          const double* dr = dx.cell(p);
          const double* yr = y.cell(p);
          double* s_out = sy.cell(p);
          double* d_out = dy.cell(p);
          if (xr == nullptr) continue;
          const auto at = [](const double* row, std::int64_t j, std::int64_t step) {
            return row[j * step];
          };
          // 1. The row's maximum, its argmax's bar, whether every cell is known.
          double m = -std::numeric_limits<double>::infinity(), e_max = 0;
          bool known = true;
          for (std::int64_t j = 0; j < n; ++j) {
            const double xj = at(xr, j, step_x);
            known = known && is_known(at(sr, j, step_x), at(dr, j, step_x));
            if (xj > m || j == 0) {
              m = std::max(m, xj);
              e_max = std::min(l * at(sr, j, step_x), at(dr, j, step_x));
            }
          }
          // 2. S = Σ_j c_j for σ and for D, and the terms of the normaliser that are not 0;
          //    the rows' sums of the exact worst case (SoftmaxRow) at Δ = λσ and at Δ = D.
          double s_sum = 0, d_sum = 0, live = 0, live_sum = 0, s_widest = 0, d_widest = 0;
          for (std::int64_t j = 0; j < n; ++j) {
            const double yj = at(yr, j, step_y), xj = at(xr, j, step_x);
            const double sj = at(sr, j, step_x), dj = at(dr, j, step_x);
            if (yj != 0) {
              live_sum += yj;
              s_sum += yj * sj;
              d_sum += yj * dj;
              s_widest = std::max(s_widest, l * sj);
              d_widest = std::max(d_widest, dj);
              ++live;
            } else {
              s_sum += exp_of_masked(xj - m + std::min(l * sj, dj));
              d_sum += exp_of_masked(xj - m + dj);
            }
          }
          const bool s_small = s_widest <= SoftmaxRow::kSmall;
          const bool d_small = d_widest <= SoftmaxRow::kSmall;
          const double s_factor = s_small ? SoftmaxRow::factor(s_widest) : 0;
          const double d_factor = d_small ? SoftmaxRow::factor(d_widest) : 0;
          SoftmaxRow s_row, d_row;
          // The live cells' moves at Δ = λσ and at Δ = D, for the rows that take `spread`.
          thread_local std::vector<SoftmaxRow::Move> s_moves, d_moves;
          s_moves.clear();
          d_moves.clear();
          for (std::int64_t j = 0; j < n && !(s_small && d_small); ++j) {
            const double yj = at(yr, j, step_y), xj = at(xr, j, step_x);
            const double sj = at(sr, j, step_x), dj = at(dr, j, step_x);
            if (yj != 0) {
              if (!s_small) s_row.add_live(yj, s_moves.emplace_back(l * sj));
              if (!d_small) d_row.add_live(yj, d_moves.emplace_back(dj));
            } else {
              s_row.add_masked(exp_of_masked(xj - m + std::min(l * sj, dj)));
              d_row.add_masked(exp_of_masked(xj - m + dj));
            }
          }
          // The propagated term of live cell i, the `k`th, relative to y_i (SoftmaxRow), Δ = λσ
          // or D.
          const auto propagated = [&](const SoftmaxRow& row, bool small, double factor, double sum,
                                      double yi, double delta,
                                      const std::vector<SoftmaxRow::Move>& moves, std::size_t k) {
            return small ? SoftmaxRow::first_order(live_sum, sum, yi, delta, factor)
                         : row.spread(yi, moves[k]);
          };
          // 3. Each output cell.
          const double root_live = std::sqrt(live);
          for (std::int64_t j = 0, k = 0; j < n; ++j) {
            const double yi = at(yr, j, step_y), xi = at(xr, j, step_x);
            const double si = at(sr, j, step_x), di = at(dr, j, step_x);
            double& so = s_out[j * step_y];
            double& dout = d_out[j * step_y];
            if (!std::isfinite(yi)) {  // a live cell (not 0) without a move of its own
              ++k;
              so = dout = class_scale(known);
            } else if (yi == 0) {
              const double most = exp_of_masked(xi - m + std::min(l * si, di) + e_max);
              so = dout = most == 0 ? 0.0 : most + c.tiny;  // e^(…) = 0: the kernels give 0 too
            } else {
              const double own = c.u * yi * (std::abs(xi - m) + 3) + c.tiny;
              const auto live_k = static_cast<std::size_t>(k++);
              const double s_prop =
                  propagated(s_row, s_small, s_factor, l * s_sum, yi, l * si, s_moves, live_k) / l;
              const double d_prop =
                  propagated(d_row, d_small, d_factor, d_sum, yi, di, d_moves, live_k);
              so = hypot_up(yi * s_prop, own + c.u * yi * root_live);
              dout = yi * d_prop + own + c.u * yi * std::max(live - 1, 0.0);
            }
            // Every computation of a row of known cells gives a value in [0, 1] (e_i ≤ Σ, each
            // rounding monotone), so it is off by at most max(y, 1 − y): a row whose bars reach
            // far enough to swap its largest terms (bf16 logits of 3·10^6, bars of 10^4) is
            // checked, not unbounded.
            if (known && std::isfinite(yi)) {
              const double cap = std::max(yi, 1 - yi) * (1 + 0x1p-52) + c.tiny;
              so = std::min(so, cap);
              dout = std::min(dout, cap);
            }
          }
        }
      },
      kCellChunk / static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
  c.result.magnitudes.push_back(1);
  c.result.sigmas.push_back(std::move(s));
  c.result.bounds.push_back(std::move(d));
}

// mean, avg_pool2d: out = Σ_k x_k / n over the cell's n = terms inputs, summed in float64 and
// rounded once (n + 1 roundings counted, a safe over-estimate for f32). The kernel is linear,
// so run on σ and on D it gives Σσ/n ≥ √(Σσ²)/n and ΣD/n; on |x| the magnitude A = Σ|x|/n.
//   σ = K(σx) ⊕ √(n+1)·u·A;  D = K(Dx) + γ(n+1)·A
// A cell that is ±inf or NaN is certain where K(σx) and K(Dx) are finite.
void OperationEval::average(Ctx& c) const {
  const Buffer abs_x = abs_of(*c.in_value[0]);
  std::vector<Buffer> a = call(kernel_, {&abs_x}, DType::kFloat64);
  std::vector<Buffer> s = call(kernel_, {c.in_sigma[0]}, DType::kFloat64);
  std::vector<Buffer> d = call(kernel_, {c.in_bound[0]}, DType::kFloat64);
  for (std::size_t o = 0; o < a.size(); ++o) {
    const std::span<const double> av = a[o].values<double>();
    const std::span<const double> value = c.result.values[o].values<double>();
    const std::span<double> sv = s[o].values<double>(), dv = d[o].values<double>();
    const double n = terms_ + 1;
    for_cells(av.size(), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) {
        if (!std::isfinite(value[i])) {  // an input is ±inf: certain if no error is unknown
          sv[i] = dv[i] = class_scale(is_known(sv[i], dv[i]));
          continue;
        }
        const Rounding r = rounding(n, c.u, c.tiny, av[i]);
        sv[i] = std::hypot(sv[i], r.proxy);
        dv[i] += r.bound;
      }
    });
    c.result.magnitudes.push_back(max_of(a[o]));
    c.result.sigmas.push_back(std::move(s[o]));
    c.result.bounds.push_back(std::move(d[o]));
  }
}

// variance of a row of n: v = Σ_j d_j² / n, d_j = x_j − m. With input errors e_j,
//   v' − v = (2/n)·Σ d_j·e_j + (1/n)·Σ (e_j − ē)²      (Σ d_j = 0 cancels the mean's error)
// so σ = (2/n)·√(Σ (d_j·σ_j)²) + 4·σmax² and D = (2/n)·Σ|d_j|·D_j + 4·Dmax². The kernel's own
// error (float64 passes, one final rounding, n + 3 roundings counted): an error δ ≤ γn·mean|x|
// in m adds δ²; the deviations, squares and sum add γ(n+3)·v (σ: √(n+3)·u·v).
void OperationEval::variance(Ctx& c) const {
  const ir::IpfSignature& signature = *c.op.ipf_signature();
  const Range index = *c.op.ipf_index();
  const auto& in_entry = c.ins.front();
  const auto& out_entry = c.outs.front();
  const zspace::IndexProjection& in_ipf = checked_ipf(in_entry, signature.inputs, index);
  const zspace::IndexProjection& out_ipf = checked_ipf(out_entry, signature.outputs, index);
  Buffer s(DType::kFloat64, graph_.tensor(out_entry.value.tensor).range());
  Buffer d(DType::kFloat64, graph_.tensor(out_entry.value.tensor).range());
  const Operand<const double> x(InputPort{c.in_value[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const double> sx(InputPort{c.in_sigma[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const double> dx(InputPort{c.in_bound[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const double> y(
      InputPort{c.result.values.front().view(out_entry.value.range), &out_ipf});
  const Operand<double> sy(OutputPort{s.view(out_entry.value.range), &out_ipf});
  const Operand<double> dy(OutputPort{d.view(out_entry.value.range), &out_ipf});
  const auto axis = static_cast<std::size_t>(c.op.params().at("dim").get<std::int64_t>());
  const std::int64_t n = x.window(axis);
  const double nd = static_cast<double>(n);
  const Range row_starts = Range::of_shape(y.window());
  for_cells(
      static_cast<std::size_t>(index.size()),
      [&](std::size_t lo, std::size_t hi) {
        for (std::size_t q = lo; q < hi; ++q) {
          const Point p = unravel(index, static_cast<std::int64_t>(q));
          for (const Point& w : row_starts.points()) {
            std::int64_t ox = 0, oy = 0;
            for (std::size_t k = 0; k < w.rank(); ++k) {
              ox += w[k] * x.stride(k);
              oy += w[k] * y.stride(k);
            }
            const double* xr = x.cell(p) + ox;
            const double* sr = sx.cell(p) + ox;
            const double* dr = dx.cell(p) + ox;
            const std::int64_t step = x.stride(axis);
            double m = 0, abs_mean = 0;
            for (std::int64_t j = 0; j < n; ++j) {
              m += xr[j * step];
              abs_mean += std::abs(xr[j * step]);
            }
            m /= nd;
            abs_mean /= nd;
            double s2 = 0, dlin = 0, smax = 0, dmax = 0;
            bool known = true;
            for (std::int64_t j = 0; j < n; ++j) {
              known = known && is_known(sr[j * step], dr[j * step]);
              const double dev = std::abs(xr[j * step] - m);
              s2 += (dev * sr[j * step]) * (dev * sr[j * step]);
              dlin += dev * dr[j * step];
              smax = std::max(smax, sr[j * step]);
              dmax = std::max(dmax, dr[j * step]);
            }
            const double v = y.cell(p)[oy];
            if (!std::isfinite(v)) {  // the row holds ±inf or NaN: certain if every cell is known
              sy.cell(p)[oy] = dy.cell(p)[oy] = class_scale(known);
              continue;
            }
            const Rounding r = rounding(nd + 3, c.u, c.tiny, v);
            const Rounding rm = rounding(nd, c.u, 0, abs_mean);
            sy.cell(p)[oy] =
                std::hypot(2 / nd * std::sqrt(s2) + 4 * smax * smax, r.proxy) + rm.bound * rm.bound;
            dy.cell(p)[oy] = 2 / nd * dlin + 4 * dmax * dmax + r.bound + rm.bound * rm.bound;
          }
        }
      },
      kCellChunk / static_cast<std::size_t>(std::max<std::int64_t>(n * row_starts.size(), 1)));
  c.result.magnitudes.push_back(max_abs_of(c.result.values.front()));
  c.result.sigmas.push_back(std::move(s));
  c.result.bounds.push_back(std::move(d));
}

// transpose, permute, reshape, slice, pad, gather: σ and D move with the data; added pad cells
// are exact. The kernel runs on the σ and D of the float inputs and the values of the integer
// ones (gather's indices: which cells move where); indices that may be wrong (an argmax near a
// tie) leave every output cell unknown.
void OperationEval::move(Ctx& c) const {
  nlohmann::json params = c.op.params();
  if (params.is_object() && params.contains("value")) params["value"] = 0;
  std::vector<const Buffer*> in_sigma = c.in_sigma, in_bound = c.in_bound;
  for (std::size_t i = 0; i < in_sigma.size(); ++i) {
    if (ir::is_float(c.in_value[i]->dtype())) continue;
    in_sigma[i] = in_bound[i] = c.in_value[i];
  }
  // An integer input that is itself uncertain (an argmax's position, rule `index`) may pick
  // another cell altogether: then nothing is known of the outputs.
  bool picks_uncertain = false;
  for (std::size_t i = 0; i < in_sigma.size() && !picks_uncertain; ++i) {
    if (ir::is_float(c.in_value[i]->dtype()) || c.in_sigma[i] == nullptr) continue;
    picks_uncertain = max_of(*c.in_sigma[i]) > 0 || max_of(*c.in_bound[i]) > 0;
  }
  std::vector<Buffer> sigmas = call(kernel_, in_sigma, DType::kFloat64, &params);
  std::vector<Buffer> bounds = call(kernel_, in_bound, DType::kFloat64, &params);
  if (picks_uncertain) {
    for (std::vector<Buffer>* scales : {&sigmas, &bounds})
      for (Buffer& b : *scales) b = map_values(b, [](double) { return INFINITY; });
  }
  for (std::size_t o = 0; o < sigmas.size(); ++o) {
    c.result.magnitudes.push_back(max_abs_of(c.result.values[o]));
    c.result.sigmas.push_back(std::move(sigmas[o]));
    c.result.bounds.push_back(std::move(bounds[o]));
  }
}

// argmax, argmin: the result is a position i along the searched axis, an integer; its bar is
// in positions. A cell r of the row may be the computed extremum only if its value can beat the
// cells before it and tie or beat those after it (first-index semantics; select_last_index: the
// reverse), with every cell anywhere in [v − e, v + e] (e = λσ for σ, D for D):
//   argmax   v_r + e_r > max_{r′<r} (v_r′ − e_r′)  and  v_r + e_r ≥ max_{r′>r} (v_r′ − e_r′)
//   argmin   the same on −v
//   NaN      a NaN whose class is certain wins (the first; select_last_index the last): then only
//            it and the cells of unknown error (σ not finite: they may be NaN) before it (after
//            it) may be picked; a cell of unknown error may always be picked
// The bar is max |r − i*| over those cells, i* the float64 result: 0 where the extremum stands
// apart from the rest by more than their errors (the usual case: a wrong index fails), the
// distance to the farthest near-tie otherwise. σ = that bar (with e = λσ) / λ, D = the bar with
// e = D; both finite, so an index is never unchecked.
void OperationEval::index(Ctx& c) const {
  const bool is_min = c.op.kernel() == "argmin";
  const bool last = c.op.params().value("select_last_index", false);
  const auto axis = static_cast<std::size_t>(c.op.params().value("axis", 0));
  const ir::IpfSignature& signature = *c.op.ipf_signature();
  const Range index_box = *c.op.ipf_index();
  const auto& in_entry = c.ins.front();
  const auto& out_entry = c.outs.front();
  const zspace::IndexProjection& in_ipf = checked_ipf(in_entry, signature.inputs, index_box);
  const zspace::IndexProjection& out_ipf = checked_ipf(out_entry, signature.outputs, index_box);
  const Range& out_range = graph_.tensor(out_entry.value.tensor).range();
  Buffer s(DType::kFloat64, out_range), d(DType::kFloat64, out_range);
  const Operand<const double> x(InputPort{c.in_value[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const double> sx(InputPort{c.in_sigma[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const double> dx(InputPort{c.in_bound[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const std::int64_t> picked(
      InputPort{c.result.values.front().view(out_entry.value.range), &out_ipf});
  const Operand<double> so(OutputPort{s.view(out_entry.value.range), &out_ipf});
  const Operand<double> dout(OutputPort{d.view(out_entry.value.range), &out_ipf});
  const std::int64_t n = x.window(axis);
  const std::int64_t xs = x.stride(axis), ss = sx.stride(axis), ds = dx.stride(axis);
  const double l = lambda_;
  // The bar of one row: `err(r)` is cell r's half-width (∞: unknown).
  const auto row_bar = [&](const double* v, std::int64_t i_star, const auto& err,
                           const auto& unknown, std::vector<double>& after) {
    const auto score = [&](std::int64_t r) { return is_min ? -v[r * xs] : v[r * xs]; };
    // A certain NaN decides the row.
    std::int64_t nan_at = -1;
    for (std::int64_t r = 0; r < n; ++r) {
      const std::int64_t q = last ? n - 1 - r : r;
      if (std::isnan(v[q * xs]) && !unknown(q)) {
        nan_at = q;
        break;
      }
    }
    double bar = 0;
    const auto consider = [&](std::int64_t r) {
      bar = std::max(bar, static_cast<double>(std::abs(r - i_star)));
    };
    if (nan_at >= 0) {
      consider(nan_at);
      for (std::int64_t r = 0; r < n; ++r)
        if (unknown(r) && (last ? r > nan_at : r < nan_at)) consider(r);
      return bar;
    }
    // after[r] = max_{r′>r} (score − err); the cells before r as a running max.
    after.assign(static_cast<std::size_t>(n), -INFINITY);
    for (std::int64_t r = n - 2; r >= 0; --r) {
      const auto u = static_cast<std::size_t>(r);
      after[u] = std::max(after[u + 1], score(r + 1) - err(r + 1));
    }
    double before = -INFINITY;
    for (std::int64_t r = 0; r < n; ++r) {
      const double hi = score(r) + err(r);
      const double later = after[static_cast<std::size_t>(r)];
      const bool may =
          unknown(r) || (last ? hi >= before && hi > later : hi > before && hi >= later);
      if (may) consider(r);
      before = std::max(before, score(r) - err(r));
    }
    return bar;
  };
  std::vector<double> after;
  for (const Point& p : index_box.points()) {
    const double* v = x.cell(p);
    const double* sv = sx.cell(p);
    const double* dv = dx.cell(p);
    const std::int64_t i_star = *picked.cell(p);
    const auto unknown = [&](std::int64_t r) { return !is_known(sv[r * ss], dv[r * ds]); };
    const auto with_sigma = [&](std::int64_t r) {
      const double e = l * sv[r * ss];
      return std::isfinite(e) ? e : INFINITY;
    };
    const auto with_bound = [&](std::int64_t r) {
      const double e = dv[r * ds];
      return std::isnan(e) ? INFINITY : e;
    };
    *so.cell(p) = row_bar(v, i_star, with_sigma, unknown, after) / l;
    *dout.cell(p) = row_bar(v, i_star, with_bound, unknown, after);
  }
  c.result.magnitudes.push_back(static_cast<double>(n));
  c.result.sigmas.push_back(std::move(s));
  c.result.bounds.push_back(std::move(d));
}

// The integer inputs of a float operation under the worst-case rule — cross_entropy's class
// labels, adam's step count (kernels/training.yaml) — are exact: σ = D = 0, zero buffers that
// the returned vector owns and c's σ and D entries point at (fallback reads no integer values).
std::vector<Buffer> OperationEval::exact_integer_inputs(Ctx& c) {
  std::vector<Buffer> zeros;
  zeros.reserve(c.in_value.size());
  for (std::size_t i = 0; i < c.in_value.size(); ++i) {
    if (ir::is_float(c.in_value[i]->dtype()) || c.in_sigma[i] != nullptr) continue;
    zeros.emplace_back(DType::kFloat64, c.in_value[i]->range());
    c.in_sigma[i] = c.in_bound[i] = &zeros.back();
  }
  return zeros;
}

// No error model (fused stages, user kernels): the worst case over the whole operation,
// 4·u·K·max|inputs| + the largest bar of the inputs, as one bound for every output cell; σ = D
// (a bound is a valid scale: λ·σ ≥ D, so the bar is D). Inputs that are ±inf or NaN and exact
// (a mask) do not enter max|inputs|; an input cell of unknown error makes every cell unknown.
// An output cell that is ±inf or NaN is certain when every input cell is known.
void OperationEval::fallback(Ctx& c) const {
  double m = 0, e = 0;
  for (std::size_t i = 0; i < c.in_value.size(); ++i) {
    if (!ir::is_float(c.in_value[i]->dtype())) continue;  // exact_integer_inputs: σ = D = 0
    for (double v : c.in_value[i]->values<double>())
      if (std::isfinite(v)) m = std::max(m, std::abs(v));
    const Buffer bars = bar_of(*c.in_sigma[i], *c.in_bound[i]);
    for (double b : bars.values<double>()) e = std::isnan(b) ? INFINITY : std::max(e, b);
  }
  const double bound = e + 4 * c.u * terms_ * std::max(m, 1.0);
  const double class_bound = class_scale(std::isfinite(e));
  std::string kernel(c.op.kernel());
  c.result.unmodelled = kernel;
  for (const Buffer& v : c.result.values) {
    const auto scale = [bound, class_bound](double x) {
      return std::isfinite(x) ? bound : class_bound;
    };
    c.result.sigmas.push_back(map_values(v, scale));
    c.result.bounds.push_back(map_values(v, scale));
    c.result.magnitudes.push_back(INFINITY);
  }
}

}  // namespace tapestry::runtime::detail
