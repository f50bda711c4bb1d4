// NcclExecutor: one MPI rank's part of a placed plan run on its GPU, the boxes between ranks moved
// by NCCL — `tapestry run --executor mpi --device cuda` under mpirun (docs/gpu.md, "Multi-GPU").
//
// Each rank compiles the applications placed on its device (the rank program, as the MPI
// executor does) into a device program on its GPU (src/gpu/rank_device_program.h): its kernels
// on CUDA streams with events, as the CUDA executor runs a graph (cuda.h), and its
// communication as steps on a stream of their own, one NCCL call each, in one order on every
// rank — point-to-point boxes as ncclSend/ncclRecv (NcclComm::exchange), the collectives the
// schedule forms (rank_collectives.h) as ncclReduce, ncclAllReduce, ncclReduceScatter (or one
// ncclReduce per slice) and grouped ncclBroadcasts for an all-gather, each on a communicator of
// its members (the whole communicator, or NcclComm::split once per set of members). A run copies
// the rows of the inputs this rank reads to its GPU, runs its steps (replaying a captured CUDA
// graph from the third run on, NCCL calls included), and on rank 0 copies back the whole outputs,
// which the other ranks' gathers have filled.
//
//   MpiSession mpi;                                   // MPI_Init
//   auto comm = nccl_comm_from_mpi();                 // GPU local rank % GPUs of the node
//   NcclExecutor gpu(comm, lowered, schedule, {.streams = 4});
//   NcclExecutor::Result r = gpu.run(inputs);        // inputs: the boxes of inputs_needed()
//   r.outputs                                         // rank 0: every graph output, whole
//
// Construction is collective: every rank of the communicator constructs its executor for the
// same schedule (ncclCommSplit once per set of members, in the same order). Errors: what the CUDA
// executor throws, a schedule for another number of ranks than the communicator has, and what
// compile_rank_program rejects — each a tapestry::Error. A rank that fails during a run leaves
// the others blocked in NCCL until mpirun ends the job (no abort protocol as the MPI executor
// has). Without the CUDA backend every function throws an Error saying so.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tapestry/gpu/cuda.h"
#include "tapestry/runtime/mpi_executor.h"
#include "tapestry/runtime/rank_metrics.h"
#include "tapestry/runtime/rank_schedule.h"

namespace tapestry::gpu {

class NcclComm;

struct NcclExecutorOptions {
  /// CUDA streams for the kernels (≥ 1); the NCCL calls get one more of their own.
  int streams = 4;
  /// Record the run into a CUDA graph (NCCL calls included) and replay it on later runs.
  bool graph = true;
  bool allow_tf32 = false;
  /// CPU kernels (host steps, and the kernels the program is compiled with); nullptr: fast.
  const runtime::ExecutableKernels* host_kernels = nullptr;
  std::int64_t memory_limit_bytes = 0;
  /// Which message patterns run as one collective (rank_schedule.h): kExact keeps the block
  /// executor's bits (a sum over two ranks commutes; an all-gather moves bytes).
  runtime::CollectiveUse collectives = runtime::CollectiveUse::kExact;
  bool poison = false;  // fill the arena with NaN bytes before each run
};

class NcclExecutor {
 public:
  /// Rank comm->rank() of `schedule`, on GPU comm->device() (see the file comment).
  NcclExecutor(std::shared_ptr<const NcclComm> comm, const ir::Graph& graph,
               const runtime::RankSchedule& schedule, NcclExecutorOptions options = {});
  ~NcclExecutor();
  NcclExecutor(const NcclExecutor&) = delete;
  NcclExecutor& operator=(const NcclExecutor&) = delete;

  /// The boxes of graph inputs this rank reads (its rows), as MpiExecutor::inputs_needed.
  [[nodiscard]] std::vector<runtime::NeededInput> inputs_needed() const;

  struct Result {
    runtime::BufferMap outputs;  // rank 0: every graph output, whole; other ranks: none
    CudaRunStats stats;          // compute_s: the rank's steps, communication included
    runtime::RankMetrics metrics;
  };
  /// `inputs`: a buffer per box of inputs_needed(), keyed by its tensor. Collective.
  [[nodiscard]] Result run(runtime::BufferMap inputs) const;

  [[nodiscard]] std::size_t application_count() const;
  /// The CUDA device this rank runs on.
  [[nodiscard]] int device() const;
  /// NCCL calls this rank makes per run.
  [[nodiscard]] std::size_t calls() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// This process's communicator over MPI_COMM_WORLD (NcclComm::from_mpi: MPI must be initialised).
[[nodiscard]] std::shared_ptr<const NcclComm> nccl_comm_from_mpi();

}  // namespace tapestry::gpu
