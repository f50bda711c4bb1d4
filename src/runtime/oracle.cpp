// The float64 oracle and its per-cell error scales (oracle.h; the math is in the header and in
// docs/runtime.md).
//
// 1. Order and checks come from NaiveExecutor (cycles, tags, known kernels).
// 2. Every operation runs once on float64 values (integer tensors stay integer).
// 3. Its error rule (error_rules.h) derives the outputs' sigma, bound and magnitude, running the
//    operation's own kernel on |x|, σ² … where the rule is a sum of products.
// 4. Exact mode is decided last, from the kernels seen and the magnitudes.
#include "tapestry/runtime/oracle.h"

#include <fmt/format.h>

#include <cmath>

#include "error_rules.h"
#include "run_support.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/naive_executor.h"

namespace tapestry::runtime {

namespace {

Buffer promote(const Buffer& in) {
  if (in.dtype() != DType::kFloat32) return in;
  Buffer out(DType::kFloat64, in.range(), Buffer::Uninitialized{});
  const std::span<const float> from = in.values<float>();
  const std::span<double> to = out.values<double>();
  for (std::size_t i = 0; i < from.size(); ++i) to[i] = from[i];
  return out;
}

// The smallest power of two above every value a float of `dtype` holds exactly as an integer.
double exact_integer_limit(DType dtype) {
  return dtype == DType::kFloat32 ? 0x1p24 : 0x1p53;
}

// Why `inputs` are not all small integers (empty: they are).
std::string non_integer_input(const ir::Graph& graph, const BufferMap& value) {
  for (ir::TensorId t : graph_inputs(graph)) {
    const Buffer& b = value.at(t);
    if (b.dtype() != DType::kFloat64) continue;
    const double limit = exact_integer_limit(tensor_dtype(graph, t));
    for (double v : b.values<double>()) {
      if (v != std::nearbyint(v) || std::abs(v) >= limit) {
        return fmt::format("input '{}' holds {}, not a small integer", tensor_name(graph, t), v);
      }
    }
  }
  return {};
}

}  // namespace

Buffer Oracle::bar(ir::TensorId t) const {
  const Buffer& s = sigma.at(t);
  const Buffer& d = bound.at(t);
  Buffer out(DType::kFloat64, s.range(), Buffer::Uninitialized{});
  const std::span<const double> sv = s.values<double>(), dv = d.values<double>();
  const std::span<double> o = out.values<double>();
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = std::min(lambda * sv[i], dv[i]);
  return out;
}

Oracle evaluate_oracle(const ir::Graph& graph, const BufferMap& inputs,
                       const OracleOptions& options) {
  const ExecutableKernels& kernels = options.kernels ? *options.kernels : fast_kernels();
  const NaiveExecutor naive(graph, kernels);  // checks the graph, fixes the order
  Oracle oracle;
  oracle.lambda = options.lambda;
  for (ir::TensorId t : graph_inputs(graph)) {
    auto given = inputs.find(t);
    if (given == inputs.end()) {
      throw Error(fmt::format("no buffer for input tensor '{}'", tensor_name(graph, t)));
    }
    Buffer v = promote(bind_buffer(graph, t, given->second));
    if (ir::is_float(tensor_dtype(graph, t))) {
      oracle.sigma.emplace(t, Buffer(DType::kFloat64, v.range()));  // inputs are exact
      oracle.bound.emplace(t, Buffer(DType::kFloat64, v.range()));
      double m = 0;
      for (double x : v.values<double>()) m = std::max(m, std::abs(x));
      oracle.magnitude[t] = m;
    }
    oracle.value.emplace(t, std::move(v));
  }

  std::string not_exact;
  for (ir::OperationId op : naive.order()) {
    const detail::OperationEval eval(graph, op, kernels, options.lambda);
    const detail::RuleResult r = eval.run(oracle.value, oracle.sigma, oracle.bound);
    if (!r.exact && not_exact.empty()) {
      not_exact = fmt::format("operation '{}' ({}) is not exact", detail::node_name(graph, op),
                              graph.operation(op).kernel());
    }
    for (std::size_t i = 0; i < r.outputs.size(); ++i) {
      const ir::TensorId t = r.outputs[i];
      oracle.value.insert_or_assign(t, std::move(r.values[i]));
      if (!r.sigmas.empty()) {
        oracle.sigma.insert_or_assign(t, std::move(r.sigmas[i]));
        oracle.bound.insert_or_assign(t, std::move(r.bounds[i]));
        oracle.magnitude[t] = r.magnitudes[i];
      }
      if (!r.unmodelled.empty()) oracle.unmodelled[t] = r.unmodelled;
    }
  }

  oracle.exact_reason = not_exact.empty() ? non_integer_input(graph, oracle.value) : not_exact;
  if (oracle.exact_reason.empty()) {
    for (const auto& [t, m] : oracle.magnitude) {
      const double limit = exact_integer_limit(tensor_dtype(graph, t));
      if (m >= limit) {
        oracle.exact_reason =
            fmt::format("sums in '{}' reach {} ≥ 2^{}: not exact in {}", tensor_name(graph, t), m,
                        std::log2(limit), graph.tensor(t).dtype());
        break;
      }
    }
  }
  return oracle;
}

}  // namespace tapestry::runtime
