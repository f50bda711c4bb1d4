// Judging results against the naive run and the float64 oracle (verify.h).
#include "tapestry/runtime/verify.h"

#include <fmt/format.h>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_reduce.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "oracle_chains.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/support/stopwatch.h"
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

// "pass", "fail", "unchecked": the verdict in JSON reports.
std::string verdict_json(Verdict verdict) {
  std::string name(verdict_name(verdict));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return name;
}

// Two values that are ±inf or NaN: the same class (NaN, or the same infinity).
bool same_kind(double a, double b) {
  if (std::isnan(a)) return std::isnan(b);
  return a == b;  // ±inf
}

std::string describe_kind(double v) {
  return std::isnan(v) ? "NaN" : fmt::format("{}", v);
}

// Whether point a comes before point b in row-major order (the order of a buffer's cells).
bool before(const Point& a, const Point& b) {
  for (std::size_t d = 0; d < a.rank(); ++d)
    if (a[d] != b[d]) return a[d] < b[d];
  return false;
}

// Bound mode's figures of one output, gathered over blocks of its cells (the whole output is one
// block; the oracle's chains hand an output over a block at a time, OracleOptions::output_sink):
// sums, extremes, and the cells that come first in row-major order — the same numbers whatever
// the blocks, since a box's own row-major order is the output's restricted to it.
struct BoundTally {
  std::int64_t failing = 0, unchecked = 0;
  std::optional<Point> first_unchecked;
  double min_bar = INFINITY, max_bar = 0, max_abs_diff = 0;
  double worst_ratio = -1;  // the largest |Δ| / bar, at the first cell that has it
  std::optional<Point> worst;
  double worst_diff = 0, worst_bar = 0;
  std::optional<Point> naive_outside;  // the first cell where the naive run breaks its bar
  std::string naive_problem;

  void merge(BoundTally&& b) {
    failing += b.failing;
    unchecked += b.unchecked;
    if (b.first_unchecked && (!first_unchecked || before(*b.first_unchecked, *first_unchecked)))
      first_unchecked = std::move(b.first_unchecked);
    min_bar = std::min(min_bar, b.min_bar);
    max_bar = std::max(max_bar, b.max_bar);
    max_abs_diff = std::max(max_abs_diff, b.max_abs_diff);
    if (b.worst && (!worst || b.worst_ratio > worst_ratio ||
                    (b.worst_ratio == worst_ratio && before(*b.worst, *worst)))) {
      worst_ratio = b.worst_ratio;
      worst = std::move(b.worst);
      worst_diff = b.worst_diff;
      worst_bar = b.worst_bar;
    }
    if (b.naive_outside && (!naive_outside || before(*b.naive_outside, *naive_outside))) {
      naive_outside = std::move(b.naive_outside);
      naive_problem = std::move(b.naive_problem);
    }
  }

  void into(OutputVerdict& v) const {
    v.failing_cells += failing;
    v.unchecked_cells += unchecked;
    v.first_unchecked = first_unchecked;
    v.min_bar = min_bar == INFINITY ? 0 : min_bar;
    v.max_bar = max_bar;
    v.max_abs_diff = max_abs_diff;
    v.worst_point = worst;
    v.worst_diff = worst_diff;
    v.worst_bar = worst_bar;
    if (naive_outside) v.problem = naive_problem;
  }
};

// Cell by cell over the cells `range` of an output: `result` (float T) against the oracle's
// value and bar, and the naive run.
//   value ±inf or NaN   a class: the result (and the naive run) must be the same, where the
//                       oracle is sure of it (bar 0); unchecked where it is not (bar ∞)
//   naive ±inf or NaN   the float run overflowed a finite value: the result must match it
//   bar not finite      unchecked
//   else                |result − value| ≤ bar
// A cell's bar is min(λ·sigma, bound) (Oracle::bar), formed here cell by cell: no buffer of bars.
// judge_bound_part judges the cells [lo, hi) of the spans; judge_bound all of them, in parts of
// 2^16 cells on the current arena's threads, merged in row-major order (BoundTally::merge): the
// same tally on any thread count.
template <typename T>
BoundTally judge_bound_part(std::span<const T> result, std::span<const double> value,
                            std::span<const double> sigma, std::span<const double> bound,
                            double lambda, std::span<const T> naive, const Range& range,
                            std::size_t lo, std::size_t hi) {
  BoundTally v;
  const auto bar_at = [&](std::size_t i) { return std::min(lambda * sigma[i], bound[i]); };
  std::int64_t worst = -1, naive_outside = -1;
  const auto unchecked = [&](std::size_t i) {
    if (v.unchecked++ == 0) v.first_unchecked = unravel(range, static_cast<std::int64_t>(i));
  };
  for (std::size_t i = lo; i < hi; ++i) {
    const auto r = static_cast<double>(result[i]);
    const double n = naive.empty() ? value[i] : static_cast<double>(naive[i]);
    const double cell_bar = bar_at(i);
    if (!std::isfinite(value[i])) {
      if (!std::isfinite(cell_bar)) {
        unchecked(i);
      } else {
        if (!same_kind(value[i], r)) ++v.failing;
        if (naive_outside < 0 && !same_kind(value[i], n))
          naive_outside = static_cast<std::int64_t>(i);
      }
      continue;
    }
    const double bar = cell_bar + std::abs(value[i]) * 0x1p-50;  // + the oracle's error
    if (!std::isfinite(n)) {  // the naive run overflowed a finite value: match it in kind
      if (!same_kind(n, r)) ++v.failing;
      continue;
    }
    if (!std::isfinite(bar)) {
      unchecked(i);
      continue;
    }
    v.min_bar = std::min(v.min_bar, bar);
    v.max_bar = std::max(v.max_bar, bar);
    const double diff = std::isfinite(r) ? std::abs(r - value[i]) : INFINITY;
    v.max_abs_diff = std::max(v.max_abs_diff, diff);
    if (diff > bar) ++v.failing;
    const double ratio = bar > 0 ? diff / bar : (diff > 0 ? INFINITY : 0);
    if (ratio > v.worst_ratio) {
      v.worst_ratio = ratio;
      worst = static_cast<std::int64_t>(i);
    }
    if (naive_outside < 0 && std::abs(n - value[i]) > bar)
      naive_outside = static_cast<std::int64_t>(i);
  }
  if (worst >= 0) {
    const auto w = static_cast<std::size_t>(worst);
    v.worst = unravel(range, worst);
    v.worst_diff = std::abs(static_cast<double>(result[w]) - value[w]);
    v.worst_bar = bar_at(w) + std::abs(value[w]) * 0x1p-50;
  }
  if (naive_outside >= 0) {
    const auto w = static_cast<std::size_t>(naive_outside);
    const auto n = static_cast<double>(naive[w]);
    const Point at = unravel(range, naive_outside);
    v.naive_outside = at;
    v.naive_problem =
        std::isfinite(value[w])
            ? fmt::format(
                  "the naive run itself is {:.3e} from float64 at {}, outside its bar {:.3e}: "
                  "the error model does not hold for this graph",
                  std::abs(n - value[w]), at, bar_at(w))
            : fmt::format(
                  "the naive run itself is {} at {} where float64 is {}: the error model does not "
                  "hold for this graph",
                  describe_kind(n), at, describe_kind(value[w]));
  }
  return v;
}

template <typename T>
BoundTally judge_bound(std::span<const T> result, std::span<const double> value,
                       std::span<const double> sigma, std::span<const double> bound, double lambda,
                       std::span<const T> naive, const Range& range) {
  return tbb::parallel_reduce(
      tbb::blocked_range<std::size_t>(0, result.size(), std::size_t{1} << 16), BoundTally{},
      [&](const tbb::blocked_range<std::size_t>& r, BoundTally tally) {
        tally.merge(judge_bound_part(result, value, sigma, bound, lambda, naive, range, r.begin(),
                                     r.end()));
        return tally;
      },
      [](BoundTally a, BoundTally b) {
        a.merge(std::move(b));
        return a;
      },
      tbb::simple_partitioner());
}

// The cells `cells` of `b` (over the output's range) as a buffer: a view where they are one
// contiguous run, else a copy into `scratch`.
const Buffer& cells_of(const Buffer& b, const Range& cells, Buffer& scratch) {
  if (cells == b.range()) return b;
  const std::int64_t offset = detail::contiguous_offset(b.range(), cells);
  if (offset >= 0 && b.size() > 0) {
    scratch =
        Buffer::borrow(b.dtype(), cells,
                       const_cast<std::byte*>(b.bytes()) +  // NOLINT: only read
                           offset * static_cast<std::int64_t>(ir::dtype_size_bytes(b.dtype())));
  } else {
    scratch = Buffer(b.dtype(), cells, Buffer::Uninitialized{});
    copy_elements(b.view(cells), scratch.view());
  }
  return scratch;
}

// Bound mode on the cells `value.range()` of output t (`r` and `naive` over the whole output).
BoundTally judge_cells(DType dtype, const Buffer& r, const Buffer* naive, const Buffer& value,
                       const Buffer& sigma, const Buffer& bound, double lambda) {
  const Range& cells = value.range();
  Buffer result_scratch, naive_scratch;
  const Buffer& result = cells_of(r, cells, result_scratch);
  const Buffer* n = naive != nullptr ? &cells_of(*naive, cells, naive_scratch) : nullptr;
  BoundTally tally;
  visit_storage_dtype(dtype, [&]<typename T>() {
    if constexpr (is_float_element_v<T>) {
      tally = judge_bound<T>(result.values<T>(), value.values<double>(), sigma.values<double>(),
                             bound.values<double>(), lambda,
                             n != nullptr ? n->values<T>() : std::span<const T>(), cells);
    }
  });
  return tally;
}

// An integer output with a bar — a position (argmax, argmin: the oracle's rule `index`) —
// over the cells of `value`: the result, the naive run and the oracle's value as float64 (exact
// below 2^53), judged as float cells are.
BoundTally judge_index_cells(const Buffer& r, const Buffer* naive, const Buffer& value,
                             const Buffer& sigma, const Buffer& bound, double lambda) {
  const Range& cells = value.range();
  const auto as_doubles = [&](const Buffer& b) {
    Buffer scratch;
    const Buffer& part = cells_of(b, cells, scratch);
    Buffer out(DType::kFloat64, cells, Buffer::Uninitialized{});
    const std::span<double> o = out.values<double>();
    visit_dtype(part.dtype(), [&]<typename T>() {
      const std::span<const T> in = part.values<T>();
      for (std::size_t i = 0; i < in.size(); ++i) o[i] = static_cast<double>(in[i]);
    });
    return out;
  };
  const Buffer got = as_doubles(r), expected = as_doubles(value);
  const Buffer naive_values = naive != nullptr ? as_doubles(*naive) : Buffer();
  return judge_bound<double>(
      got.values<double>(), expected.values<double>(), sigma.values<double>(),
      bound.values<double>(), lambda,
      naive != nullptr ? naive_values.values<double>() : std::span<const double>(), cells);
}

// Exact mode: every cell equal to the oracle's value (−0 == +0).
template <typename T>
void judge_exact(std::span<const T> result, std::span<const double> value, const Range& range,
                 OutputVerdict& v) {
  for (std::size_t i = 0; i < result.size(); ++i) {
    const double r = static_cast<double>(result[i]);
    const double diff = std::isfinite(value[i]) ? std::abs(r - value[i]) : INFINITY;
    if (r == value[i] || (!std::isfinite(value[i]) && same_kind(value[i], r))) continue;
    ++v.failing_cells;
    if (!(diff <= v.max_abs_diff)) {
      v.max_abs_diff = diff;
      v.worst_point = unravel(range, static_cast<std::int64_t>(i));
      v.worst_diff = diff;
    }
  }
}

Verdict verdict_of(const OutputVerdict& v, UncheckedCells unchecked) {
  if (!v.problem.empty() || v.failing_cells > 0) return Verdict::kFail;
  if (v.unchecked_cells > 0 && unchecked == UncheckedCells::kFail) return Verdict::kUnchecked;
  return Verdict::kPass;
}

// An output's verdict as far as the result alone and the naive run decide it: the result is
// there with the output's dtype and shape (else `v.problem`), and its comparison with the naive
// run. `r` is the result at the graph's coordinates (a view, read only), when there is one.
struct Started {
  OutputVerdict v;
  std::optional<Buffer> r;
};

Started start_judging(const ir::Graph& graph, ir::TensorId t, const BufferMap& results,
                      VerifyMode mode, const BufferMap* naive) {
  Started s{.v = {.tensor = t, .name = tensor_name(graph, t), .mode = mode}};
  OutputVerdict& v = s.v;
  auto found = results.find(t);
  if (found == results.end()) {
    v.problem = "no result for this output";
    return s;
  }
  const Buffer& result = found->second;
  const DType dtype = tensor_dtype(graph, t);
  const Range& range = graph.tensor(t).range();
  if (result.dtype() != dtype || result.range().shape() != range.shape()) {
    v.problem = fmt::format("the result is {}, the graph's output is {} {}", result.describe(),
                            ir::dtype_name(dtype), range);
    return s;
  }
  s.r = result.size() == 0 ? result.relocated(range.start())
                           : Buffer::borrow(result.dtype(), range,
                                            const_cast<std::byte*>(result.bytes()));  // NOLINT
  v.cells = s.r->size();
  if (naive != nullptr) v.vs_naive = compare_buffers(naive->at(t), *s.r);
  return s;
}

// Whether the output is judged against the oracle's bars (bound mode, a float output that could
// be compared), not by its bits.
bool judged_by_bars(const Started& s, DType dtype, VerifyMode mode) {
  return s.r && s.v.problem.empty() && mode == VerifyMode::kBound && ir::is_float(dtype);
}

OutputVerdict judge(const ir::Graph& graph, ir::TensorId t, const BufferMap& results,
                    VerifyMode mode, const BufferMap* naive, const Oracle* oracle,
                    UncheckedCells unchecked) {
  Started s = start_judging(graph, t, results, mode, naive);
  OutputVerdict& v = s.v;
  if (!s.r) return v;
  const Buffer& r = *s.r;
  const DType dtype = tensor_dtype(graph, t);
  const Range& range = graph.tensor(t).range();
  const bool is_float = ir::is_float(dtype);
  // An integer output with a bar: a position (argmax, argmin: the oracle's rule `index`).
  const bool index_bar =
      !is_float && mode == VerifyMode::kBound && oracle != nullptr && oracle->sigma.contains(t);
  if (index_bar) {
    judge_index_cells(r, naive != nullptr ? &naive->at(t) : nullptr, oracle->value.at(t),
                      oracle->sigma.at(t), oracle->bound.at(t), oracle->lambda)
        .into(v);
  } else if (mode == VerifyMode::kBitwise || !is_float) {
    // Integers are exact in every mode; bitwise compares with the naive run.
    const BufferComparison c =
        naive != nullptr ? *v.vs_naive : compare_buffers(oracle->value.at(t), r);
    v.failing_cells = c.differing_cells;
    v.max_abs_diff = c.max_abs_diff;
    v.worst_point = c.worst_point;
    v.worst_diff = c.max_abs_diff;
  } else {
    TAPESTRY_ASSERT(oracle != nullptr, "bound and exact verification need the oracle");
    if (auto u = oracle->unmodelled.find(t); u != oracle->unmodelled.end())
      v.unmodelled = u->second;
    if (mode == VerifyMode::kExact) {
      const std::span<const double> value = oracle->value.at(t).values<double>();
      visit_storage_dtype(dtype, [&]<typename T>() {
        if constexpr (is_float_element_v<T>) judge_exact<T>(r.values<T>(), value, range, v);
      });
    } else {
      judge_cells(dtype, r, naive != nullptr ? &naive->at(t) : nullptr, oracle->value.at(t),
                  oracle->sigma.at(t), oracle->bound.at(t), oracle->lambda)
          .into(v);
    }
  }
  v.verdict = verdict_of(v, unchecked);
  return v;
}

}  // namespace

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return "PASS";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kUnchecked:
      return "UNCHECKED";
  }
  return "?";
}

std::string OutputVerdict::line() const {
  const std::string head = fmt::format("{:<6} {}: ", verdict_name(verdict), name);
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
    // The checked cells' figures, and what is said of the unchecked ones (none checked: only
    // the latter).
    const std::string stats =
        fmt::format("max |Δ| {:.2e} vs float64{}; bar per cell {:.2e}…{:.2e}{}", max_abs_diff,
                    naive.empty() ? "" : " (" + naive + ")", min_bar, max_bar, worst);
    const bool none_checked = unchecked_cells == cells;
    const std::string unchecked_text =
        unchecked_cells == 0
            ? ""
            : fmt::format(
                  "{} of {} cells unchecked (bar not finite{})", unchecked_cells, cells,
                  first_unchecked ? fmt::format(", the first at {}", *first_unchecked) : "");
    if (verdict == Verdict::kUnchecked) {
      body = unchecked_text + (none_checked ? "" : "; the others: " + stats);
    } else if (verdict == Verdict::kPass && unchecked_cells > 0) {
      body = (none_checked ? "" : stats + "; ") + "WARNING: " + unchecked_text +
             ", allowed: a wrong value there passes";
    } else {
      body = (failing_cells > 0
                  ? fmt::format("{} of {} cells outside their bar; ", failing_cells, cells)
                  : "") +
             stats + (unchecked_cells > 0 ? "; " + unchecked_text : "");
    }
    if (!unmodelled.empty())
      body += fmt::format("; worst-case bar (no error model for kernel '{}')", unmodelled);
  }
  if (!problem.empty()) body += "; " + problem;
  return head + body;
}

nlohmann::json OutputVerdict::to_json() const {
  nlohmann::json j{{"name", name},
                   {"pass", pass()},
                   {"verdict", verdict_json(verdict)},
                   {"mode", mode_name(mode)},
                   {"cells", cells},
                   {"failing_cells", failing_cells},
                   {"unchecked_cells", unchecked_cells},
                   {"max_abs_diff", max_abs_diff},
                   {"min_bar", min_bar},
                   {"max_bar", max_bar}};
  if (first_unchecked) {
    j["first_unchecked"] =
        nlohmann::json(std::vector<std::int64_t>(first_unchecked->begin(), first_unchecked->end()));
  }
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
  return verdict() == Verdict::kPass;
}

Verdict VerifyReport::verdict() const {
  Verdict worst = Verdict::kPass;
  for (const OutputVerdict& v : outputs) {
    if (v.verdict == Verdict::kFail) return Verdict::kFail;
    if (v.verdict == Verdict::kUnchecked) worst = Verdict::kUnchecked;
  }
  return worst;
}

std::int64_t VerifyReport::unchecked_cells() const {
  std::int64_t n = 0;
  for (const OutputVerdict& v : outputs) n += v.unchecked_cells;
  return n;
}

std::string VerifyReport::text() const {
  std::string out;
  for (const OutputVerdict& v : outputs) out += v.line() + "\n";
  return out;
}

nlohmann::json VerifyReport::to_json() const {
  nlohmann::json outs = nlohmann::json::array();
  for (const OutputVerdict& v : outputs) outs.push_back(v.to_json());
  return {{"pass", pass()},
          {"verdict", verdict_json(verdict())},
          {"unchecked_cells", unchecked_cells()},
          {"allow_unchecked", unchecked == UncheckedCells::kAllow},
          {"lambda", lambda},
          {"outputs", std::move(outs)}};
}

VerifyReport verify_outputs(const ir::Graph& graph, const BufferMap& results, VerifyMode mode,
                            const BufferMap* naive, const Oracle* oracle,
                            UncheckedCells unchecked) {
  VerifyReport report;
  report.unchecked = unchecked;
  if (oracle != nullptr) report.lambda = oracle->lambda;
  for (ir::TensorId t : graph_outputs(graph))
    report.outputs.push_back(judge(graph, t, results, mode, naive, oracle, unchecked));
  return report;
}

nlohmann::json VerifyTiming::to_json() const {
  std::vector<OperationSeconds> slowest = operations;
  std::stable_sort(slowest.begin(), slowest.end(),
                   [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  nlohmann::json ops = nlohmann::json::array();
  for (const OperationSeconds& o : slowest)
    ops.push_back({{"operation", o.operation}, {"kernel", o.kernel}, {"seconds", o.seconds}});
  return {{"naive_s", naive_s}, {"oracle_s", oracle_s}, {"judge_s", judge_s}, {"operations", ops}};
}

VerifyReport verify_bound_streaming(const ir::Graph& graph, const BufferMap& inputs,
                                    const BufferMap& results, const BufferMap& naive,
                                    const OracleOptions& oracle_options, UncheckedCells unchecked) {
  const std::vector<ir::TensorId> outputs = graph_outputs(graph);
  std::map<ir::TensorId, Started> started;
  std::map<ir::TensorId, BoundTally> tallies;
  for (ir::TensorId t : outputs) {
    if (started.contains(t)) continue;
    started.emplace(t, start_judging(graph, t, results, VerifyMode::kBound, &naive));
  }
  VerifyReport report;
  OracleOptions options = oracle_options;
  if (options.seconds == nullptr) options.seconds = &report.timing.operations;
  options.output_sink = [&](ir::TensorId t, const Buffer& value, const Buffer* sigma,
                            const Buffer* bound) {
    const Stopwatch judging(report.timing.judge_s);
    if (oracle_options.output_sink) oracle_options.output_sink(t, value, sigma, bound);
    const Started& s = started.at(t);
    const DType dtype = tensor_dtype(graph, t);
    if (sigma == nullptr || bound == nullptr || !s.r || !s.v.problem.empty()) return;
    if (judged_by_bars(s, dtype, VerifyMode::kBound)) {
      tallies[t].merge(
          judge_cells(dtype, *s.r, &naive.at(t), value, *sigma, *bound, oracle_options.lambda));
    } else {  // an integer output with a bar: a position (argmax, argmin)
      tallies[t].merge(
          judge_index_cells(*s.r, &naive.at(t), value, *sigma, *bound, oracle_options.lambda));
    }
  };
  const Oracle oracle = [&] {
    const Stopwatch evaluating(report.timing.oracle_s);
    return evaluate_oracle(graph, inputs, options);
  }();
  report.unchecked = unchecked;
  report.lambda = oracle.lambda;
  for (ir::TensorId t : outputs) {
    OutputVerdict v = started.at(t).v;
    const DType dtype = tensor_dtype(graph, t);
    if (judged_by_bars(started.at(t), dtype, VerifyMode::kBound) ||
        (v.problem.empty() && tallies.contains(t))) {  // floats; positions with their bars
      if (auto u = oracle.unmodelled.find(t); u != oracle.unmodelled.end())
        v.unmodelled = u->second;
      tallies[t].into(v);
    } else if (v.problem.empty()) {  // an integer output: exact, bit for bit the naive run's
      const BufferComparison& c = *v.vs_naive;
      v.failing_cells = c.differing_cells;
      v.max_abs_diff = c.max_abs_diff;
      v.worst_point = c.worst_point;
      v.worst_diff = c.max_abs_diff;
    }
    v.verdict = verdict_of(v, unchecked);
    report.outputs.push_back(std::move(v));
  }
  return report;
}

VerifyReport verify_outputs(const ir::Graph& graph, const BufferMap& inputs,
                            const BufferMap& results, const VerifyOptions& options) {
  const ExecutableKernels& naive_kernels =
      options.naive_kernels != nullptr       ? *options.naive_kernels
      : options.mode == VerifyMode::kBitwise ? ExecutableKernels::reference()
      : options.oracle.kernels != nullptr    ? *options.oracle.kernels
                                             : fast_kernels();
  VerifyTiming timing;
  const BufferMap naive = [&] {
    const Stopwatch running(timing.naive_s);
    return NaiveExecutor(graph, naive_kernels).run_outputs(inputs);
  }();
  if (options.mode == VerifyMode::kBound) {
    VerifyReport report =
        verify_bound_streaming(graph, inputs, results, naive, options.oracle, options.unchecked);
    report.timing.naive_s = timing.naive_s;
    return report;
  }
  std::optional<Oracle> oracle;
  if (options.mode != VerifyMode::kBitwise) {
    OracleOptions oracle_options = options.oracle;
    if (oracle_options.seconds == nullptr) oracle_options.seconds = &timing.operations;
    const Stopwatch evaluating(timing.oracle_s);
    oracle = evaluate_oracle(graph, inputs, oracle_options);
  }
  if (options.mode == VerifyMode::kExact && !oracle->exact_reason.empty()) {
    throw Error(fmt::format("exact verification does not apply: {}", oracle->exact_reason));
  }
  VerifyReport report;
  {
    const Stopwatch judging(timing.judge_s);
    report = verify_outputs(graph, results, options.mode, &naive, oracle ? &*oracle : nullptr,
                            options.unchecked);
  }
  report.timing = std::move(timing);
  return report;
}

}  // namespace tapestry::runtime
