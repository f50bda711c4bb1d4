// The device kernels that run on the pointwise engine (pointwise.h), and the helpers the other
// device kernels share: the element type of a dtype, a launch's device addresses, CUDA errors.
//
//   relu gelu exp neg tanh sigmoid sqrt log      x → result
//   floor ceil round                             x → result (exact)
//   add sub mul div maximum                      a, b → result (broadcasting through the IPFs)
//   bias_add                                     x, bias → result
//   cast                                         x → result (float dtypes)
//   mul_scalar                                   x → result, · factor/divisor
//   ones_like zeros_like                         result = value
//   relu_grad gelu_grad tanh_grad sigmoid_grad sqrt_grad   (x or y), d_result → result
//   maximum_grad_a maximum_grad_b                a, b, d_result → result
//   sgd                                          param, grad → result (lr, weight_decay)
//   transpose permute reshape slice broadcast expand unpad   x → result, a copy
//   pad pad2d pad3d                              x → result, the value outside x's box
//   unslice                                      x → result, 0 outside [start, start + m)
//
// Each supports a call when every port has one element per index point, the dtypes are the ones
// the CPU kernel takes (one dtype for all ports but cast's), and the collapsed loop has at most
// kMaxRank dims; integer div stays on the host.
#pragma once

#include <optional>
#include <string>

#include "device_kernels.h"
#include "pointwise.h"
#include "port_layout.h"

namespace tapestry::gpu::kernels {

/// The engine's element type of `dtype`, or nullopt (int8, bool, …).
std::optional<ElemType> elem_type(ir::DType dtype);

/// The device address of `port`'s cell at the first point of the box its layout was made for.
void* device_address(const runtime::InputPort& port, const PortLayout& layout);
void* device_address(const runtime::OutputPort& port, const PortLayout& layout);

/// Throws call.fail("<what>: <CUDA's message>") unless `status` (a cudaError_t) is 0.
void check_cuda(const runtime::KernelCall& call, int status, std::string_view what);

/// Enqueues `op` over `call.index` with output `out` and inputs `in` (ports of `call`), through
/// the pointwise engine; `scalar` as in PointwiseLaunch. Fails (call.fail) when the loop has more
/// than kMaxRank dims (supports() checks pointwise_rank first).
void launch_pointwise_call(const runtime::KernelCall& call, const DeviceContext& ctx,
                           PointwiseOp op, const runtime::OutputPort& out,
                           std::span<const runtime::InputPort* const> in, double scalar = 0,
                           double scalar2 = 0);

/// The rank of the collapsed loop of `op`'s ports over call.index (≤ kMaxRank to launch).
std::size_t pointwise_rank(const runtime::KernelCall& call, const runtime::OutputPort& out,
                           std::span<const runtime::InputPort* const> in);

/// Enqueues `l` through launch_pointwise, or hands it to the hook when one is set (tests without a
/// GPU interpret the launches on host memory: gpu_kernels_test). Returns 0 or an error code.
int run_pointwise(const PointwiseLaunch& l, void* stream);
using PointwiseHook = int (*)(const PointwiseLaunch& l);
void set_pointwise_hook(PointwiseHook hook);

/// Registers the kernels listed above.
void register_pointwise_kernels(DeviceKernels& kernels);

}  // namespace tapestry::gpu::kernels
