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
#include "tapestry/workflow/run.h"

namespace tapestry::cli {

struct RunOptions {
  std::string graph;
  std::vector<std::string> dims;  // --dim NAME=N
  std::string plan;
  std::vector<std::string> splits;
  std::string inputs;
  std::string outputs;
  std::uint64_t seed = 0;
  std::string verify;            // "", "bound" (plain --verify) or "exact"
  bool allow_unchecked = false;  // --allow-unchecked: unchecked cells PASS with a warning
  std::string kernels = "fast";  // the executable kernels: fast or reference
  std::string executor = "block";
  std::string device = "cpu";         // --device: cpu or cuda (gpu/cuda.h)
  int streams = 0;                    // --device cuda: CUDA streams (0: not given, 4)
  bool tf32 = false;                  // --device cuda: float32 GEMMs on TF32 tensor cores
  bool no_cuda_graph = false;         // --device cuda: issue the steps every run, no graph replay
  bool gpu_profile = false;           // --device cuda: time every step (no graph)
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

/// What --verify asks for (workflow/run.h).
workflow::VerifyCheck verify_check(const RunOptions& options);

/// The end of a run: --verify (workflow::verify_run: the naive run of `graph` on `inputs`, in
/// the mode workflow::verify_mode chooses for `lowered`), then the files of --outputs,
/// --metrics (`metrics_text`) and --trace (`trace_text`), all or nothing. Returns the exit code
/// (1 on a verify FAIL or UNCHECKED). `reference` and `fast`: the kernel sets of the naive run and
/// the oracle (null: the built-in ones; sets with kernel bodies, runtime/body_kernels.h, for
/// graphs that use user kernels).
int verify_and_write(const ir::Graph& graph, const rewrite::LowerResult& lowered,
                     const runtime::BufferMap& inputs, const runtime::BufferMap& results,
                     std::optional<runtime::Oracle> oracle, const RunOptions& options,
                     const std::string& metrics_text, const std::string& trace_text,
                     const runtime::ExecutableKernels* reference = nullptr,
                     const runtime::ExecutableKernels* fast = nullptr);

/// `tapestry run --executor mpi` (run_mpi.cpp); `options` already checked and split.
int run_mpi(const RunOptions& options);

}  // namespace tapestry::cli
