// The CUDA backend: an application graph run on one NVIDIA GPU.
//
// Built when CMake finds nvcc (TAPESTRY_CUDA; docs/gpu.md). Without it the functions below still
// link: `compiled()` is false, `device_count()` 0, and constructing a CudaExecutor is an Error
// that says so. A build with CUDA on a machine without a GPU (or driver) has `device_count()` 0
// and the same Error; its GPU tests skip.
//
// CudaExecutor compiles the lowered graph once (the block executor's program: one task per
// Application, its KernelCall, the dependency DAG; block_program.h) into a *device program*
// (src/gpu/device_program.h): each task becomes a step on one of `streams` CUDA
// streams, with events wherever a step depends on a step of another stream; every tensor gets
// a fixed offset in one device arena, tensors whose lifetimes do not overlap sharing memory
// (the reuse adds the dependencies that make it safe). A task whose kernel has a device kernel
// (device_kernels.h: cuBLASLt GEMMs, cuDNN convolutions, the project's own CUDA kernels) runs on
// the GPU; any other runs as a host step (its input boxes copied to pinned memory, the CPU
// kernel in a stream callback, its output boxes copied back), so every graph runs.
//
// A run copies the inputs to the arena, runs the steps and copies the outputs back. With
// `graph` (the default) the first run records the steps into a CUDA graph and every later run
// replays it: one launch for the whole program, no per-kernel host overhead.
//
//   CudaExecutor gpu(app_graph, {.streams = 4});          // Error when no GPU is usable
//   CudaExecutor::Measured m = gpu.run_measured(inputs);   // m.stats.wall_s: GPU time (events)
//   verify_run(graph, inputs, results, …)                  // the float64 oracle, as for the CPU
//
// Errors: construction throws tapestry::Error when CUDA is missing, no device is usable, a
// kernel is unknown (naming the operation) or the arena exceeds the device's free memory or
// `memory_limit_bytes` (naming both sizes); `run` throws an Error naming the application when a
// kernel or a CUDA call fails. `run` is const; concurrent runs on one executor are serialised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tapestry/runtime/executor.h"
#include "tapestry/runtime/run_metrics.h"

namespace tapestry::gpu {

class DeviceKernels;
struct DeviceProgram;

/// True when this build has the CUDA backend.
[[nodiscard]] bool compiled();
/// Usable CUDA devices: 0 without the backend, a driver or a GPU.
[[nodiscard]] int device_count();
/// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.2 GiB)"; Error when `device` is not usable.
[[nodiscard]] std::string device_description(int device = 0);
/// Why no device is usable ("this build has no CUDA backend (nvcc was not found)", "no CUDA
/// device: cudaGetDeviceCount: no CUDA-capable device is detected"), or "" when one is.
[[nodiscard]] std::string unavailable_reason();

struct CudaExecutorOptions {
  int device = 0;
  /// CUDA streams the steps are spread over (≥ 1).
  int streams = 4;
  /// Record the run into a CUDA graph once and replay it on later runs.
  bool graph = true;
  /// float32 GEMMs and convolutions may use TF32 tensor cores (the verifier must be told).
  bool allow_tf32 = false;
  /// CPU kernels for host steps; nullptr: fast_kernels().
  const runtime::ExecutableKernels* host_kernels = nullptr;
  /// Device kernels; nullptr: cuda_kernels().
  const DeviceKernels* device_kernels = nullptr;
  /// When > 0, construction fails if the arena (plus inputs and outputs) exceeds it.
  std::int64_t memory_limit_bytes = 0;
  /// Fill the arena with NaN bytes (0xFF) before each run, so an unwritten cell shows.
  bool poison = false;
  /// Time every step with a pair of events (CudaRunStats::step_s); implies no CUDA graph.
  bool profile = false;
};

/// What one run did, beyond RunMetrics.
struct CudaRunStats {
  double compute_s = 0;   // the steps alone, GPU time between two events
  double copy_in_s = 0;   // inputs host → device
  double copy_out_s = 0;  // outputs device → host
  bool replayed = false;  // ran as a CUDA graph replay
  std::int64_t arena_bytes = 0;
  std::size_t device_steps = 0;
  std::size_t host_steps = 0;
  std::map<std::string, std::size_t> host_steps_by_kernel;  // kernel → host steps
  /// With CudaExecutorOptions::profile: each application's GPU time (from the event before it
  /// on its stream to the one after; streams overlap, so these may sum to more than compute_s),
  /// in the order of program().block.tasks.
  std::vector<double> step_s;
};

class CudaExecutor final : public runtime::Executor {
 public:
  explicit CudaExecutor(const ir::Graph& graph, CudaExecutorOptions options = {});
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  /// Runs the graph; `inputs` must hold exactly the graph inputs (executor.h). Returns the
  /// inputs and the graph outputs (host buffers).
  [[nodiscard]] runtime::BufferMap run(runtime::BufferMap inputs) const override;

  struct Measured {
    runtime::BufferMap buffers;
    runtime::RunMetrics
        metrics;  // wall_s = compute_s; flops, gflops; peak_memory_bytes = the arena
    CudaRunStats stats;
  };
  [[nodiscard]] Measured run_measured(runtime::BufferMap inputs) const;

  [[nodiscard]] const DeviceProgram& program() const;
  /// Each application's name, operation and kernel, in the order of CudaRunStats::step_s.
  struct StepName {
    std::string application, operation, kernel;
  };
  [[nodiscard]] std::vector<StepName> step_names() const;
  [[nodiscard]] std::size_t application_count() const;
  [[nodiscard]] std::int64_t flops() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tapestry::gpu
