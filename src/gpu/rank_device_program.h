// RankDeviceProgram: one MPI rank's part of a placed plan laid out for its GPU — the rank program
// (src/runtime/rank_program.h) as a DeviceProgram (device_program.h) whose communication (the
// schedule's messages, the collectives that replace some of them, the gathers of the outputs to
// rank 0) are steps of their own, each one NCCL call (nccl_comm.h). Plain C++ with no CUDA
// dependency: the NCCL executor (include/tapestry/gpu/nccl_executor.h) issues it, and
// tests/gpu/rank_device_program_test.cpp runs every rank of it on a fake device and a fake
// communicator without a GPU.
//
// Built from compile_rank_program(…, SlotPieces::kWhole) — one slot per tensor, the rows this
// rank touches; rank 0's outputs whole (it receives their gathers):
//
//   tasks      this rank's applications, in the whole program's order, then one communication
//              task per NCCL call this rank takes part in (DeviceProgram::communication_from).
//              A reduce a collective replaces (the rank program's no-op, on the collective's root,
//              or on every member of a reduce-scatter) is not a task here: the collective writes
//              its result, and its dependents wait for the collective instead.
//   DAG        the rank program's edges; producer → send; receive → its consumers; contribution's
//              producer → collective → the consumers of what the collective delivers.
//   the order  every rank lists the calls of the whole job in one order: by the position in the
//              whole program of the application that produces what is sent (for a collective the
//              last of its producers), then messages before collectives, then their index. A rank's
//              communication steps run on one stream of their own (the device program's last) in
//              that order, so every pair of ranks posts the calls they share in the same order, as
//              NCCL requires; and the order cannot deadlock: everything a call waits for on any
//              rank (its producers, the receives they read, the memory they reuse) comes earlier
//              in the whole program, hence earlier in the calls' order.
//   memory     every communication task reads the slots it sends from and writes the slots it
//              receives into, so the arena planner keeps a box being sent alive until the send is
//              done and orders a receive after the last user of the memory it reuses. A box that is
//              not one contiguous run of its slot (a column block of a row-major tensor) goes
//              through a staging slot of its own: packed into it before the call, unpacked after
//              (`pack`, `unpack`: the copies as 2-D runs, cudaMemcpy2DAsync's shape).
//
// Example — the Megatron MLP (examples/plans/mlp-megatron.json) on 2 ranks, rank 1: H/linear_1,
// H_1 (relu), Y/matmul_1 (its partial block [1] of Y/matmul/partial) on streams 0…3, then one
// reduce (the partials summed onto rank 0, ncclReduce on the communicator of ranks {0, 1}) on
// stream 4, sending block [1] in place; rank 0 has the same reduce receiving into Y/matmul's
// result, which its bias add then reads.
//
// Errors: what compile_rank_program rejects (a schedule that does not fit the graph).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device_program.h"
#include "runtime/rank_program.h"

namespace tapestry::gpu {

struct StagedBox {
  std::uint32_t slot = 0;     // the tensor's slot
  std::uint32_t staging = 0;  // the staging slot
  std::vector<BoxRun> runs;
};

enum class CommKind : std::uint8_t {
  kSend,
  kRecv,
  kReduce,
  kAllreduce,
  kReduceScatter,
  kAllgather
};

/// "send", "recv", "reduce", "allreduce", "reduce_scatter", "allgather".
std::string_view comm_kind_name(CommKind kind);

/// Where a call reads or writes: byte_offset bytes into `slot` (the box in place, or a staging
/// slot). slot == kNoSlot: nothing (a reduce's receive off its root).
struct CommBuffer {
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;
  std::uint32_t slot = kNoSlot;
  std::int64_t byte_offset = 0;
};

/// One NCCL call of this rank (a communication task).
struct CommStep {
  CommKind kind = CommKind::kSend;
  std::uint32_t op = 0;  // position in the job's order of calls (the same on every rank)
  std::uint32_t message = UINT32_MAX;     // send, recv: index in RankProgram::messages
  std::uint32_t collective = UINT32_MAX;  // collectives: index in RankProgram::collectives
  int peer = -1;                          // send, recv: the other rank
  ir::DType dtype = ir::DType::kFloat32;  // send, recv: moved as bytes (kUInt8)
  CommBuffer send, recv;
  std::int64_t count = 0;         // send, recv, reduce, allreduce: elements of `dtype`
  std::vector<StagedBox> pack;    // before the call
  std::vector<StagedBox> unpack;  // after it
  // Collectives: this rank's position among the members, the root's (reduce), and per member
  // the counts and displacements in elements: reduce-scatter, the slices of the send buffer
  // (slice i received by member i); all-gather, where member i's box lands in the receive buffer.
  std::uint32_t member = 0;
  std::uint32_t root = 0;
  std::vector<std::size_t> counts, displacements;
};

struct RankDeviceProgram {
  runtime::detail::RankProgram rank;  // SlotPieces::kWhole
  DeviceProgram device;  // block: this rank's tasks, then its communication tasks (staging slots
                         // appended to the slots)
  std::vector<CommStep> comm;  // per communication task, from device.communication_from on
  std::vector<std::uint32_t> whole_task;  // per kernel task: the task of the whole program
  std::uint32_t ops = 0;                  // calls in the whole job (every rank's)
};

/// Rank `rank`'s program (see the file comment). `whole` is compile_block_program(graph, host)
/// and must outlive the result.
RankDeviceProgram plan_rank_device_program(
    const ir::Graph& graph, const runtime::detail::BlockProgram& whole,
    const runtime::RankSchedule& schedule, std::uint32_t rank, const DeviceKernels& device,
    DeviceProgramOptions options = {},
    runtime::CollectiveUse collectives = runtime::CollectiveUse::kExact);

/// check_device_program, and the communication steps' own invariants: on the last stream in the
/// order of their calls, each reading and writing inside its slots. Returns "" or what is wrong.
std::string check_rank_device_program(const RankDeviceProgram& program);

}  // namespace tapestry::gpu
