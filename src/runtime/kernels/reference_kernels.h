// Registration of the reference kernels, one function per kernel family (one file each).
#pragma once

#include <memory>
#include <vector>

#include "tapestry/rewrite/fused.h"
#include "tapestry/runtime/executable_kernels.h"

namespace tapestry::runtime {

/// relu gelu exp neg tanh sigmoid sqrt; add sub mul div maximum (broadcasting); bias_add.
void register_elementwise_kernels(ExecutableKernels& registry);
/// linear (X·Wᵀ + b), matmul (batched).
void register_linear_matmul_kernels(ExecutableKernels& registry);
/// sum and max over one dim, and `reduce` over a block dim.
void register_reduce_kernels(ExecutableKernels& registry);
/// softmax over the last dim.
void register_softmax_kernels(ExecutableKernels& registry);
/// mean and variance over one dim (kept with extent 1).
void register_moment_kernels(ExecutableKernels& registry);
/// max_pool2d and avg_pool2d (NCHW, strided windows).
void register_pool_kernels(ExecutableKernels& registry);
/// conv2d (NCHW, strided windows).
void register_conv_kernels(ExecutableKernels& registry);
/// transpose, permute, reshape, slice (copies through the IPFs), pad and cast.
void register_layout_kernels(ExecutableKernels& registry);
/// argmax and argmin along one axis, gather (picks cells by integer indices).
void register_indexing_kernels(ExecutableKernels& registry);
/// What the VJPs need (kernels/autodiff.yaml): ones_like zeros_like sum_to broadcast expand
/// unslice mul_scalar, relu_grad gelu_grad tanh_grad sigmoid_grad sqrt_grad, maximum_grad_a/_b,
/// linear_grad_w.
void register_autodiff_kernels(ExecutableKernels& registry);
/// The training kernels of kernels/training.yaml: softmax, conv2d, max and pooling gradients,
/// mse and cross_entropy and their gradients, sgd, sgd_momentum, adam.
void register_training_kernels(ExecutableKernels& registry);
/// The `fused` kernel (kernels/fused.cpp): runs a fused operation's stages with these kernels.
void register_fused_kernel(ExecutableKernels& registry);

/// The `fused` kernels' prepare function: the operation's stages, parsed once from its params
/// (parsing them per call costs ~10 µs, more than a small shard's work).
std::shared_ptr<const void> prepare_fused_stages(const KernelCall& call);
/// The stages prepare_fused_stages made, from `call.prepared` (which must be set).
const std::vector<rewrite::FusedStage>& prepared_fused_stages(const KernelCall& call);

/// Runs `stages` (rewrite/fused.h) over `call`'s index with the kernels of `kernels`, each
/// intermediate in a temporary block of exactly the box the next stage reads; the last stage
/// writes `call`'s outputs. The reference `fused` kernel uses the reference kernels, the fast
/// one the fast kernels.
void run_fused_stages(const KernelCall& call, const std::vector<rewrite::FusedStage>& stages,
                      const ExecutableKernels& kernels);

}  // namespace tapestry::runtime
