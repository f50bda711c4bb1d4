// BlockProgram: an application graph compiled for the block executor (block_executor.h).
//
// Everything here is independent of a run's buffers, computed once:
//
//   slots   one per tensor: dtype, range, bytes, whether it is a graph input or output, and how
//           many tasks touch it (a run's countdown to freeing it); under SlotPieces::kRows, one
//           per row piece of an intermediate tensor (see SlotPieces)
//   tasks   one per Application: kernel, a KernelCall template whose port views have null
//           origins plus, per port, the slot and the byte offset of its box inside the buffer;
//           FLOPs and bytes; the slots it writes (allocated on first write) and touches
//   DAG     dependents in CSR form, the initial pending count of each task, the ready roots
//
// A run patches origins: view origin = buffer base + byte offset, with no other work per port.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/element.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/kernel.h"
#include "tapestry/runtime/memory_budget.h"

namespace tapestry::runtime::detail {

struct BufferSlot {
  ir::TensorId tensor;
  bool piece = false;  // one of several row pieces of its tensor (SlotPieces::kRows)
  DType dtype = DType::kFloat32;
  Range range;
  std::int64_t bytes = 0;
  bool input = false;
  bool output = false;
  bool kept = false;  // held to the end of the run, not freed after its last use (rank_program.h)
  std::uint32_t uses = 0;  // tasks that read or write it (each counted once)
};

/// Where a port's view lives: origin = base of `slot` + `byte_offset`.
struct PortAddress {
  std::uint32_t slot = 0;
  std::int64_t byte_offset = 0;
};

struct BlockTask {
  ir::ApplicationId application;
  ir::OperationId operation;
  std::string name;  // the application's label, else its key (errors, metrics)
  KernelFn kernel = nullptr;
  KernelCall call;                     // views with null origins
  std::vector<PortAddress> inputs;     // parallel to call.inputs.entries()
  std::vector<PortAddress> outputs;    // parallel to call.outputs.entries()
  std::vector<std::uint32_t> writes;   // slots written, unique
  std::vector<std::uint32_t> touches;  // non-input slots read or written, unique
  std::int64_t flops = 0;
  std::int64_t bytes_read = 0;
  std::int64_t bytes_written = 0;
};

struct BlockProgram {
  std::vector<BufferSlot> slots;
  std::vector<BlockTask> tasks;
  std::vector<std::uint32_t> dependents_first;  // CSR: dependents of task t are
  std::vector<std::uint32_t> dependents;        //   dependents[first[t], first[t+1])
  std::vector<std::uint32_t> pending;           // number of tasks each task waits for
  std::vector<std::uint32_t> order;             // a topological order (ties: graph order)
  std::vector<std::uint32_t> roots;             // tasks with nothing to wait for, in order
  /// What kernels' prepare functions made, one per operation that has one; tasks point into it
  /// (KernelCall::prepared).
  std::vector<std::shared_ptr<const void>> prepared;
  std::int64_t flops = 0;
  MemoryEstimate memory;  // the sequential schedule's peak (memory_budget.h)
};

/// How tensors get buffers.
///
///   kWhole  one buffer per tensor, allocated at its first writer's start and freed after its
///           last reader — every box of it, whichever writer writes it
///   kRows   an intermediate tensor (neither a graph input nor an output) whose tasks' boxes fall
///           into disjoint row intervals (dim 0) gets a buffer per interval, allocated at the
///           interval's first write and freed after its last use: a pipeline's microbatches, the
///           shards of a batch split. Boxes whose rows overlap share a buffer, so a reader
///           spanning several writers' rows (a combine reading every partial, a whole-tensor
///           read) holds them all in one, as kWhole does. Only rows, every other dim whole: the
///           kernels see kWhole's strides and the same byte layout within a row, so results are
///           bitwise the same.
///
/// For X[512, 64] written by 4 microbatch applications of 128 rows each and read by 4 readers of
/// the same rows, kRows gives 4 slots X[0:128], X[128:256], …; add a reader of X[0:256] and the
/// first two share one slot X[0:256].
enum class SlotPieces { kWhole, kRows };

/// Compiles `graph` (see the file comment); Error naming the node on a bad graph.
BlockProgram compile_block_program(const ir::Graph& graph, const ExecutableKernels& kernels,
                                   SlotPieces pieces = SlotPieces::kWhole);

/// compile_block_program(graph, …, pieces).memory from the graph alone: no kernel is looked up or
/// prepared (memory_budget.h's estimate_block_memory).
MemoryEstimate estimate_program_memory(const ir::Graph& graph,
                                       SlotPieces pieces = SlotPieces::kWhole);

/// SlotPieces::kRows applied to a compiled program's slots and tasks (the ports readdressed, the
/// writes and touches derived again; the slots' uses are left to the caller to count). `extra`
/// (per slot, or empty): boxes that must each lie in one piece too, as the tasks' boxes do.
void split_program_rows(BlockProgram& p, const std::vector<std::vector<Range>>& extra);

/// The peak memory of running `p`'s tasks sequentially in `p.order` (p.memory for a compiled
/// program; for a program restricted to some tasks, its own).
MemoryEstimate estimate_sequential_memory(const BlockProgram& p, const ir::Graph& graph);

/// FLOPs of one kernel call over `call.index` (run_metrics.h's model).
std::int64_t estimate_flops(const KernelCall& call);

}  // namespace tapestry::runtime::detail
