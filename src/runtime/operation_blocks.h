// Private to the naive run and the oracle (naive_executor.h, oracle.h): one unsharded operation's
// kernel call run as blocks of its index box on the current oneTBB arena.
//
// The naive run and the oracle call each operation's kernel once over its whole index box, and
// the fast kernels run their BLAS and oneDNN calls on one thread (fast_registry.cpp), so a
// 4096×4096×4096 linear took one core while the plan's own run used all of its threads. Here
// the box is cut along one index dim that every output depends on one-to-one (each index value
// its own output cells, no windows that overlap), into pieces decided by the sizes alone, and the
// pieces run as kernel calls of their own, in parallel. Each piece is what a shard of a plan
// is — the same kernel on the cells IPF(piece) of the same buffers, no partial sums — so the
// blocks write disjoint cells, and the numbers are the same bitwise on 1 thread or 16 (the oracle's
// bars do not depend on the machine: tests/verify/streaming_test.cpp).
//
//   linear  index [i 4096, o 4096, k 4096], k reduced: 2^36 points → 8 blocks, i cut into
//           [0:512], [512:1024] …; each a GEMM of 512 rows against all of W.
//   conv2d  index [n 1, o 64, oh 56, ow 56, c 64], window 3×3: 8 blocks of oh (7 rows each,
//           reading their rows of x and all of w; cutting o would read all of x 8 times).
//   relu    index [i 1024, j 512]: 2^19 points → 1 block (the whole call, as before).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tapestry/runtime/kernel.h"

namespace tapestry::runtime::detail {

/// Points of work (index points × the largest input window) a block gets at least.
inline constexpr double kBlockWork = 1 << 20;
/// The most blocks one call is cut into.
inline constexpr std::int64_t kMaxBlocks = 8;

/// Whether every one of `outputs` (an operation's output IPFs) takes index dim `dim` one-to-one:
/// one tensor dim of its own (column `dim` of the IPF's matrix nonzero in that row alone, the row
/// depending on `dim` alone) and windows along it no longer than the step (the cells of two
/// index values never overlap). False without outputs.
bool one_to_one(std::span<const zspace::IndexProjection* const> outputs, std::size_t dim);

/// The index boxes `call` (its index, its ports' IPFs) is cut into: min(kMaxBlocks, work /
/// kBlockWork) pieces, at most one per index value, of one dim that is not reduced and that each
/// output maps one-to-one onto a tensor dim of its own with windows that do not overlap —
/// among those, the one that gives the most pieces, then the one whose blocks read the fewest
/// input cells together (a convolution's output rows rather than its output channels), then
/// the first. One box (call.index) when nothing may be cut or the work is small.
std::vector<Range> operation_blocks(const KernelCall& call);

/// Runs `kernel` on `call` as operation_blocks(call): each block a call of its own with every
/// port narrowed to IPF(block), the blocks in parallel on the current oneTBB arena. The first
/// error a block throws is rethrown.
void call_in_blocks(const KernelFn& kernel, const KernelCall& call);

}  // namespace tapestry::runtime::detail
