// Memory budgets (memory_budget.h): estimates from the graph alone, checked before any run.
#include "tapestry/runtime/memory_budget.h"

#include <unistd.h>

#include <limits>

#include <fmt/format.h>

#include "block_program.h"
#include "tapestry/runtime/run_metrics.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::runtime {

namespace {

constexpr std::int64_t kMaxBytes = std::numeric_limits<std::int64_t>::max();

std::int64_t add_saturating(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? kMaxBytes : sum;
}

std::int64_t mul_saturating(std::int64_t a, std::size_t b) {
  std::int64_t product = 0;
  return __builtin_mul_overflow(a, static_cast<std::int64_t>(b), &product) ? kMaxBytes : product;
}

std::int64_t bytes_of(const ir::Graph& graph, ir::TensorId tensor) {
  return zspace::checked_mul(
      graph.tensor(tensor).range().size(),
      static_cast<std::int64_t>(ir::dtype_size_bytes(tensor_dtype(graph, tensor))));
}

std::int64_t output_bytes(const ir::Graph& graph) {
  std::int64_t total = 0;
  for (ir::TensorId t : graph_outputs(graph)) total = add_saturating(total, bytes_of(graph, t));
  return total;
}

void check_physical(std::int64_t needed, const std::string& what, const std::string& detail) {
  const std::int64_t physical = physical_memory_bytes();
  if (physical > 0 && needed > physical) {
    throw Error(
        fmt::format("{} needs an estimated {}, more than this machine's {} of physical "
                    "memory ({})",
                    what, format_bytes(needed), format_bytes(physical), detail));
  }
}

void check_limit(const MemoryEstimate& estimate, std::int64_t limit_bytes) {
  if (limit_bytes > 0 && estimate.peak_bytes > limit_bytes) {
    throw Error(fmt::format(
        "memory limit {} exceeded: the plan needs an estimated {} at its peak ({})",
        format_bytes(limit_bytes), format_bytes(estimate.peak_bytes), estimate.peak_description));
  }
}

}  // namespace

MemoryEstimate estimate_block_memory(const ir::Graph& graph) {
  return detail::estimate_program_memory(graph);
}

std::int64_t tensor_bytes(const ir::Graph& graph, bool inputs_only) {
  std::int64_t total = 0;
  if (inputs_only) {
    for (ir::TensorId t : graph_inputs(graph)) total = add_saturating(total, bytes_of(graph, t));
  } else {
    for (ir::TensorId t : graph.tensors()) total = add_saturating(total, bytes_of(graph, t));
  }
  return total;
}

std::int64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::int64_t>(pages), page_size, &bytes)) {
    return std::numeric_limits<std::int64_t>::max();
  }
  return bytes;
}

void check_memory_budget(const MemoryEstimate& estimate, std::int64_t limit_bytes) {
  check_limit(estimate, limit_bytes);
  check_physical(estimate.peak_bytes, "the plan", estimate.peak_description);
}

std::int64_t oracle_bytes(const ir::Graph& graph) {
  std::int64_t total = 0;
  for (ir::TensorId t : graph.tensors()) {
    const DType dtype = tensor_dtype(graph, t);
    const bool is_float = ir::is_float(dtype);
    const std::int64_t cells = graph.tensor(t).range().size();
    total = add_saturating(
        total, is_float ? mul_saturating(cells, 2 * sizeof(double)) : bytes_of(graph, t));
  }
  return total;
}

void check_run_memory(const ir::Graph& graph, const ir::Graph& lowered,
                      const RunMemoryOptions& options) {
  const std::int64_t inputs = tensor_bytes(graph, /*inputs_only=*/true);
  const std::int64_t oracle = options.oracle ? oracle_bytes(graph) : 0;
  const std::string with_oracle =
      options.oracle ? fmt::format(" and the float64 oracle {}", format_bytes(oracle)) : "";
  std::string detail;
  std::int64_t needed = 0;
  if (options.block_executor) {
    const MemoryEstimate plan = estimate_block_memory(lowered);
    check_limit(plan, options.limit_bytes);  // the physical memory: below, for the whole run
    needed = add_saturating(add_saturating(inputs, plan.peak_bytes), oracle);
    detail = fmt::format("the inputs {}{} and the plan's peak {}, {}", format_bytes(inputs),
                         with_oracle, format_bytes(plan.peak_bytes), plan.peak_description);
  } else {
    const std::int64_t all = tensor_bytes(lowered);
    needed = add_saturating(add_saturating(inputs, all), oracle);
    detail = fmt::format("the inputs {}{} and every tensor of the graph, {}", format_bytes(inputs),
                         with_oracle, format_bytes(all));
  }
  if (options.verify) {
    // After the run: the caller's inputs, the run's inputs and outputs, a copy of the outputs,
    // and the naive run's every tensor (its own copy of the inputs included).
    const std::int64_t naive = tensor_bytes(graph);
    const std::int64_t results = add_saturating(inputs, mul_saturating(output_bytes(lowered), 2));
    const std::int64_t after =
        add_saturating(add_saturating(add_saturating(inputs, results), naive), oracle);
    if (after > needed) {
      needed = after;
      detail = fmt::format(
          "--verify's naive run holds every tensor of the graph, {}{}, besides "
          "the inputs and the results",
          format_bytes(naive), with_oracle);
    }
  }
  check_physical(needed, "the run", detail);
}

}  // namespace tapestry::runtime
