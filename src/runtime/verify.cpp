// Judging results against the naive run and the float64 oracle (verify.h).
#include "tapestry/runtime/verify.h"

#include <fmt/format.h>

#include <cmath>

#include "tapestry/runtime/naive_executor.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

std::string_view mode_name(VerifyMode mode) {
  switch (mode) {
    case VerifyMode::kBound:
      return "bound";
    case VerifyMode::kBitwise:
      return "bitwise";
    case VerifyMode::kExact:
      return "exact";
  }
  return "?";
}

bool same_kind(double a, double b) {
  if (std::isnan(a)) return std::isnan(b);
  return a == b;  // ±inf
}

// Cell by cell: `result` (float T) against the oracle's value and bar, and the naive run.
template <typename T>
void judge_bound(std::span<const T> result, std::span<const double> value,
                 std::span<const double> bars, std::span<const T> naive, const Range& range,
                 OutputVerdict& v) {
  double worst_ratio = -1;
  std::int64_t worst = -1, naive_outside = -1;
  v.min_bar = INFINITY;
  for (std::size_t i = 0; i < result.size(); ++i) {
    const double r = result[i];
    const double n = naive.empty() ? value[i] : static_cast<double>(naive[i]);
    const double bar = bars[i] + std::abs(value[i]) * 0x1p-50;  // + the oracle's error
    if (!std::isfinite(n)) {  // the naive run overflowed or met a NaN: match it in kind
      if (!same_kind(n, r)) ++v.failing_cells;
      continue;
    }
    if (!std::isfinite(bar)) {
      ++v.unchecked_cells;
      continue;
    }
    v.min_bar = std::min(v.min_bar, bar);
    v.max_bar = std::max(v.max_bar, bar);
    const double diff = std::isfinite(r) ? std::abs(r - value[i]) : INFINITY;
    v.max_abs_diff = std::max(v.max_abs_diff, diff);
    if (diff > bar) ++v.failing_cells;
    const double ratio = bar > 0 ? diff / bar : (diff > 0 ? INFINITY : 0);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = static_cast<std::int64_t>(i);
    }
    if (naive_outside < 0 && std::abs(n - value[i]) > bar)
      naive_outside = static_cast<std::int64_t>(i);
  }
  if (v.min_bar == INFINITY) v.min_bar = 0;
  if (worst >= 0) {
    const auto w = static_cast<std::size_t>(worst);
    v.worst_point = unravel(range, worst);
    v.worst_diff = std::abs(static_cast<double>(result[w]) - value[w]);
    v.worst_bar = bars[w] + std::abs(value[w]) * 0x1p-50;
  }
  if (naive_outside >= 0) {
    const auto w = static_cast<std::size_t>(naive_outside);
    v.problem = fmt::format(
        "the naive run itself is {:.3e} from float64 at {}, outside its bar {:.3e}: the error "
        "model does not hold for this graph",
        std::abs(static_cast<double>(naive[w]) - value[w]), unravel(range, naive_outside), bars[w]);
  }
}

// Exact mode: every cell equal to the oracle's value (−0 == +0).
template <typename T>
void judge_exact(std::span<const T> result, std::span<const double> value, const Range& range,
                 OutputVerdict& v) {
  for (std::size_t i = 0; i < result.size(); ++i) {
    const double diff = std::abs(static_cast<double>(result[i]) - value[i]);
    if (static_cast<double>(result[i]) == value[i]) continue;
    ++v.failing_cells;
    if (!(diff <= v.max_abs_diff)) {
      v.max_abs_diff = diff;
      v.worst_point = unravel(range, static_cast<std::int64_t>(i));
      v.worst_diff = diff;
    }
  }
}

OutputVerdict judge(const ir::Graph& graph, ir::TensorId t, const BufferMap& results,
                    VerifyMode mode, const BufferMap* naive, const Oracle* oracle) {
  OutputVerdict v{.tensor = t, .name = tensor_name(graph, t), .mode = mode};
  auto found = results.find(t);
  if (found == results.end()) {
    v.problem = "no result for this output";
    return v;
  }
  const Buffer& result = found->second;
  const DType dtype = tensor_dtype(graph, t);
  const Range& range = graph.tensor(t).range();
  if (result.dtype() != dtype || result.range().shape() != range.shape()) {
    v.problem = fmt::format("the result is {}, the graph's output is {} {}", result.describe(),
                            ir::dtype_name(dtype), range);
    return v;
  }
  const Buffer r = result.relocated(range.start());
  v.cells = r.size();
  if (naive != nullptr) v.vs_naive = compare_buffers(naive->at(t), r);
  const bool is_float = ir::is_float(dtype);
  if (mode == VerifyMode::kBitwise || !is_float) {
    // Integers are exact in every mode; bitwise compares with the naive run.
    const BufferComparison c =
        naive != nullptr ? *v.vs_naive : compare_buffers(oracle->value.at(t), r);
    v.failing_cells = c.differing_cells;
    v.max_abs_diff = c.max_abs_diff;
    v.worst_point = c.worst_point;
    v.worst_diff = c.max_abs_diff;
  } else {
    TAPESTRY_ASSERT(oracle != nullptr, "bound and exact verification need the oracle");
    const std::span<const double> value = oracle->value.at(t).values<double>();
    if (auto u = oracle->unmodelled.find(t); u != oracle->unmodelled.end())
      v.unmodelled = u->second;
    visit_dtype(dtype, [&]<typename T>() {
      if constexpr (std::is_floating_point_v<T>) {
        if (mode == VerifyMode::kExact) {
          judge_exact<T>(r.values<T>(), value, range, v);
        } else {
          const std::span<const T> n =
              naive != nullptr ? naive->at(t).values<T>() : std::span<const T>();
          const Buffer bars = oracle->bar(t);
          judge_bound<T>(r.values<T>(), value, bars.values<double>(), n, range, v);
        }
      }
    });
  }
  v.pass = v.problem.empty() && v.failing_cells == 0;
  return v;
}

}  // namespace

std::string OutputVerdict::line() const {
  const std::string head = fmt::format("{:<6} {}: ", pass ? "PASS" : "FAIL", name);
  if (!problem.empty() && cells == 0) return head + problem;
  std::string naive;
  if (vs_naive) {
    naive = vs_naive->bitwise_equal
                ? "bitwise equal to the naive run"
                : fmt::format("{:.2e} vs the naive run", vs_naive->max_abs_diff);
  }
  std::string body;
  if (mode == VerifyMode::kBitwise) {
    body =
        failing_cells == 0
            ? "bitwise equal to the naive run (bar: bitwise)"
            : fmt::format(
                  "{} of {} cells differ from the naive run, max |Δ| {:.3e} at {} (bar: "
                  "bitwise)",
                  failing_cells, cells, max_abs_diff, worst_point ? worst_point->to_string() : "?");
  } else if (mode == VerifyMode::kExact) {
    body =
        failing_cells == 0
            ? fmt::format("equal to the exact value in all {} cells (bar: exact)", cells)
            : fmt::format(
                  "{} of {} cells differ from the exact value, max |Δ| {:.3e} at {} "
                  "(bar: exact)",
                  failing_cells, cells, max_abs_diff, worst_point ? worst_point->to_string() : "?");
  } else {
    std::string worst;
    if (worst_point && worst_bar > 0) {
      worst = fmt::format("; worst cell {}: |Δ| {:.2e} = {:.1f}% of its bar", *worst_point,
                          worst_diff, 100 * worst_diff / worst_bar);
    } else if (worst_point) {
      worst = fmt::format("; worst cell {}: |Δ| {:.2e} where the bar is 0 (the value is exact)",
                          *worst_point, worst_diff);
    }
    body = fmt::format(
        "{}max |Δ| {:.2e} vs float64{}; bar per cell {:.2e}…{:.2e}{}",
        failing_cells > 0 ? fmt::format("{} of {} cells outside their bar; ", failing_cells, cells)
                          : "",
        max_abs_diff, naive.empty() ? "" : " (" + naive + ")", min_bar, max_bar, worst);
    if (unchecked_cells > 0)
      body += fmt::format("; {} cells unchecked (bar not finite)", unchecked_cells);
    if (!unmodelled.empty())
      body += fmt::format("; worst-case bar (no error model for kernel '{}')", unmodelled);
  }
  if (!problem.empty()) body += "; " + problem;
  return head + body;
}

nlohmann::json OutputVerdict::to_json() const {
  nlohmann::json j{{"name", name},
                   {"pass", pass},
                   {"mode", mode_name(mode)},
                   {"cells", cells},
                   {"failing_cells", failing_cells},
                   {"unchecked_cells", unchecked_cells},
                   {"max_abs_diff", max_abs_diff},
                   {"min_bar", min_bar},
                   {"max_bar", max_bar}};
  if (worst_point) {
    j["worst_point"] =
        nlohmann::json(std::vector<std::int64_t>(worst_point->begin(), worst_point->end()));
    j["worst_diff"] = worst_diff;
    j["worst_bar"] = worst_bar;
  }
  if (vs_naive) {
    j["naive_bitwise_equal"] = vs_naive->bitwise_equal;
    j["naive_max_abs_diff"] = vs_naive->max_abs_diff;
  }
  if (!problem.empty()) j["problem"] = problem;
  if (!unmodelled.empty()) j["unmodelled_kernel"] = unmodelled;
  return j;
}

bool VerifyReport::pass() const {
  for (const OutputVerdict& v : outputs) {
    if (!v.pass) return false;
  }
  return true;
}

std::string VerifyReport::text() const {
  std::string out;
  for (const OutputVerdict& v : outputs) out += v.line() + "\n";
  return out;
}

nlohmann::json VerifyReport::to_json() const {
  nlohmann::json outs = nlohmann::json::array();
  for (const OutputVerdict& v : outputs) outs.push_back(v.to_json());
  return {{"pass", pass()}, {"lambda", lambda}, {"outputs", std::move(outs)}};
}

VerifyReport verify_outputs(const ir::Graph& graph, const BufferMap& results, VerifyMode mode,
                            const BufferMap* naive, const Oracle* oracle) {
  VerifyReport report;
  if (oracle != nullptr) report.lambda = oracle->lambda;
  for (ir::TensorId t : graph_outputs(graph))
    report.outputs.push_back(judge(graph, t, results, mode, naive, oracle));
  return report;
}

VerifyReport verify_outputs(const ir::Graph& graph, const BufferMap& inputs,
                            const BufferMap& results, const VerifyOptions& options) {
  const BufferMap naive =
      NaiveExecutor(graph,
                    options.naive_kernels ? *options.naive_kernels : ExecutableKernels::reference())
          .run(inputs);
  std::optional<Oracle> oracle;
  if (options.mode != VerifyMode::kBitwise) oracle = evaluate_oracle(graph, inputs, options.oracle);
  if (options.mode == VerifyMode::kExact && !oracle->exact_reason.empty()) {
    throw Error(fmt::format("exact verification does not apply: {}", oracle->exact_reason));
  }
  return verify_outputs(graph, results, options.mode, &naive, oracle ? &*oracle : nullptr);
}

}  // namespace tapestry::runtime
