// Cell-by-cell comparison of buffers and of a run's tensors.
#include "tapestry/runtime/compare.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

Point unravel(const Range& range, std::int64_t linear) {
  std::vector<std::int64_t> coords(range.rank());
  for (std::size_t k = range.rank(); k-- > 0;) {
    const std::int64_t extent = range.extent(k);
    coords[k] = range.start()[k] + linear % extent;
    linear /= extent;
  }
  return Point(std::span<const std::int64_t>(coords));
}

namespace {

template <typename T>
void compare_values(std::span<const T> a, std::span<const T> b, const Range& range,
                    BufferComparison& out) {
  std::int64_t worst = -1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    // Bitwise on purpose: NaN equals NaN only bitwise, -0 differs from +0 (compare.h).
    // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) == 0) continue;
    ++out.differing_cells;
    const double x = static_cast<double>(a[i]);
    const double y = static_cast<double>(b[i]);
    double abs =
        std::isnan(x) || std::isnan(y) ? std::numeric_limits<double>::infinity() : std::fabs(x - y);
    const double scale = std::max(std::fabs(x), std::fabs(y));
    const double rel = abs == 0 ? 0 : (std::isinf(abs) ? abs : abs / scale);
    if (worst < 0 || abs > out.max_abs_diff) {
      out.max_abs_diff = abs;
      worst = static_cast<std::int64_t>(i);
    }
    out.max_rel_diff = std::max(out.max_rel_diff, rel);
  }
  if (worst >= 0) out.worst_point = unravel(range, worst);
}

}  // namespace

BufferComparison compare_buffers(const Buffer& a, const Buffer& b) {
  BufferComparison out;
  if (a.dtype() != b.dtype() || a.range() != b.range()) return out;
  out.comparable = true;
  out.cells = a.size();
  visit_storage_dtype(a.dtype(), [&]<typename T>() {
    compare_values<T>(a.values<T>(), b.values<T>(), a.range(), out);
  });
  out.bitwise_equal = out.differing_cells == 0;
  return out;
}

bool BufferComparison::within(double abs_tol, double rel_tol) const {
  if (!comparable) return false;
  if (bitwise_equal) return true;
  // max_abs_diff and max_rel_diff may come from different cells; the bound below is the
  // documented, slightly conservative test: every cell within abs_tol, or within rel_tol.
  return max_abs_diff <= abs_tol || max_rel_diff <= rel_tol;
}

std::string BufferComparison::summary() const {
  if (!comparable) return "not comparable (dtype or range differ)";
  if (bitwise_equal) return "bitwise equal";
  return fmt::format("differs in {} of {} cells; max abs {:g} at {}, max rel {:g}", differing_cells,
                     cells, max_abs_diff, worst_point ? worst_point->to_string() : "?",
                     max_rel_diff);
}

bool TensorsComparison::all_bitwise_equal() const {
  for (const TensorComparison& t : tensors) {
    if (!t.result || !t.result->bitwise_equal) return false;
  }
  return true;
}

bool TensorsComparison::all_within(double abs_tol, double rel_tol) const {
  for (const TensorComparison& t : tensors) {
    if (!t.result || !t.result->within(abs_tol, rel_tol)) return false;
  }
  return true;
}

double TensorsComparison::max_abs_diff() const {
  double worst = 0;
  for (const TensorComparison& t : tensors) {
    if (t.result) worst = std::max(worst, t.result->max_abs_diff);
  }
  return worst;
}

double TensorsComparison::max_rel_diff() const {
  double worst = 0;
  for (const TensorComparison& t : tensors) {
    if (t.result) worst = std::max(worst, t.result->max_rel_diff);
  }
  return worst;
}

std::string TensorsComparison::summary() const {
  std::string out;
  for (const TensorComparison& t : tensors) {
    out += fmt::format("{}: {}\n", t.name, t.result ? t.result->summary() : "missing on one side");
  }
  return out;
}

TensorsComparison compare_tensors(const ir::Graph& graph, const BufferMap& a, const BufferMap& b,
                                  std::optional<std::vector<ir::TensorId>> tensors) {
  TensorsComparison out;
  for (ir::TensorId t : tensors ? *tensors : graph_outputs(graph)) {
    TensorComparison c{t, tensor_name(graph, t), std::nullopt};
    auto ia = a.find(t);
    auto ib = b.find(t);
    if (ia != a.end() && ib != b.end()) c.result = compare_buffers(ia->second, ib->second);
    out.tensors.push_back(std::move(c));
  }
  return out;
}

}  // namespace tapestry::runtime
