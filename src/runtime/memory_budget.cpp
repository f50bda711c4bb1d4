// Memory budgets (memory_budget.h): estimates from the graph alone, checked before any run.
#include "tapestry/runtime/memory_budget.h"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "block_program.h"
#include "oracle_chains.h"
#include "run_support.h"
#include "tapestry/runtime/oracle.h"
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
  return detail::estimate_program_memory(graph, detail::SlotPieces::kRows);
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

namespace {

// The peaks of the streaming naive run and oracle, simulated on the graph in the order they run
// it: before each operation the inputs it reads for the first time enter (the oracle's float64
// copies; the naive run reads the caller's), its outputs join the live set, then the tensors
// releases_after lists leave. A chain (oracle_chains.h) runs in the oracle a block at a time:
// the tensors it assembles and the whole tensors it reads first, then each block's parts.
struct StreamPeaks {
  std::int64_t naive = 0;
  std::int64_t oracle = 0;
};

// The rule's temporaries, float64: bilinear makes up to 9 transforms of each input (|x|, x², σ²,
// |x| + D, the 0/1 flags) and holds 12 buffers the size of its outputs (the kernel runs, σ, D);
// the other rules fewer: 4 of each input and 10 of each output.
std::int64_t temporaries(std::string_view kernel, std::int64_t in_cells, std::int64_t out_cells) {
  const bool bilinear = kernel == "linear" || kernel == "matmul" || kernel == "conv2d" ||
                        kernel == "grouped_conv2d" || kernel == "mul" || kernel == "op:linear" ||
                        kernel == "op:matmul" || kernel == "op:conv2d" ||
                        kernel == "op:grouped_conv2d" || kernel == "op:mul";
  return mul_saturating(add_saturating(mul_saturating(in_cells, bilinear ? 10 : 4),
                                       mul_saturating(out_cells, bilinear ? 14 : 10)),
                        sizeof(double));
}

StreamPeaks stream_peaks(const ir::Graph& graph) {
  const ir::TopologicalOrder topo = graph.topological_order();
  std::vector<ir::OperationId> order;
  for (ir::NodeId node : topo.order)
    if (std::optional<ir::OperationId> op = graph.as_operation(node)) order.push_back(*op);
  const std::vector<std::vector<ir::TensorId>> release = detail::releases_after(graph, order);
  const std::vector<ir::TensorId> in = graph_inputs(graph);
  const std::set<ir::TensorId> inputs(in.begin(), in.end());
  const auto cells = [&](ir::TensorId t) { return graph.tensor(t).range().size(); };
  const auto is_float = [&](ir::TensorId t) { return ir::is_float(tensor_dtype(graph, t)); };
  // The oracle's bytes of `n` cells of a tensor: an input's float64 value (its σ and D borrow
  // shared zeros), a computed one's value, σ and D; integer tensors as they are.
  const auto oracle_cells = [&](ir::TensorId t, std::int64_t n) {
    if (!is_float(t))
      return mul_saturating(n,
                            static_cast<std::size_t>(ir::dtype_size_bytes(tensor_dtype(graph, t))));
    return mul_saturating(n, (inputs.contains(t) ? 1 : 3) * sizeof(double));
  };
  const auto oracle_of = [&](ir::TensorId t) { return oracle_cells(t, cells(t)); };
  StreamPeaks peak;

  // The naive run: each operation's outputs join, its released tensors leave (inputs are the
  // caller's).
  std::int64_t naive = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (const auto& e : graph.operation(order[i]).outputs().entries())
      naive = add_saturating(naive, bytes_of(graph, e.value.tensor));
    peak.naive = std::max(peak.naive, naive);
    for (ir::TensorId t : release[i])
      if (!inputs.contains(t)) naive -= bytes_of(graph, t);
  }

  // The oracle: `held` is what the whole tensors it holds cost.
  std::map<ir::TensorId, std::int64_t> held;
  std::int64_t oracle = 0;
  const auto hold = [&](ir::TensorId t) {
    if (held.contains(t)) return;
    held[t] = oracle_of(t);
    oracle = add_saturating(oracle, held[t]);
  };
  const auto drop = [&](std::size_t i) {
    for (ir::TensorId t : release[i]) {
      auto it = held.find(t);
      if (it == held.end()) continue;
      oracle -= it->second;
      held.erase(it);
    }
  };
  const std::vector<detail::OracleChain> chains =
      detail::oracle_chains(graph, order, OracleOptions{}.chain_cells);
  for (std::size_t k = 0, c = 0; k < order.size();) {
    if (c < chains.size() && chains[c].begin == k) {
      const detail::OracleChain& chain = chains[c];
      // The tensors it assembles, and those every block reads whole.
      for (std::size_t j = chain.begin; j < chain.end; ++j) {
        const ir::OperationView op = graph.operation(order[j]);
        for (const auto& e : op.inputs().entries()) {
          const ir::TensorId t = e.value.tensor;
          if (!chain.partial.contains(t) && (inputs.contains(t) || held.contains(t))) hold(t);
        }
        for (const auto& e : op.outputs().entries())
          if (!chain.internal.contains(e.value.tensor)) hold(e.value.tensor);
      }
      // Each block: the parts of earlier tensors it reads (copies, at most: 24 bytes a cell of a
      // computed tensor, 8 of an input's), the outputs of its operations, their temporaries.
      for (std::size_t b = 0; b < chain.blocks(); ++b) {
        const detail::ChainBlock block = detail::chain_block(graph, order, chain, b);
        std::map<ir::TensorId, std::size_t> last;
        for (std::size_t j = 0; j < block.ops.size(); ++j) {
          const ir::OperationView op = block.graph.operation(block.ops[j]);
          for (const auto& e : op.inputs().entries()) last[e.value.tensor] = j;
          for (const auto& e : op.outputs().entries()) last[e.value.tensor] = j;
        }
        std::map<ir::TensorId, std::int64_t> live;
        std::int64_t parts = 0;
        for (std::size_t j = 0; j < block.ops.size(); ++j) {
          const ir::OperationView op = block.graph.operation(block.ops[j]);
          std::int64_t in_cells = 0, out_cells = 0;
          for (const auto& e : op.inputs().entries()) {
            const ir::TensorId mine = e.value.tensor;
            const std::int64_t n = block.graph.tensor(mine).range().size();
            in_cells = add_saturating(in_cells, n);
            const ir::TensorId t = block.original.at(mine);
            if (live.contains(mine) || !chain.partial.contains(t)) continue;
            live[mine] = oracle_cells(t, n);
            parts = add_saturating(parts, live[mine]);
          }
          for (const auto& e : op.outputs().entries()) {
            const ir::TensorId mine = e.value.tensor;
            const std::int64_t n = block.graph.tensor(mine).range().size();
            out_cells = add_saturating(out_cells, n);
            live[mine] = oracle_cells(block.original.at(mine), n);
            parts = add_saturating(parts, live[mine]);
          }
          peak.oracle =
              std::max(peak.oracle, add_saturating(add_saturating(oracle, parts),
                                                   temporaries(op.kernel(), in_cells, out_cells)));
          for (const auto& [mine, at] : last) {
            auto it = live.find(mine);
            if (at != j || it == live.end()) continue;
            parts -= it->second;
            live.erase(it);
          }
        }
      }
      for (; k < chain.end; ++k) drop(k);
      ++c;
      continue;
    }
    const ir::OperationView op = graph.operation(order[k]);
    std::int64_t in_cells = 0, out_cells = 0;
    for (const auto& e : op.inputs().entries()) {
      const ir::TensorId t = e.value.tensor;
      in_cells = add_saturating(in_cells, cells(t));
      if (inputs.contains(t)) hold(t);
    }
    for (const auto& e : op.outputs().entries()) {
      out_cells = add_saturating(out_cells, cells(e.value.tensor));
      hold(e.value.tensor);
    }
    peak.oracle = std::max(peak.oracle,
                           add_saturating(oracle, temporaries(op.kernel(), in_cells, out_cells)));
    drop(k);
    ++k;
  }
  // Outputs that are inputs are copied at the end.
  for (ir::TensorId t : graph_outputs(graph)) {
    if (!inputs.contains(t)) continue;
    peak.naive = add_saturating(peak.naive, bytes_of(graph, t));
    peak.oracle = add_saturating(peak.oracle, mul_saturating(cells(t), 3 * sizeof(double)));
  }
  return peak;
}

}  // namespace

std::int64_t oracle_bytes(const ir::Graph& graph) {
  return stream_peaks(graph).oracle;
}

std::int64_t naive_run_bytes(const ir::Graph& graph) {
  return stream_peaks(graph).naive;
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
    // the naive run's live tensors at its peak (it reads the caller's inputs in place) and the
    // oracle's.
    const std::int64_t naive = naive_run_bytes(graph);
    const std::int64_t results = add_saturating(inputs, mul_saturating(output_bytes(lowered), 2));
    const std::int64_t after =
        add_saturating(add_saturating(add_saturating(inputs, results), naive), oracle);
    if (after > needed) {
      needed = after;
      detail = fmt::format(
          "--verify's naive run holds {} at its peak{}, besides the inputs and the results",
          format_bytes(naive), with_oracle);
    }
  }
  check_physical(needed, "the run", detail);
}

}  // namespace tapestry::runtime
