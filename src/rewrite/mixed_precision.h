// Float32 intermediates in 16-bit graphs: the type rule that lets a rewrite keep them.
//
// The runtime computes every kernel call with a bf16 or f16 port in float32 (runtime/
// executable_kernels.h): 16-bit inputs are widened exactly, outputs computed in float32 and
// rounded once when stored in 16 bits. So on one call float32 and one 16-bit dtype are
// interchangeable: a float32 input is the unrounded value, a float32 output keeps the float32
// result, a 16-bit output of float32 inputs is that result rounded once. Two rewrites use it to
// keep the tensors they introduce in float32 when the graph is in 16 bits (one rounding fewer
// each, so the split graph stays inside the unsplit graph's error bars):
//
//   split-reduction   the partial sums (and an uneven split's combine tree) are f32; the reduce
//                     (or last add) reads them and writes the original bf16 output
//   decompose-linear  the product linear_nobias(x, w) is f32; bias_add(product, bias) writes
//                     the original bf16 output
//
// A kernel's signature is evaluated with the float32 arguments read as the call's 16-bit dtype
// (`one_precision`), and an output tensor may be stored in float32 where the kernel derives the
// 16-bit dtype or the reverse (`stores_as`); operation-kernel-agreement checks both ways. bf16
// and f16 never mix, nor do float64 or integers with anything.
#pragma once

#include <optional>
#include <span>

#include "tapestry/ir/dtype.h"
#include "tapestry/metakernel/signature.h"

namespace tapestry::rewrite::detail {

/// The 16-bit float dtype among `args`, when there is one (the first).
std::optional<ir::DType> half_float_of(std::span<const metakernel::Argument> args);

/// `args` with every float32 argument read as the call's 16-bit dtype (unchanged without one):
///   {f32[4, 8], bf16[8]} → {bf16[4, 8], bf16[8]}  (so bias_add binds T = bf16)
void read_as_one_precision(std::span<metakernel::Argument> args);

/// Whether a tensor of dtype `stored` may hold an output the kernel derives as `derived`: the
/// same dtype, or float32 and a 16-bit float either way round.
bool stores_as(ir::DType stored, ir::DType derived);

/// The dtype a rewrite gives an intermediate the kernel derives as `derived`: float32 for bf16
/// and f16, else `derived`.
ir::DType accumulation_dtype(ir::DType derived);

}  // namespace tapestry::rewrite::detail
