// Collectives in a rank schedule: where the point-to-point messages of a placed plan form exactly
// an MPI collective, the MPI executor runs that collective instead (mpi_executor.h). Detection is
// pure data, from the same box intersections the messages come from; it needs no MPI.
//
// Two patterns, each required exactly (anything else stays point-to-point):
//
//   reduce / allreduce   a `reduce` application R (monoid sum, float32 or float64) whose partial
//                        blocks [i] × OUT, i = 0 … k-1 (k ≥ 2), are each written by one
//                        application, on k distinct ranks (the group), R on one of them (the
//                        root); every partial not on the root reaches R as one message carrying
//                        exactly its block, read by R alone. MPI_Reduce to the root replaces those
//                        messages and R's additions (R still runs on the root, as a no-op that
//                        holds the sum, so whatever it sends on still goes). When R also sends its
//                        whole result OUT to every other member — each needs it whole — MPI_
//                        Allreduce replaces those messages too.
//   reduce-scatter       k ≥ 2 `reduce` applications R_0 … R_{k-1} (monoid sum, float32 or
//                        float64) on k distinct ranks, all reading the same partial blocks
//                        [0:k] (any k-block range) of one slot, each a slice S_i of OUT (R_i
//                        writes S_i), the S_i pairwise disjoint; block j written by one
//                        application on the rank of one R_i (each rank writes one block); every
//                        slice j × S_i not on R_i's rank reaches it as one message carrying
//                        exactly that box, read by R_i alone. MPI_Reduce_scatter replaces those
//                        messages and the R_i's additions (each R_i runs as a no-op holding its
//                        slice of the sum). A following all-gather of the R_i's results — the
//                        two halves of a ring all-reduce — is found as one by the next pattern.
//   allgather            a tensor written on k ≥ 2 ranks by one application each (one box
//                        each), every one of whose messages goes from a writer to another writer
//                        and carries the writer's whole box, and every writer receives every
//                        other's box: MPI_Allgatherv of the k boxes.
//
// Worked example — the Megatron MLP (examples/plans/mlp-megatron.json) on 2 ranks: Y/matmul's
// blocks [0] and [1] of Y/matmul/partial [2, 4096, 1024] are written on ranks 0 and 1, the reduce
// runs on rank 0 and reads block [1] by one 16 MiB message: one reduce over ranks {0, 1}, root 0.
//
// Bitwise equality with the block executor: the block executor's `reduce` folds the partials in
// block order, ((p0 + p1) + p2) + …; MPI sums in an order it does not specify. Floating-point
// addition is commutative, so two partials give the same bits in any order (p0 + p1 == p1 + p0);
// three or more do not in general (the association differs). An allgather only moves bytes.
// `CollectiveUse::kExact` therefore takes reductions over two ranks and every allgather;
// `kAll` takes every reduction too (results then within the verify bar of a split reduction,
// not bitwise); `kNone` none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "block_program.h"
#include "tapestry/runtime/rank_schedule.h"

namespace tapestry::runtime::detail {

struct RankMessageInfo;

enum class CollectiveKind : std::uint8_t { kReduce, kAllreduce, kReduceScatter, kAllgather };

/// "reduce", "allreduce", "reduce_scatter", "allgather".
std::string_view collective_kind_name(CollectiveKind kind);

/// A box of a slot, as a task reads or writes it.
struct SlotBox {
  std::uint32_t slot = 0;
  Range box;
};

struct RankCollective {
  CollectiveKind kind = CollectiveKind::kReduce;
  std::vector<std::uint32_t> members;       // ranks, ascending
  std::uint32_t root = 0;                   // reduce kinds: the rank of the reduce application
  std::uint32_t source_slot = 0;            // what members contribute: the partials, or the tensor
  std::vector<Range> boxes;                 // per member: the box of source_slot it contributes
  std::vector<std::uint32_t> producers;     // per member: the task (whole program) writing it
  std::uint32_t result_slot = 0;            // reduce kinds: the reduce's output; allgather: source
  Range result_box;                         // reduce kinds: the reduce's output box
  std::uint32_t reduce_task = UINT32_MAX;   // reduce kinds: the reduce (whole program)
  std::vector<Range> result_boxes;          // reduce-scatter, per member: S_i, what it receives
  std::vector<std::uint32_t> reduce_tasks;  // reduce-scatter, per member: R_i (whole program)
  std::vector<std::uint32_t> replaced;      // the messages it replaces (RankProgram::messages)
  bool bitwise = true;     // same bits as the block executor (see the file comment)
  std::int64_t bytes = 0;  // one member's contribution (all its slices)
  std::string what;        // the reduce application's name, or the tensor's
};

/// The collectives of a checked schedule (rank_program.cpp): `rank_of` per task, `reads` and
/// `writes` per task, `messages` with their `consumers` (whole tasks). Each message is replaced
/// by at most one collective. Deterministic: every rank finds the same list.
std::vector<RankCollective> find_collectives(
    const ir::Graph& graph, const BlockProgram& p, const std::vector<std::uint32_t>& rank_of,
    const std::vector<std::vector<SlotBox>>& reads, const std::vector<std::vector<SlotBox>>& writes,
    const std::vector<RankMessageInfo>& messages,
    const std::vector<std::vector<std::uint32_t>>& consumers, CollectiveUse use);

}  // namespace tapestry::runtime::detail
