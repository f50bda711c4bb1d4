// conv2d on the GPU through cuDNN (cudnnConvolutionForward, the legacy API).
//
// The call's box is one convolution with zero padding (Tapestry pads with a separate pad
// operation) and the stride of x's IPF: x [n, c, ih, iw], w [o, c, kh, kw] and the result
// [n, o, oh, ow] as 4-d tensors with the views' strides (cudnnSetTensor4dDescriptorEx), so
// shards along n, o, oh, ow and a split reduction's channel range are other pointers and extents.
// cuDNN's filters must be packed OIHW: a filter view that is not (a shard of o or c) is copied
// into a packed block (cudaMallocAsync on the stream) first. f32 runs without TF32 unless
// ctx.allow_tf32 (CUDNN_FMA_MATH; cuDNN's default math would use it), f64 in double, bf16/f16 on
// tensor cores accumulating in float32. The forward algorithm is cuDNN's heuristic choice
// (cudnnGetConvolutionForwardAlgorithm_v7) within ctx.workspace, cached per shape, strides,
// types and alignments; where cuDNN has none, a plain CUDA convolution runs the call
// (simple_conv.h). grouped, dilated and 3-d convolutions are host steps.
#pragma once

#include "device_kernels.h"

namespace tapestry::gpu::kernels {

bool conv_supports(const runtime::KernelCall& call);
void conv_launch(const runtime::KernelCall& call, const DeviceContext& ctx);
/// For tests: every conv2d runs on the plain CUDA convolution (true) instead of cuDNN (false).
void force_simple_conv(bool on);
/// Registers conv2d.
void register_conv_kernels(DeviceKernels& kernels);

}  // namespace tapestry::gpu::kernels
