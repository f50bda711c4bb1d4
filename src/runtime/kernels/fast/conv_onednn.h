// Private: float32 conv2d through oneDNN's convolution primitive (the fast conv2d's first
// choice; conv.cpp keeps im2col + GEMM for everything this refuses).
//
// The box of a conv2d call in the metakernel's own layout — index [n, o, oh, ow, c], x read at
// [n, c, oh·stride : kh, ow·stride : kw], w at [o, c, *, *], the result at [n, o, oh, ow] —
// is one convolution over sub-tensors of the views:
//
//   src  [N, C, (OH−1)·s + kh, (OW−1)·s + kw]   at x's element of the box's first point
//   wei  [O, C, kh, kw]                         at w's
//   dst  [N, O, OH, OW]                         at the result's
//
// each described to oneDNN with the views' own element strides, so a shard (a slice of n, o,
// oh, ow and of the c reduction) reads and writes the tensors in place. A 1×1 stride-1 layer
// runs on those plain descriptors (oneDNN's GEMM convolution reads NCHW directly); wider windows
// let oneDNN pick its blocked layouts (its direct "brgconv" kernels) and pay a reorder of src,
// the filters and dst — measured faster than the plain-layout kernels there, see
// docs/performance.md. Primitives (and reorders and the blocked scratch) are made once per
// distinct problem and thread and cached, like gemm_with_post_ops' matmuls; a problem oneDNN
// refuses, or one it would only run with its reference implementation, is remembered as refused.
//
// bfloat16 and float16 (docs/runtime.md, "bfloat16 and float16"): the same problem with x and w
// stored in 16 bits runs oneDNN's 16-bit convolution on the 16-bit views in place, multiplying
// into a float32 accumulator; the fused residual and ReLU apply to the accumulator and the
// result is rounded once (to nearest even) into a 16-bit dst, or stored as is into a float32 one:
//
//   conv2d over bf16 [8, 64, 56, 56] ⊛ bf16 [64, 64, 3, 3] → bf16: `brgconv:avx512_core_bf16`
//   on this CPU (AVX512_BF16), no float32 copy of x, w or the result.
//
// Where oneDNN has only its reference kernel for the 16-bit problem (f16 without AVX512_FP16,
// bf16 under ONEDNN_MAX_CPU_ISA=AVX2) the problem is refused like any other: onednn_conv returns
// false and the caller widens (the float32 path above, on float32 copies).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "tapestry/runtime/kernel.h"

namespace tapestry::runtime::fast {

/// One convolution problem: sizes, the element strides of the sub-tensors and the fused
/// epilogue (a fused conv2d ⇒ [add] ⇒ [relu] chain, fast fused.cpp): `residual` adds a tensor
/// of dst's shape (oneDNN's `sum` post-op: dst is filled with it first), `relu` applies an
/// eltwise post-op, both while the block is in registers.
struct ConvProblem {
  std::int64_t n = 0, c = 0, ih = 0, iw = 0, o = 0, kh = 0, kw = 0, oh = 0, ow = 0, stride = 1;
  /// grouped_conv2d: c and o are `groups` equal slices, filter slice g reading input slice g
  /// (w is then [o, c / groups, kh, kw], its o the groups' filters in order).
  std::int64_t groups = 1;
  std::array<std::int64_t, 4> x_strides{}, w_strides{}, r_strides{}, residual_strides{};
  bool residual = false, relu = false;
  /// Storage dtypes: x and w are `src` (float32, bfloat16 or float16), the result and the
  /// residual `dst` (src, or float32 for a 16-bit src).
  DType src = DType::kFloat32, dst = DType::kFloat32;

  bool operator==(const ConvProblem&) const = default;
};

/// The problem and base pointers (elements of problem.src / problem.dst) of a conv2d call over
/// `index` in the metakernel's layout, or nullopt (another layout: a split reduction's block dim,
/// hand-built IPFs; dtypes other than float32, or 16-bit x and w with a 16-bit or float32
/// result).
struct ConvOperands {
  ConvProblem problem;
  const void* x = nullptr;
  const void* w = nullptr;
  void* r = nullptr;
  const void* residual = nullptr;  // problem.residual: read at r's cells
};
std::optional<ConvOperands> onednn_conv_operands(const KernelCall& call, const Range& index);
std::optional<ConvOperands> onednn_conv_operands(const InputPort& x, const InputPort& w,
                                                 const OutputPort& r, const Range& index);

/// The problem of a grouped_conv2d call over `index` in its metakernel's layout — index
/// [n, g, og, oh, ow, cg], x read at [n, g·CG + cg, oh·stride : kh, ow·stride : kw], w at
/// [g·OG + og, cg, *, *], the result at [n, g·OG + og, oh, ow] — or nullopt. A box whose groups
/// are whole (all CG input and OG output channels of each) is `groups` = its g extent; a box of
/// one group is a plain convolution over that group's channels; any other (a split cg or og
/// across several groups: the channels of neighbouring groups are not adjacent) is nullopt.
std::optional<ConvOperands> onednn_grouped_conv_operands(const KernelCall& call,
                                                         const Range& index);

/// Adds the residual `port` (an input whose IPF selects the result's cells) to `operands`;
/// false (operands unchanged) when its dtype is not the result's.
bool add_residual(ConvOperands& operands, const InputPort& port, const Range& index);

/// True when oneDNN's primitive was measured faster than im2col + GEMM for such a problem
/// (bench/kernels_bench BM_Conv2d: from 16 input channels and 64 output pixels up; below, e.g.
/// the convnet's 3-channel first layer or 4×4 tiles, its per-call cost loses).
/// Decided on the call's index box [n, o, oh, ow, c] alone, before any operand is built.
bool onednn_conv_pays_off(const Range& index);
/// The same for grouped_conv2d's box [n, g, og, oh, ow, cg]: from 64 output pixels up, any
/// channel counts (im2col + GEMM runs one small GEMM per group: for depthwise layers a
/// 1 × kh·kw row times the columns).
bool onednn_grouped_conv_pays_off(const Range& index);

/// Runs the convolution; false (result untouched) when oneDNN refuses the problem. Counts one
/// oneDNN convolution (FastKernelCounts::onednn_convs) and notes the onednn path when it runs;
/// a 16-bit one counts in FastKernelCounts::half_native_calls and half_conv_runs() too.
bool onednn_conv(const ConvOperands& operands);

/// How many convolutions with 16-bit x and w onednn_conv has run in this process, every thread
/// (tests: which path a bf16/f16 conv2d took; the widening path runs float32 ones).
std::uint64_t half_conv_runs();

}  // namespace tapestry::runtime::fast
