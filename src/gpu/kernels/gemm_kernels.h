// linear, linear_nobias, matmul and linear_grad_w on the GPU through cuBLASLt.
//
// Each call is a (batched) GEMM  C[M, N] = A[M, K]·B[K, N] (+ bias[N]), read off the call's IPFs:
//
//   linear   index [batch..., out, in]:  A = x (M = the batch dims, merged), B = wᵀ, N = out,
//            K = in (times the cell window along in, when the IPFs leave `in` inside the cells)
//   matmul   index [batch..., m, n, k]:  A = a, B = b, the batch dims a strided batch (a
//            broadcast batch dim has step 0: looped on the host)
//   linear_grad_w  index [batch..., out, in]:  A = d_result (M = out), B = x (N = in), K = the
//            batch dims (the reduction), merged into one
//
// Every operand's element steps along m/n/k and the batch dims come from port_layout.h, so shards
// (sub-boxes of the index, a split reduction's K range) and views inside larger buffers are just
// other pointers and leading dimensions. A matrix with unit step along one of its two dims is a
// cuBLASLt column-major layout, transposed or not; the output must have one (row-major C is
// computed as Cᵀ = Bᵀ·Aᵀ, so a bias along n is along D's rows: CUBLASLT_EPILOGUE_BIAS). Anything
// else (odd strides, overlapping rows) is supports() false: a host step.
//
// Types: f32 (COMPUTE_32F, or COMPUTE_32F_FAST_TF32 when ctx.allow_tf32), f64 (COMPUTE_64F), bf16
// and f16 inputs (COMPUTE_32F) with an output of the same type or f32 (a split reduction's
// partials). The algorithm cuBLASLt's heuristic picks is cached per shape, types, strides and
// pointer alignments (a mutex-guarded map); descriptors are made per call. Where the heuristic
// offers nothing with the bias epilogue, the bias is added by the pointwise engine after the GEMM
// (for 16-bit outputs that rounds twice, within the bilinear bar); where it offers nothing at
// all (an alignment or leading dimension its kernels do not take), a plain CUDA GEMM runs the
// plan (simple_gemm.h).
#pragma once

#include "device_kernels.h"

namespace tapestry::gpu::kernels {

/// The GEMM of a linear/linear_nobias/matmul call, as the host plans it (also used by `fused`).
/// Registers linear, linear_nobias, matmul and linear_grad_w.
void register_gemm_kernels(DeviceKernels& kernels);

/// True when `call` (kernel linear, linear_nobias or matmul, by call.kernel) maps onto cuBLASLt.
bool gemm_supports(const runtime::KernelCall& call);
/// Enqueues the GEMM of `call`; with `fuse_relu`, relu(result) through the epilogue (RELU or
/// RELU_BIAS), else a pointwise relu after it.
void gemm_launch(const runtime::KernelCall& call, const DeviceContext& ctx, bool fuse_relu = false);

/// For tests: every GEMM runs on the plain CUDA GEMM (true) instead of cuBLASLt (false, default).
void force_simple_gemm(bool on);

}  // namespace tapestry::gpu::kernels
