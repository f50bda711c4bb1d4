// The signature transforms of the rewrites that change an operation's IPFs, as plain values.
//
// split-reduction (even form) and fuse-elementwise each turn operations into a new one whose
// index, index names, reductions and IPFs follow from the old ones by a fixed rule. The rewrites
// apply these functions and add the result to the graph; `operation-kernel-agreement`
// (kernel_agreement.h) replays them on what the kernels derive, so a rewritten operation is
// checked by the very code that made it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "op_spec.h"

namespace tapestry::rewrite::detail {

/// split-reduction's even split of reduction dim `k` of `old` into `p` blocks of
/// q = extent(k) / p (split_reduction.h): the index gains a leading dim named `block` (or a
/// fresh variant) of extent p, dim k keeps q, input IPFs are composed with
/// (block, i…) ↦ i with i_k += q·block, and every output IPF gains the block row on top. The
/// output ports keep `old`'s tensors: the caller points them at the partial tensors, of range
/// [0:p] × the output's range. Precondition: p divides extent(k) — exactly, unlike the
/// near-even cut of zspace::Grid and Range::split_even (the uneven form cuts by those).
OpSpec split_exact(const OpSpec& old, std::size_t k, std::int64_t p);

/// The elementwise kernel split-reduction's uneven form combines two partials of `monoid` with
/// (add, maximum, mul); nullopt for min, which has none.
std::optional<std::string_view> combine_kernel(ir::Monoid monoid);

/// fuse-elementwise's fused operation of producer `p` (a plain or already fused operation with
/// one output) and consumer `c`, which reads the producer's output `t` once, elementwise;
/// `t_dtype` is t's dtype (recorded on the intermediate). Kernel "fused", p's index, names
/// and reductions, the stages of fused.h in params, ports keeping their tensors. Precondition:
/// fuse-elementwise's match holds. A fused `p`'s params are edited and extended (taken by value:
/// a caller that moves them in copies nothing), not read back into stages and written again.
OpSpec fuse(OpSpec p, const OpSpec& c, ir::TensorId t, const ir::LoomDType& t_dtype);

}  // namespace tapestry::rewrite::detail
