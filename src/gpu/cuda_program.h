// CudaProgram: a DeviceProgram (device_program.h) issued on one GPU — the step machinery the
// CUDA executor (cuda.h: one GPU, the whole graph) and the NCCL executor (nccl_executor.h: one
// rank's program) share. CUDA builds only (cuda_executor.cpp).
//
// Construction allocates the arena (one cudaMalloc), a workspace and library handles per stream,
// the events, and pinned host mirrors of the tensors host steps touch, and builds every kernel
// step's KernelCall with its final origins. A run copies the inputs to the arena, issues the
// steps between a fork and a join event — directly on the first run, recorded into a CUDA graph
// on the second and replayed after (CudaExecutorOptions::graph) — copies the output slots back,
// and synchronises once. A communication step (DeviceStep::communication) is handed to
// `communicate` with its stream, which enqueues its NCCL call there (it is captured into the
// graph like any kernel).
//
//   CudaProgram gpu(graph, plan_device_program(…), {.streams = 4});
//   CudaProgram::Run r = gpu.run(inputs);   // r.buffers: the inputs and the output slots
//
// Errors: as CudaExecutor's (cuda.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "device_program.h"
#include "nccl_comm.h"
#include "tapestry/gpu/cuda.h"

namespace tapestry::gpu {

class CudaProgram {
 public:
  /// Enqueues communication task `task`'s call on `stream`.
  using Communicate = std::function<void(std::uint32_t task, CudaStream stream)>;

  CudaProgram(const ir::Graph& graph, DeviceProgram program, CudaExecutorOptions options,
              Communicate communicate = {});
  ~CudaProgram();
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  [[nodiscard]] const DeviceProgram& program() const;
  /// Where slot `slot` lives on the device (null for an empty slot).
  [[nodiscard]] std::byte* device_base(std::uint32_t slot) const;

  struct Run {
    runtime::BufferMap buffers;  // the inputs given, and every output slot (host buffers)
    CudaRunStats stats;
  };
  /// `inputs`: for every input slot with bytes, a host buffer over the slot's range (keyed by
  /// its tensor). Concurrent runs are serialised.
  [[nodiscard]] Run run(runtime::BufferMap inputs) const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

/// Errors unless `options` names a usable device and ≥ 1 stream (CudaExecutor's checks).
void check_cuda_options(const CudaExecutorOptions& options);

}  // namespace tapestry::gpu
