// What `tapestry run`'s two paths share: the options, and the helpers both the in-process run
// (cmd_run.cpp) and the MPI run (run_mpi.cpp) use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernel_sources.h"
#include "tapestry/ir/graph.h"
#include "tapestry/runtime/oracle.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::cli {

struct RunOptions {
  std::string graph;
  std::string plan;
  std::vector<std::string> splits;
  std::string inputs;
  std::string outputs;
  std::uint64_t seed = 0;
  std::string verify;            // "", "bound" (plain --verify) or "exact"
  bool allow_unchecked = false;  // --allow-unchecked: unchecked cells PASS with a warning
  std::string kernels = "fast";  // the executable kernels: fast or reference
  std::string executor = "block";
  std::string target;                 // --executor mpi: device i of the target is rank i
  std::string collectives = "exact";  // --executor mpi: exact, all or none
  int threads = 0;
  std::string memory_limit;
  std::string metrics;
  std::string trace;
  bool quiet = false;
  int repeat = 1;
  int warmup = 0;
  bool trust_ipfs = false;
  bool ignore_placement = false;  // drop the plan's place and mesh (graph_input.h)
  // --optimize: search the plan (search/optimize.h) for the fastest on --target instead.
  bool optimize = false;
  double time_budget_s = 0;
  std::uint64_t max_evals = 0;
  std::string max_memory_per_device;

  KernelSources kernel_sources;    // --kernel-dir, --plugin
  bool reference_kernels = false;  // from `kernels`
};

/// "2G", "512M", "1.5GiB", "100000" → bytes; Error naming --memory-limit otherwise.
std::int64_t parse_byte_size(const std::string& text);

/// The buffers of `from`'s tensors re-keyed onto the same-named tensors of `to`.
runtime::BufferMap rekey(const ir::Graph& from, const ir::Graph& to,
                         const runtime::BufferMap& buffers);

/// The lowered run's buffers of `graph`'s outputs, keyed by `graph`'s tensors.
runtime::BufferMap outputs_of(const ir::Graph& graph, const ir::Graph& lowered,
                              const runtime::BufferMap& buffers);

/// The end of a run: --verify (against the naive run of `graph` on `inputs`), then the files of
/// --outputs, --metrics (`metrics_text`) and --trace (`trace_text`), all or nothing. Returns the
/// exit code (1 on a verify FAIL or UNCHECKED). The naive run uses `naive_kernels`, the oracle
/// `oracle_kernels` (null: the built-in reference and fast sets; sets with kernel bodies,
/// runtime/body_kernels.h, for graphs that use user kernels).
int verify_and_write(const ir::Graph& graph, const runtime::BufferMap& inputs,
                     const runtime::BufferMap& results, std::optional<runtime::Oracle> oracle,
                     bool reduction_split, const RunOptions& options,
                     const std::string& metrics_text, const std::string& trace_text,
                     const runtime::ExecutableKernels* naive_kernels = nullptr,
                     const runtime::ExecutableKernels* oracle_kernels = nullptr);

/// `tapestry run --executor mpi` (run_mpi.cpp); `options` already checked and split.
int run_mpi(const RunOptions& options);

}  // namespace tapestry::cli
