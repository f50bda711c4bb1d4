// Device kernels: what runs an Application on an NVIDIA GPU (the CUDA backend, cuda.h).
//
// A device kernel is the GPU counterpart of a runtime KernelFn (kernel.h): it receives the same
// KernelCall — index box, params, IPFs, and port views whose origins point into *device* memory
// (the executor's arena) with the tensor buffer's row-major strides — plus a DeviceContext (the
// stream to launch on, library handles, a workspace). It enqueues work on the stream and returns
// without synchronising; it never dereferences a view on the host.
//
// Each kernel has two parts:
//   supports(call)   host-only, called once per Application when the executor compiles its
//                    program (views have null origins then): true when `launch` handles this
//                    call's dtypes, IPF pattern and layout. An Application whose kernel has no
//                    device kernel, or whose `supports` says no, runs as a *host step*: its input
//                    boxes are copied to pinned host memory, the CPU kernel (fast set) runs in a
//                    stream callback, its output boxes are copied back (device_program.h). So
//                    every graph runs; RunMetrics and `tapestry run --device cuda` count the host
//                    steps per kernel.
//   launch(call, ctx) enqueues the computation on ctx.stream. Must be capturable into a CUDA
//                    graph: no synchronisation, no cudaMalloc (use ctx.workspace, or
//                    cudaMallocAsync/cudaFreeAsync on ctx.stream), no host reads of device data.
//
// Semantics match the CPU kernels of the same name: elementwise maps compute the same scalar
// formulas (kernels/scalar_ops.h, compiled for the device); 16-bit float ports are widened to
// float32 per element and each result rounded once (to nearest even); GEMMs accumulate in
// float32 (float64 in float64) in any order, within the verifier's bar of the float64 oracle
// (oracle.h) exactly like the CPU's fast kernels. TF32 is used only when
// DeviceContext::allow_tf32 is set (`--tf32`; the verifier's bar then treats float32 GEMM
// inputs as rounded to 10 mantissa bits).
//
//   const DeviceKernels& kernels = cuda_kernels();
//   const DeviceKernel* k = kernels.find("linear");
//   if (k != nullptr && k->supports(call)) k->launch(device_call, ctx);
//
// This header is plain C++ (no CUDA types): the executor's host-side planning and the tests
// that run without a GPU include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/runtime/kernel.h"

namespace tapestry::gpu {

/// What a device kernel may use while enqueueing work; handles are opaque here (cuda_runtime's
/// cudaStream_t, cublasLtHandle_t, cudnnHandle_t behind void*).
struct DeviceContext {
  int device = 0;
  void* stream = nullptr;     // cudaStream_t
  void* cublaslt = nullptr;   // cublasLtHandle_t, shared by every stream
  void* cudnn = nullptr;      // cudnnHandle_t of this stream (cudnnSetStream done)
  void* workspace = nullptr;  // device scratch of `workspace_bytes`, private to this stream
  std::size_t workspace_bytes = 0;
  bool allow_tf32 = false;  // float32 GEMMs/convolutions may use TF32 tensor cores
};

struct DeviceKernel {
  /// Host-only check at compile time (views have null origins); see the file comment.
  bool (*supports)(const runtime::KernelCall& call) = nullptr;
  /// Enqueues the call on ctx.stream; throws tapestry::Error (call.fail) on a CUDA error.
  void (*launch)(const runtime::KernelCall& call, const DeviceContext& ctx) = nullptr;
};

/// Kernel name → device kernel. Immutable once built; safe to share.
class DeviceKernels {
 public:
  /// Registers `kernel` under `name`; asserts the name is new.
  void add(std::string name, DeviceKernel kernel);
  /// The device kernel called `kernel` (a leading "op:" is ignored), or nullptr.
  [[nodiscard]] const DeviceKernel* find(std::string_view kernel) const;
  /// Every registered name, sorted.
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  std::map<std::string, DeviceKernel, std::less<>> kernels_;
};

/// The built-in device kernels (built once). In a build without CUDA: an empty set.
const DeviceKernels& cuda_kernels();

}  // namespace tapestry::gpu
