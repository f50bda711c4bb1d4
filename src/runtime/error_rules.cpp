// One operation's float64 evaluation and error rule (error_rules.h; the table is in oracle.h).
#include "error_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <numbers>

#include "run_support.h"
#include "tapestry/runtime/kernel.h"

namespace tapestry::runtime::detail {

namespace {

enum class Rule { kBilinear, kAdditive, kSelection, kElementwise, kSoftmax, kMove, kFallback };

// Which rule a kernel follows; `sum`, `max` and `reduce` depend on their monoid.
Rule rule_of(std::string_view kernel, std::optional<ir::Monoid> monoid) {
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  if (kernel == "linear" || kernel == "matmul" || kernel == "conv2d" || kernel == "mul")
    return Rule::kBilinear;
  if (kernel == "add" || kernel == "sub" || kernel == "bias_add") return Rule::kAdditive;
  if (kernel == "sum" || kernel == "max" || kernel == "reduce") {
    if (!monoid) return Rule::kFallback;
    if (*monoid == ir::Monoid::kSum) return Rule::kAdditive;
    if (*monoid == ir::Monoid::kProd) return Rule::kFallback;
    return Rule::kSelection;
  }
  if (kernel == "maximum") return Rule::kSelection;
  if (kernel == "relu" || kernel == "neg" || kernel == "exp" || kernel == "tanh" ||
      kernel == "sigmoid" || kernel == "gelu" || kernel == "div")
    return Rule::kElementwise;
  if (kernel == "softmax") return Rule::kSoftmax;
  if (kernel == "transpose" || kernel == "permute" || kernel == "reshape" || kernel == "pad")
    return Rule::kMove;
  return Rule::kFallback;
}

// Kernels that give exact results on small integers (every value they form is a sum, product,
// selection or copy of integers).
bool is_exact_kernel(std::string_view kernel, Rule rule) {
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  if (rule == Rule::kElementwise) return kernel == "relu" || kernel == "neg";
  return rule != Rule::kSoftmax && rule != Rule::kFallback;
}

bool is_float(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64;
}

Buffer map_values(const Buffer& in, const std::function<double(double)>& f) {
  Buffer out(DType::kFloat64, in.range(), Buffer::Uninitialized{});
  const std::span<const double> from = in.values<double>();
  const std::span<double> to = out.values<double>();
  for (std::size_t i = 0; i < from.size(); ++i) to[i] = f(from[i]);
  return out;
}

Buffer abs_of(const Buffer& b) {
  return map_values(b, [](double v) { return std::abs(v); });
}
Buffer square_of(const Buffer& b) {
  return map_values(b, [](double v) { return v * v; });
}

double max_of(const Buffer& b) {
  double m = 0;
  for (double v : b.values<double>()) m = std::max(m, v);  // NaN is skipped
  return m;
}

bool all_zero(const Buffer& b) {
  const std::span<const double> v = b.values<double>();
  return std::all_of(v.begin(), v.end(), [](double x) { return x == 0; });
}

// min(√n, n/λ): the probabilistic (Higham & Mary) or the worst-case factor, whichever is
// smaller once multiplied by λ.
double rounding_factor(double n, double lambda) {
  return n <= 0 ? 0 : std::min(std::sqrt(n), n / lambda);
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
  // gelu: f′(t) = Φ(t) + t·φ(t) lies in [−0.17, 1.13]; on a narrow interval the largest of
  // three samples (+5%) bounds it, on a wide one the global maximum does.
  if (w > 0.5) return 1.13;
  double m = 0;
  for (double t : {x - w, x, x + w}) m = std::max(m, std::abs(normal_cdf(t) + t * normal_pdf(t)));
  return 1.05 * m;
}

}  // namespace

// Everything one rule works on.
struct OperationEval::Ctx {
  const BufferMap& value;
  const BufferMap& sigma;
  const ir::OperationView op;
  std::vector<const Buffer*> in_value;             // per input entry
  std::vector<const Buffer*> in_sigma;             // per input entry (float inputs)
  std::vector<ir::SelectionMap::Entry> ins, outs;  // the selections, in order
  double u = 0;                                    // unit roundoff of the computation's dtype
  double tiny = 0;                                 // its smallest normal number
  RuleResult result;

  // The input entry named `name` (position 0), or -1.
  [[nodiscard]] int entry(std::string_view name) const {
    for (std::size_t i = 0; i < ins.size(); ++i) {
      if (ins[i].name == name && ins[i].position == 0) return static_cast<int>(i);
    }
    return -1;
  }
};

OperationEval::OperationEval(const ir::Graph& graph, ir::OperationId op,
                             const KernelRegistry& kernels, double lambda)
    : graph_(graph),
      op_(op),
      kernels_(kernels),
      kernel_(kernels.lookup(graph.operation(op).kernel(), node_name(graph, op))),
      lambda_(lambda) {
  const ir::OperationView view = graph.operation(op);
  const Range& index = *view.ipf_index();
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
  const Range& index = *op.ipf_index();
  std::vector<Buffer> outputs;
  for (const auto& e : op.outputs().entries())
    outputs.emplace_back(dtype, graph_.tensor(e.value.tensor).range());
  KernelCall kc{.kernel = op.kernel(),
                .operation = graph_.node(op_).label().empty()
                                 ? graph_.key(op_)
                                 : std::string_view(graph_.node(op_).label()),
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
  kernel(kc);
  return outputs;
}

RuleResult OperationEval::run(const BufferMap& value, const BufferMap& sigma) const {
  const ir::OperationView op = graph_.operation(op_);
  Ctx c{.value = value, .sigma = sigma, .op = op};
  DType dtype = DType::kFloat64;
  for (const auto& e : op.inputs().entries()) {
    c.ins.push_back(e);
    c.in_value.push_back(&value.at(e.value.tensor));
    auto s = sigma.find(e.value.tensor);
    c.in_sigma.push_back(s == sigma.end() ? nullptr : &s->second);
  }
  for (const auto& e : op.outputs().entries()) {
    c.outs.push_back(e);
    c.result.outputs.push_back(e.value.tensor);
    dtype = tensor_dtype(graph_, e.value.tensor);
  }
  const bool floats = is_float(dtype);
  c.u = dtype == DType::kFloat32 ? 0x1p-24 : 0x1p-53;
  c.tiny = dtype == DType::kFloat32 ? FLT_MIN : DBL_MIN;
  c.result.values = call(kernel_, c.in_value, floats ? DType::kFloat64 : dtype);

  std::optional<ir::Monoid> monoid;
  if (!op.body().reductions.empty()) monoid = op.body().reductions.front().monoid;
  const Rule rule = rule_of(op.kernel(), monoid);
  c.result.exact = is_exact_kernel(op.kernel(), rule);
  if (!floats) return std::move(c.result);  // integers: exact, no sigma
  for (const Buffer* s : c.in_sigma) {
    if (s == nullptr)
      throw Error(
          fmt::format("operation '{}' mixes integer and float tensors", node_name(graph_, op_)));
  }
  switch (rule) {
    case Rule::kBilinear:
      bilinear(c);
      break;
    case Rule::kAdditive:
      additive(c, op.kernel() == "sub" ? "add" : op.kernel());
      break;
    case Rule::kSelection:
      selection(c, monoid == ir::Monoid::kMin);
      break;
    case Rule::kElementwise:
      elementwise(c);
      break;
    case Rule::kSoftmax:
      softmax(c);
      break;
    case Rule::kMove:
      move(c);
      break;
    case Rule::kFallback:
      fallback(c);
      break;
  }
  return std::move(c.result);
}

// linear, matmul, conv2d, mul: out = Σ_k x_k·w_k (+ bias).
//   A = K(|x|, |w|, |bias|)                       Σ|terms| of each cell
//   P = K(σx², w², σbias²) + K(x², σw², 0)         propagated variance
//   σ = √(P + (u·r(n)·A + n·tiny)²)               n = terms (+1 with a bias)
void OperationEval::bilinear(Ctx& c) const {
  const int x = c.entry("x") >= 0 ? c.entry("x") : c.entry("a");
  const int w = c.entry("w") >= 0 ? c.entry("w") : c.entry("b");
  const int bias = c.entry("bias");
  if (x < 0 || w < 0) return fallback(c);
  const std::size_t n_in = c.in_value.size();
  std::vector<Buffer> abs_in, first, second;
  abs_in.reserve(n_in);
  first.reserve(n_in);
  second.reserve(n_in);
  bool first_needed = false, second_needed = false;
  for (std::size_t i = 0; i < n_in; ++i) {
    const auto idx = static_cast<int>(i);
    abs_in.push_back(abs_of(*c.in_value[i]));
    const bool sigma_zero = all_zero(*c.in_sigma[i]);
    // first: σ² on x and the bias, values² on w; second: values² on x, σ² on w, bias 0.
    if (idx == w) {
      first.push_back(square_of(*c.in_value[i]));
      second.push_back(square_of(*c.in_sigma[i]));
      second_needed |= !sigma_zero;
    } else if (idx == x || idx == bias) {
      first.push_back(square_of(*c.in_sigma[i]));
      second.push_back(idx == x ? square_of(*c.in_value[i])
                                : Buffer(DType::kFloat64, c.in_value[i]->range()));
      first_needed |= !sigma_zero;
    } else {
      return fallback(c);
    }
  }
  const auto pointers = [](const std::vector<Buffer>& v) {
    std::vector<const Buffer*> p;
    for (const Buffer& b : v) p.push_back(&b);
    return p;
  };
  std::vector<Buffer> a = call(kernel_, pointers(abs_in), DType::kFloat64);
  std::vector<Buffer> p1, p2;
  if (first_needed) p1 = call(kernel_, pointers(first), DType::kFloat64);
  if (second_needed) p2 = call(kernel_, pointers(second), DType::kFloat64);
  const double n = terms_ + (bias >= 0 ? 1 : 0);
  const double r = rounding_factor(n, lambda_);
  for (std::size_t o = 0; o < a.size(); ++o) {
    Buffer s(DType::kFloat64, a[o].range(), Buffer::Uninitialized{});
    const std::span<const double> av = a[o].values<double>();
    const std::span<double> sv = s.values<double>();
    for (std::size_t i = 0; i < sv.size(); ++i) {
      const double round = c.u * r * av[i] + n * c.tiny;
      double var = round * round;
      if (first_needed) var += p1[o].values<double>()[i];
      if (second_needed) var += p2[o].values<double>()[i];
      sv[i] = std::sqrt(var);
    }
    c.result.magnitudes.push_back(max_of(a[o]));
    c.result.sigmas.push_back(std::move(s));
  }
}

// add, sub (as add), bias_add, and sum reductions: out = Σ terms.
//   A = twin(|terms|);  P = twin(σ²);  σ = √(P + (u·r(n)·A + n·tiny)²),
//   n = the additions: 1 for a binary op, terms − 1 for a reduction.
void OperationEval::additive(Ctx& c, std::string_view twin) const {
  const KernelFn fn = kernels_.lookup(twin, node_name(graph_, op_));
  std::vector<Buffer> abs_in, var_in;
  std::vector<const Buffer*> abs_p, var_p;
  for (std::size_t i = 0; i < c.in_value.size(); ++i) {
    abs_in.push_back(abs_of(*c.in_value[i]));
    var_in.push_back(square_of(*c.in_sigma[i]));
  }
  for (std::size_t i = 0; i < abs_in.size(); ++i) {
    abs_p.push_back(&abs_in[i]);
    var_p.push_back(&var_in[i]);
  }
  std::vector<Buffer> a = call(fn, abs_p, DType::kFloat64);
  std::vector<Buffer> p = call(fn, var_p, DType::kFloat64);
  const double n = c.op.body().reductions.empty() ? 1 : std::max(terms_ - 1, 0.0);
  const double r = rounding_factor(n, lambda_);
  for (std::size_t o = 0; o < a.size(); ++o) {
    const std::span<const double> av = a[o].values<double>();
    const std::span<double> pv = p[o].values<double>();
    for (std::size_t i = 0; i < pv.size(); ++i) {
      const double round = c.u * r * av[i] + n * c.tiny;
      pv[i] = std::sqrt(pv[i] + round * round);
    }
    c.result.magnitudes.push_back(max_of(a[o]));
    c.result.sigmas.push_back(std::move(p[o]));
  }
}

// max/min reductions, `reduce` max/min, `maximum`: exact selections, so the error of the result
// is at most the largest error among the cells it selects from: the same kernel run on σ (on −σ
// then negated for min, whose kernel would pick the smallest).
void OperationEval::selection(Ctx& c, bool negate) const {
  std::vector<Buffer> in;
  std::vector<const Buffer*> p;
  for (const Buffer* s : c.in_sigma) {
    in.push_back(negate ? map_values(*s, [](double v) { return -v; }) : *s);
  }
  for (const Buffer& b : in) p.push_back(&b);
  std::vector<Buffer> out = call(kernel_, p, DType::kFloat64);
  for (std::size_t o = 0; o < out.size(); ++o) {
    if (negate) out[o] = map_values(out[o], [](double v) { return -v; });
    c.result.magnitudes.push_back(max_of(abs_of(c.result.values[o])));
    c.result.sigmas.push_back(std::move(out[o]));
  }
}

// Unary maps and div, cell by cell through the IPFs (broadcasting lives there).
void OperationEval::elementwise(Ctx& c) const {
  std::string_view kernel = c.op.kernel();
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  const ir::IpfSignature& signature = *c.op.ipf_signature();
  const Range& index = *c.op.ipf_index();
  const auto& in_entries = c.ins;
  const auto& out_entry = c.outs.front();
  const zspace::IndexProjection& out_ipf = checked_ipf(out_entry, signature.outputs, index);
  Buffer s(DType::kFloat64, graph_.tensor(out_entry.value.tensor).range());
  const Operand<const double> y(
      InputPort{c.result.values.front().view(out_entry.value.range), &out_ipf});
  const Operand<double> sy(OutputPort{s.view(out_entry.value.range), &out_ipf});
  std::vector<Operand<const double>> v, sv;
  for (std::size_t i = 0; i < in_entries.size(); ++i) {
    const zspace::IndexProjection& ipf = checked_ipf(in_entries[i], signature.inputs, index);
    v.emplace_back(InputPort{c.in_value[i]->view(in_entries[i].value.range), &ipf});
    sv.emplace_back(InputPort{c.in_sigma[i]->view(in_entries[i].value.range), &ipf});
  }
  if (v.empty()) return fallback(c);
  const double l = lambda_;
  // Deterministic kernel error of the transcendental maps: 4 ulp ≤ 8·u·|f(x)| (docs/runtime.md).
  const double kernel_ulps = 8;
  for (const Point& p : index.points()) {
    const double x = *v[0].cell(p);
    const double sx = *sv[0].cell(p);
    const double out = *y.cell(p);
    double sigma = 0;
    if (kernel == "relu") {
      sigma = x > -l * sx ? sx : 0.0;
    } else if (kernel == "neg") {
      sigma = sx;
    } else if (kernel == "div") {
      const double b = *v[1].cell(p);
      const double sb = *sv[1].cell(p);
      const double margin = std::abs(b) - l * sb;
      if (!(margin > 0)) {
        sigma = INFINITY;  // the denominator may be 0: unchecked
      } else {
        const double ea = sx / margin;
        const double eb = std::abs(out) * sb / margin;
        sigma = std::sqrt(ea * ea + eb * eb) + (c.u * std::abs(out) + c.tiny) / l;
      }
    } else {
      sigma = max_slope(kernel, x, l * sx) * sx + (kernel_ulps * c.u * std::abs(out) + c.tiny) / l;
    }
    *sy.cell(p) = sigma;
  }
  c.result.magnitudes.push_back(max_of(abs_of(c.result.values.front())));
  c.result.sigmas.push_back(std::move(s));
}

// softmax over the last dim of each row: y_i = e^(x_i − m) / Σ_j e^(x_j − m).
//   propagated  |Δy_i| ≤ y_i·(|Δx_i| + Σ_j y_j·|Δx_j|) ≤ y_i·(σx_i + max_row σx)
//   rounding    x_i − m: u·|x_i − m|·y_i; exp, the division: 3·u·y_i; the sum: r(n)·u·y_i
void OperationEval::softmax(Ctx& c) const {
  const ir::IpfSignature& signature = *c.op.ipf_signature();
  const Range& index = *c.op.ipf_index();
  const auto& in_entry = c.ins.front();
  const auto& out_entry = c.outs.front();
  const zspace::IndexProjection& in_ipf = checked_ipf(in_entry, signature.inputs, index);
  const zspace::IndexProjection& out_ipf = checked_ipf(out_entry, signature.outputs, index);
  Buffer s(DType::kFloat64, graph_.tensor(out_entry.value.tensor).range());
  const Operand<const double> x(InputPort{c.in_value[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const double> sx(InputPort{c.in_sigma[0]->view(in_entry.value.range), &in_ipf});
  const Operand<const double> y(
      InputPort{c.result.values.front().view(out_entry.value.range), &out_ipf});
  const Operand<double> sy(OutputPort{s.view(out_entry.value.range), &out_ipf});
  const std::size_t last = x.rank() - 1;
  const std::int64_t n = x.window(last);
  const std::int64_t step_x = x.stride(last), step_y = y.stride(last);
  const double r = rounding_factor(static_cast<double>(n), lambda_);
  for (const Point& p : index.points()) {
    const double* xr = x.cell(p);
    const double* sr = sx.cell(p);
    const double* yr = y.cell(p);
    double* out = sy.cell(p);
    if (xr == nullptr) continue;
    double m = -INFINITY, smax = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      m = std::max(m, xr[j * step_x]);
      smax = std::max(smax, sr[j * step_x]);
    }
    for (std::int64_t j = 0; j < n; ++j) {
      const double yi = yr[j * step_y];
      const double round = c.u * yi * (std::abs(xr[j * step_x] - m) + 3 + r) + c.tiny;
      out[j * step_y] = yi * (sr[j * step_x] + smax) + round / lambda_;
    }
  }
  c.result.magnitudes.push_back(1);
  c.result.sigmas.push_back(std::move(s));
}

// transpose, permute, reshape, pad: σ moves with the data; added pad cells are exact (σ = 0).
void OperationEval::move(Ctx& c) const {
  nlohmann::json params = c.op.params();
  if (params.is_object() && params.contains("value")) params["value"] = 0;
  std::vector<Buffer> out = call(kernel_, c.in_sigma, DType::kFloat64, &params);
  for (std::size_t o = 0; o < out.size(); ++o) {
    c.result.magnitudes.push_back(max_of(abs_of(c.result.values[o])));
    c.result.sigmas.push_back(std::move(out[o]));
  }
}

// No error model (fused stages, user kernels, prod reductions): the worst case over the whole
// operation, 4·u·K·max|inputs| + λ·max σ of the inputs, as one bar for every output cell.
void OperationEval::fallback(Ctx& c) const {
  double m = 0, s = 0;
  for (std::size_t i = 0; i < c.in_value.size(); ++i) {
    m = std::max(m, max_of(abs_of(*c.in_value[i])));
    s = std::max(s, max_of(*c.in_sigma[i]));
  }
  const double sigma = s + 4 * c.u * terms_ * std::max(m, 1.0) / lambda_;
  std::string kernel(c.op.kernel());
  c.result.unmodelled = kernel;
  for (const Buffer& v : c.result.values) {
    c.result.sigmas.push_back(map_values(v, [sigma](double) { return sigma; }));
    c.result.magnitudes.push_back(INFINITY);
  }
}

}  // namespace tapestry::runtime::detail
