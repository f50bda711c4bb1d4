// RunMetrics: what one block-executor run measured, and its three renderings.
//
// Every Application the block executor runs is timed (steady clock, nanoseconds from the start
// of execution) and tagged with the pool thread that ran it; its FLOPs and bytes come from the
// compiled program (static: known before the run). From those the run derives per-operation
// totals and the critical path — the longest chain of dependent applications, weighted by their
// measured times, i.e. the wall time no number of threads could beat for this plan.
//
//   BlockExecutor exec(graph, {.threads = 2});
//   auto [buffers, metrics] = exec.run_measured(inputs);
//   metrics.gflops                      // achieved: flops / wall_s / 1e9
//   write_json_file("m.json", metrics_json(metrics));      // `tapestry run --metrics`
//   write_json_file("t.json", chrome_trace(metrics));      // `--trace`: opens in Perfetto
//   fmt::print("{}", summary_table(metrics));
//
// FLOP model (documented in docs/runtime.md): the cost model's (cost/work.h), from each kernel's
// facts (metakernel/kernel_facts.h): `flops` per index point times the cells of the `per_point`
// port's window — a multiply-add counts 2 (linear, matmul; conv2d 2·kh·kw), gelu 8, exp 4,
// layout kernels (transpose, reshape, pad, slice, …) 0, a kernel without facts 1 per point. A
// fused operation sums its stages.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/runtime/kernel_path.h"

namespace tapestry::runtime {

/// One application of one run.
struct ApplicationMetrics {
  std::string name;       // the application's label (else key)
  std::string operation;  // its operation's label (else key)
  std::string kernel;
  std::uint32_t thread = 0;  // pool thread index, 0-based
  double start_s = 0;        // from the start of execution
  double duration_s = 0;
  std::int64_t flops = 0;
  std::int64_t bytes_read = 0;
  std::int64_t bytes_written = 0;
  std::uint64_t fallbacks = 0;  // calls a fast kernel handed to the reference (fast_kernels.h)
  KernelPath path = KernelPath::kReference;  // what computed it (kernel_path.h)
};

/// Totals of one operation's applications.
struct OperationMetrics {
  std::string operation;
  std::string kernel;
  std::size_t applications = 0;
  double busy_s = 0;  // Σ durations
  std::int64_t flops = 0;
  std::int64_t bytes_read = 0;
  std::int64_t bytes_written = 0;
  std::uint64_t fallbacks = 0;  // Σ over its applications
  KernelPathCounts paths{};     // its applications per KernelPath
};

struct RunMetrics {
  double wall_s = 0;  // execution alone: first application start to last end, no input I/O
  std::int64_t flops = 0;
  double gflops = 0;                             // flops / wall_s / 1e9
  std::int64_t peak_memory_bytes = 0;            // measured: inputs + live buffers
  std::int64_t estimated_peak_memory_bytes = 0;  // the program's estimate (--memory-limit)
  int threads = 0;
  double busy_s = 0;                             // Σ application durations
  double critical_path_s = 0;                    // longest dependency chain of measured durations
  std::vector<ApplicationMetrics> applications;  // in start order
  std::vector<OperationMetrics> operations;      // by busy time, descending
};

/// The `--metrics` JSON: top-level wall_s, flops, gflops, peak_memory_bytes,
/// estimated_peak_memory_bytes, threads, busy_s, critical_path_s, applications (count),
/// fallbacks (Σ), paths ({"onednn": applications, …}, non-zero paths only), operations
/// [{operation, kernel, applications, busy_s, flops, gflops, bytes_read, bytes_written,
/// fallbacks, paths}], and per-application records (with their fallbacks and "path") under
/// "application_records".
[[nodiscard]] nlohmann::json metrics_json(const RunMetrics& metrics);

/// Chrome trace-event JSON ({"traceEvents": [...]}, one complete "X" event per application on
/// its thread's track, microseconds), for Perfetto / chrome://tracing.
[[nodiscard]] nlohmann::json chrome_trace(const RunMetrics& metrics);

/// A human summary: the headline figures, a line of applications per kernel path ending in
/// "0 fallbacks" or naming the operations that fell back, then the operations by busy time (top
/// `max_rows`) with their paths, and a `fallbacks` column when any call went from a fast kernel
/// to the reference one:
///
///   kernel paths: onednn 4, vectorised 6 applications; 0 fallbacks
///   kernel paths: openblas 2, reference 2 applications; fallbacks in Y (2 calls)
[[nodiscard]] std::string summary_table(const RunMetrics& metrics, std::size_t max_rows = 12);

/// The summary's paths line: "kernel paths: onednn 4, vectorised 2 applications; 0 fallbacks\n",
/// or "…; fallbacks in Y (2 calls), Z (1 call)\n" naming each operation with fallbacks (in the
/// order given). Also the MPI summary's, over every rank (rank_metrics.h).
[[nodiscard]] std::string kernel_paths_line(
    const KernelPathCounts& paths,
    const std::vector<std::pair<std::string, std::uint64_t>>& fallbacks);

/// "1.234 s", "12.3 ms", "45.6 µs".
[[nodiscard]] std::string format_seconds(double seconds);
/// "68.7 GFLOP", "1.2 MFLOP", "300 FLOP".
[[nodiscard]] std::string format_flops(std::int64_t flops);
/// "1.50 GiB", "64.0 MiB", "512 B".
[[nodiscard]] std::string format_bytes(std::int64_t bytes);

}  // namespace tapestry::runtime
