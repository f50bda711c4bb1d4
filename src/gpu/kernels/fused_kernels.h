// The `fused` kernel on the GPU: a fused operation's stages (rewrite/fused.h) run one after the
// other with the device kernels, exactly as runtime::run_fused_stages runs them with the CPU's —
// each stage over index_map(box) with its own IPFs, reading the fused call's views or the
// previous stage's intermediate block, the last stage writing the fused call's outputs. The
// intermediates are device blocks from cudaMallocAsync on the call's stream (freed with
// cudaFreeAsync once the next stage has been enqueued: stream order keeps them alive, and both
// are capturable into a CUDA graph), with the CPU's intermediate dtypes, so a fused run rounds
// where the unfused one does.
//
// A GEMM stage followed by relu (linear / linear_nobias / matmul → relu, the relu reading the
// whole GEMM result cell for cell) is one cuBLASLt call with the RELU (RELU_BIAS) epilogue,
// writing the fused output directly. gelu is not fused into the GEMM: cuBLASLt's GELU epilogue is
// the tanh approximation, Tapestry's gelu the exact erf form — it runs as its own pass.
//
// supports(call) is true when every stage has a device kernel whose supports() accepts the
// stage's sub-call; otherwise the whole fused operation is a host step.
#pragma once

#include "device_kernels.h"

namespace tapestry::gpu::kernels {

/// Registers `fused`.
void register_fused_kernel(DeviceKernels& kernels);

}  // namespace tapestry::gpu::kernels
