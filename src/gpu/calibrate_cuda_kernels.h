// The CUDA kernels of the GPU calibration (calibrate_cuda.h), callable from host C++: each
// enqueues on `stream` and returns; launch errors surface at the next CUDA call checked.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tapestry::gpu::calibration_kernels {

/// Element types fill_uniform writes.
enum class FillType : int { kFloat32, kFloat64, kBFloat16, kFloat16 };

/// data[i] = a uniform value in [-1, 1) from a hash of (seed, i), for i < elements.
void fill_uniform(void* data, std::int64_t elements, FillType type, std::uint32_t seed,
                  cudaStream_t stream);

/// dst[i] = src[i] for i < n (16-byte elements), a grid-stride loop over `blocks` blocks.
void copy(const void* src, void* dst, std::int64_t n, int blocks, cudaStream_t stream);

/// Block b owns the 16-byte elements [b·per_block, (b+1)·per_block) of `a` and of `b_buf` and
/// copies them a → b, b → a, … `passes` times (a barrier between passes), loading and storing
/// through L2 only (not L1): with a and b in L2, the rate is L2's. Bytes moved: 2 · 16 · blocks ·
/// per_block · passes.
void ping_pong(void* a, void* b_buf, std::int64_t per_block, int passes, int blocks,
               cudaStream_t stream);

/// A kernel that does nothing (one block of one thread): launch overheads.
void empty(cudaStream_t stream);

}  // namespace tapestry::gpu::calibration_kernels
