// `shard-grid`: cut an operation's index box into a grid of Applications.
//
// Every operation has an index box (its IPFIndex) and one IPF per input and output. Cutting the
// box into cells and giving each cell the selections IPF(cell) yields shards that together
// compute exactly the operation: the cells partition the index, and each output IPF is
// injective over the non-reduction dims, so no two shards write the same output cell (a split
// reduction dim is refused here — that is `split-reduction`'s job, see split_reduction.h).
//
// The running example's Linear, index zr[0:100, 0:32] ([batch, out]), with parts (2, 1):
//
//   cell zr[0:50, 0:32]    reads X zr[-40:10, 20:32], W zr[0:32, 0:12], b zr[0:32]; writes Y
//   zr[0:50, 0:32] cell zr[50:100, 0:32]  reads X zr[10:60, 20:32],  W zr[0:32, 0:12], b zr[0:32];
//   writes Y zr[50:100, 0:32]
//
// Parts need not divide the extents: 10 cut into 4 gives 3, 3, 2, 2 (zspace::Grid, grid.h: the
// one cutting rule, which cost::Evaluator prices by as well).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kShardGrid = "shard-grid";

/// Why `shard-grid` cannot cut `op` into `parts` (one count per index dim), or nullopt when it
/// can: the operation needs an IPFIndex and an IPFSignature parallel to its selections, every
/// count must be in [1, max(extent, 1)], reduction dims must not be cut, and an output dim that
/// linearises several index dims (reshape merging dims) must be cut so that every shard writes a
/// box: outer dims into single points, then one dim any way, inner dims whole.
std::optional<std::string> match_shard_grid(const ir::Graph& graph, ir::OperationId op,
                                            std::span<const std::int64_t> parts);

/// The part of match_shard_grid that depends on `parts`, for an operation that has the tags
/// (`detail::why_not_rewritable` is nullopt) — what a caller that cuts one operation under many
/// plans checks each time.
std::optional<std::string> match_shard_counts(const ir::Graph& graph, ir::OperationId op,
                                              std::span<const std::int64_t> parts);
/// Adds one Application per cell of zspace::Grid(index, parts), cell i as the i-th (row-major
/// order), with consecutive ids from graph.size(). Precondition: match_shard_grid holds.
std::vector<ir::ApplicationId> apply_shard_grid(ir::Graph& graph, ir::OperationId op,
                                                std::span<const std::int64_t> parts);

/// The numbering of Applications lower gives (lower.h, step 5): it cuts every operation of
/// `graph`, in graph.operations() order, into shards[i] Applications (i: the operation's position
/// in graph.operations()), so operation i's cell s gets node id first[i] + s, where `first` is
/// what this returns — graph.size(), then each operation's after the previous one's shards:
///
///   graph of 5 nodes, operations A, B (that order), shards {2, 3}  →  first == {5, 7}
///   (A's Applications are nodes 5, 6; B's 7, 8, 9)
///
/// lower checks every Application it adds against it; cost::Evaluator numbers by it the
/// Applications it prices without making them.
std::vector<std::int64_t> first_application_ids(const ir::Graph& graph,
                                                std::span<const std::int64_t> shards);

}  // namespace tapestry::rewrite
