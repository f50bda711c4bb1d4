// Private: the fast bodies of conv2d's gradients (kernels/training.yaml), conv_grad.cpp.
//
// A call over the metakernel's own layout is one oneDNN convolution backward primitive on
// sub-tensors of the views (float32): conv2d_grad_input's index box [n, c, o, i, j] is the
// backward-data problem of an n × c image batch, o output channels and an i × j filter (a box
// that starts at filter tap (0, 0): a shard of the o reduction or of n and c), and
// conv2d_grad_weight's box [o, c, i, j, n] the backward-weights problem of o × c filters of
// i × j taps over n images. Other boxes (a shard of the filter taps that does not start at tap
// 0, hand-built IPFs) and float64 run loops over raw pointers: a scaled row added into the
// result plane per filter tap (grad_input), a strided dot product per filter cell
// (grad_weight), in the reference kernel's order.
#pragma once

#include "tapestry/runtime/kernel.h"

namespace tapestry::runtime::fast {

void conv2d_grad_input_kernel(const KernelCall& call);
void conv2d_grad_weight_kernel(const KernelCall& call);

}  // namespace tapestry::runtime::fast
