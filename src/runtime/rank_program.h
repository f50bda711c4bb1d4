// RankProgram: one rank's part of a BlockProgram under a RankSchedule (rank_schedule.h), with
// the messages it sends and receives — everything the MPI executor needs that does not depend on
// MPI, so it is built, checked and tested without it.
//
//   local     a BlockProgram holding only this rank's tasks (graph order kept): a task waits for
//             its producers on this rank plus one count per incoming message it consumes; slot
//             uses count this rank's tasks plus one per message unpacked into the slot; on ranks
//             other than 0 no slot is an output: outputs are gathered to rank 0, and their rows
//             here are kept to the end of the run (BufferSlot::kept), as a device keeps the
//             results it computes (the cost model holds an output to the end of the step)
//   messages  the schedule's messages, then one gather per box of a graph output that a rank
//             other than 0 writes (to rank 0), in program order — the same list, in the same
//             order, on every rank: message i travels with MPI tag i + 1
//   sends     per local task, the messages it sends once its kernel returns (packed then, before
//             its buffers are released)
//   receives  the messages this rank receives, each with its local consumers
//   gathered  under SlotPieces::kRows, on rank 0: the gathers of the outputs' boxes other ranks
//             write, taken after its own part of the step is done into the whole outputs it
//             returns (not into its slots: rank 0's output slots hold the rows its own tasks
//             touch, as another rank's do); under kWhole they are receives into the whole slots
//   collectives  the patterns of messages run as one MPI collective (rank_collectives.h), the
//             same list on every rank; `parts` the ones this rank takes part in: the local task
//             whose kernel writes its contribution, and the replaced messages it would have
//             received (their consumers wait for the collective instead). A reduce application
//             a reduce replaces runs on its root as a no-op holding the sum (no inputs).
//   slots     per rank, not per tensor: a slot's range spans the rows (first dim) of the boxes
//             this rank's tasks read and write and of the messages it receives, and every other
//             dim whole (under kWhole, the whole tensor for rank 0's outputs, which it gathers); a
//             slot the rank never touches is empty. The tasks' ports address the smaller buffers,
//             so a rank allocates only its rows. Only rows: the kernels then see the single
//             process's strides, and the GEMM libraries pick the same code for them — a bounding
//             box in every dim changed the leading dimension of the Megatron MLP's H, and oneDNN's
//             results with it (not bitwise equal to the block executor).
//   combines  under SlotPieces::kRows, a split reduction over more than two ranks that runs point
//             to point (not an MPI collective under CollectiveUse::kExact: rank_collectives.h):
//             a local `reduce` whose partials box B takes a slice of every block (not whole
//             rows), each block's slice either received or in a block this rank writes. It runs
//             as a no-op holding the result, which the MPI executor folds step by step in block
//             order at the reduce's turn — result = slice 0, then result = result ∘ slice j
//             for ascending j, as the reduce kernel folds (bitwise the same) — each received
//             slice taken when its step comes, into a staging buffer freed after its step;
//             the rank's own block is read in place (one use of its slot, released after its
//             step). So the rank holds the
//             result and one slice at a time beside its own block, as the cost model holds a
//             reduce-scatter's receiver (one step's chunk, docs/cost.md); without it the
//             rank's buffer of the partials spanned every block's rows whole.
//
//             ZeRO-3's W2 gradient on 4 ranks: dW2/partial [4, 128, 128], block j written on
//             rank j; rank 1's reduce reads [0:4, 32:64, 0:128]. Rank 1 holds its block
//             [1:2, 0:128, 0:128] (64 KiB, freed once its slices are sent and its step is
//             done), the result [32:64, 0:128] (16 KiB) and a 16 KiB slice while it is added —
//             where the rows [0:4] whole were 256 KiB.
//
// compile_rank_program checks the schedule against the graph first (every rank runs the same
// checks on the same data, so all agree): every application has a rank below `ranks`; every
// message names a producer on `from` and consumers on `to` ≠ from, and its box lies inside a box
// the producer writes of that tensor and meets a box each consumer reads; and every dependency
// between applications on different ranks is carried: the intersection of what the producer
// writes and the consumer reads lies inside one message from the producer to the consumer's
// rank that lists the consumer. Each failure is an Error naming the applications.
#pragma once

#include <cstdint>
#include <vector>

#include "block_program.h"
#include "rank_collectives.h"
#include "tapestry/runtime/rank_schedule.h"

namespace tapestry::runtime::detail {

struct RankMessageInfo {
  std::uint32_t slot = 0;  // the tensor's slot (same in the whole and the local program)
  Range box;
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  std::uint32_t producer = 0;  // task of the whole program
  bool gather = false;         // an output box gathered to rank 0
  std::int64_t bytes = 0;
  // The position in the whole program's order of its first consumer: the receiver takes it at
  // that task's turn, and the sender starts no task placed after it until then (UINT32_MAX: a
  // gather, taken after the step).
  std::uint32_t taken_at = UINT32_MAX;
};

struct RankReceive {
  std::uint32_t message = 0;             // position in RankProgram::messages
  std::vector<std::uint32_t> consumers;  // local tasks
};

/// One step of a combine (rank_program.h): rows of the reduce's partials box, folded into the
/// result in order, from a received message or from a block this rank writes.
struct RankCombineStep {
  Range box;  // rows of the partials box (every other dim as the box has it)
  std::uint32_t message = UINT32_MAX;  // the message carrying it, or UINT32_MAX: a local block
  std::uint32_t slot = 0;              // local: the slot of the block (read in place)
  std::uint32_t writer = 0;            // local: the task writing it
};

/// A reduce whose partials are folded into its result step by step (rank_program.h).
struct RankCombine {
  std::uint32_t reduce = 0;  // the local task: a no-op holding the result
  std::uint32_t result_slot = 0;
  Range result_box;
  ir::Monoid monoid = ir::Monoid::kSum;
  std::vector<RankCombineStep> steps;  // in block order, covering the partials box once
};

/// A collective this rank takes part in.
struct RankCollectivePart {
  std::uint32_t collective = 0;       // position in RankProgram::collectives
  std::uint32_t member = 0;           // this rank's position in its members
  std::uint32_t producer = 0;         // the local task whose kernel writes the contribution
  std::vector<RankReceive> arrivals;  // replaced messages to this rank, with local consumers
};

struct RankProgram {
  std::uint32_t rank = 0;
  std::uint32_t ranks = 1;
  BlockProgram local;
  std::vector<std::uint32_t> whole_task;          // local task → task of the whole program
  std::vector<char> needed_inputs;                // by slot: an input a local task reads
  std::vector<RankMessageInfo> messages;          // every rank's, in the same order everywhere
  std::vector<std::vector<std::uint32_t>> sends;  // per local task: messages it sends
  std::vector<RankReceive> receives;              // messages it receives (not replaced or combined)
  std::vector<std::uint32_t> gathered;            // rank 0, kRows: output gathers, after its part
  std::vector<RankCollective> collectives;        // every rank's, the same everywhere
  std::vector<RankCollectivePart> parts;          // the collectives this rank takes part in
  std::vector<std::vector<std::uint32_t>> contributes;  // per local task: parts it writes
  std::vector<RankCombine> combines;                    // reduces folded step by step
  std::int64_t bytes_sent = 0;                          // per run, by this rank
  std::int64_t bytes_received = 0;
};

/// Checks `schedule` against `graph` and `whole` (compile_block_program of `graph`) and builds
/// rank `rank`'s program; see the file comment. `whole` must outlive the result (tasks point
/// into its prepared data). `pieces`: kRows (the MPI executor) splits the rank's intermediate
/// slots into row pieces after its rows are cut; kWhole keeps one local slot per slot of `whole`
/// (the code generators index `whole`'s slots by the local ones and lay out their own buffers).
RankProgram compile_rank_program(const ir::Graph& graph, const BlockProgram& whole,
                                 const RankSchedule& schedule, std::uint32_t rank,
                                 CollectiveUse collectives = CollectiveUse::kExact,
                                 SlotPieces pieces = SlotPieces::kRows);

}  // namespace tapestry::runtime::detail
