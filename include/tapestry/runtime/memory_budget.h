// Memory budgets: refusing a run, before it allocates anything, when its tensors cannot fit.
//
// Every size that comes from a graph is known before a run: the block executor's estimate is
// the peak of its sequential schedule (block_executor.h: inputs + the buffers live at each
// application), and the reference executors allocate every tensor at once. These functions
// compute those numbers from the graph alone — no kernel is prepared, no buffer allocated, no
// input read or generated — and compare them with a limit (`--memory-limit`) and with the
// machine's physical memory, so a graph declaring `f32[1000000000000, 5]` is an Error naming
// the estimate, never a std::bad_alloc (or an out-of-memory kill) halfway through.
//
//   // X: f32[104857600]; Y = relu(X), one application
//   MemoryEstimate e = estimate_block_memory(app_graph);   // == BlockExecutor's estimate
//   e.peak_bytes           // 838860800
//   e.peak_description     // "after the application of 'Y' over zr[0:104857600] starts: X …"
//   check_memory_budget(e, 100 << 20);
//     // Error "memory limit 100.0 MiB exceeded: the plan needs an estimated 800.0 MiB at its
//     //        peak (after application 'Y/0' starts: X 400.0 MiB, Y 400.0 MiB)"
//
// Sums saturate at INT64_MAX ("more than any machine"); byte counts of single tensors are
// overflow-checked where the graph is built (zspace::checked_mul).
#pragma once

#include <cstdint>
#include <string>

#include "tapestry/ir/graph.h"

namespace tapestry::runtime {

/// A peak memory estimate and what is live at the peak ("before any application: X 4.0 MiB").
struct MemoryEstimate {
  std::int64_t peak_bytes = 0;
  std::string peak_description;
};

/// The block executor's estimate for `graph` (BlockExecutor::estimated_peak_memory_bytes, the
/// same number), computed without compiling kernels: cheap enough to call before any input
/// exists. Errors as BlockExecutor's construction for a graph it cannot schedule.
[[nodiscard]] MemoryEstimate estimate_block_memory(const ir::Graph& graph);

/// Bytes of every tensor of `graph` (what the naive and application executors allocate at
/// once), saturating. `inputs_only`: the graph inputs alone.
[[nodiscard]] std::int64_t tensor_bytes(const ir::Graph& graph, bool inputs_only = false);

/// The machine's physical memory (sysconf(_SC_PHYS_PAGES) × page size); 0 when unknown.
[[nodiscard]] std::int64_t physical_memory_bytes();

/// Error when `estimate` exceeds `limit_bytes` (when > 0), "memory limit … exceeded: the plan
/// needs an estimated … at its peak (…)", or the physical memory, "the plan needs an estimated
/// …, more than this machine's … of physical memory (…)".
void check_memory_budget(const MemoryEstimate& estimate, std::int64_t limit_bytes);

/// Bytes the streaming float64 oracle of `graph` (oracle.h) holds at its peak, an upper bound
/// of Oracle::peak_bytes plus its rules' temporaries: over the operations in order, the live
/// tensors (an input's float64 value from its first reader to its last; a computed float
/// tensor's value, σ and D from its producer to its last reader; integer tensors as they are)
/// plus the operation's temporaries (bilinear rules: 10 float64 buffers the size of each input
/// and 14 the size of each output; the others 4 and 10). A chain the oracle runs a block at a
/// time (OracleOptions::chain_cells at its default) holds the tensors it assembles and the whole
/// ones it reads from its start, and per block the block's cells of what it makes and of the
/// earlier tensors it reads in part (as copies), with each operation's temporaries over the
/// block. The kernels' own scratch (a convolution's im2col, BLAS packing) is not counted.
/// Saturating.
[[nodiscard]] std::int64_t oracle_bytes(const ir::Graph& graph);

/// Bytes the naive run of --verify (NaiveExecutor::run_outputs) holds at its peak besides the
/// caller's inputs: the tensors live at once in the same order. Saturating.
[[nodiscard]] std::int64_t naive_run_bytes(const ir::Graph& graph);

/// What a `tapestry run` holds besides the executor: see check_run_memory.
struct RunMemoryOptions {
  std::int64_t limit_bytes = 0;  // bounds the plan's peak (block executor); 0: no limit
  bool block_executor = true;    // false: the application executor (every tensor at once)
  bool verify = false;           // a naive run of the unsharded graph follows the run
  bool oracle = false;           // and the float64 oracle of the graph (--verify, =exact)
};

/// Checks, before any input is read or generated, that a run of `lowered` (lowered from
/// `graph`) fits: the plan's peak within `limit_bytes`, and the whole run within physical
/// memory. The run holds the caller's copy of the inputs and the executor's peak (block: the
/// estimate; application: every tensor of `lowered`); `verify` then holds the caller's inputs,
/// the run's buffers (its inputs and outputs), a copy of the outputs and naive_run_bytes(graph)
/// (the naive run); `oracle` adds oracle_bytes(graph) to both (it may be made before the run). The
/// larger of the two must fit. Error as check_memory_budget, naming the part that dominates.
void check_run_memory(const ir::Graph& graph, const ir::Graph& lowered,
                      const RunMemoryOptions& options);

}  // namespace tapestry::runtime
