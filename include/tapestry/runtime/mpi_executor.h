// MpiExecutor: an application graph run across the processes (ranks) of an MPI job — one rank per
// device of the placement, boxes moving between ranks as point-to-point messages.
//
//   mpirun -np 2 tapestry run mlp.tap --plan mlp-megatron.json --executor mpi
//
//   MpiSession mpi;                                          // MPI_Init … MPI_Finalize
//   MpiExecutor exec(mpi, app_graph, schedule, {.threads = 1});   // on every rank
//   BufferMap in = generate_inputs(…);                       // each rank: the inputs it reads
//   MpiExecutor::Result r = exec.run(std::move(in));         // collective
//   if (r.failure) …                                         // every rank knows; rank 0 has why
//   r.outputs                                                // rank 0: every graph output
//
// How a run goes, on every rank (the schedule — rank_schedule.h — and the rank's program are
// compiled once, at construction, with the same checks everywhere):
//   1. every receive is posted (MPI_Irecv into a staging buffer per message) and the ranks meet
//      at a barrier, so their clocks start together;
//   2. the rank's applications run on a oneTBB arena of `threads` threads, each as soon as its
//      local producers finished and the messages it reads arrived, exactly as in the block
//      executor (the same compiled tasks, kernels, buffers and metrics: block_run.h);
//   3. when an application finishes, each box it must send (to a consumer's rank, or a graph
//      output's box to rank 0) is packed, and the communication thread — the caller's, the only
//      one that calls MPI (MPI_THREAD_FUNNELED) — posts it with MPI_Isend; it polls sends and
//      receives (MPI_Testsome), unpacks each arrived box into its tensor and releases the
//      applications that waited for it. Sends, receives and compute overlap wherever the DAG
//      allows; the schedule is deadlock-free because every receive is posted up front and the
//      graph is acyclic;
//   4. where the messages form exactly a collective (src/runtime/rank_collectives.h: the partials
//      of a split reduction summed on one rank or on every member, a tensor whose boxes every
//      writer needs), each member posts the non-blocking collective (MPI_Ireduce, MPI_Iallreduce,
//      MPI_Iallgatherv, on a communicator of its members made at the first run) once its
//      contribution is written, and the communication thread unpacks the result like a message;
//   5. the ranks agree on the outcome (MPI_Allgather of a flag): rank 0 then holds every output.
//
// Memory: a rank allocates, per tensor, only the bounding box of what it reads, writes and
// receives (rank 0 every graph output whole), and its inputs are those boxes.
//
// Failure: an error on a rank (a kernel Error, bad_alloc, any exception) stops it at once: it
// tells every other rank (a zero-byte message on a reserved tag), and each rank, as soon as its
// polling sees that, stops starting applications, waits for the ones running, cancels its
// receives and joins the agreement — so the job ends within one kernel's duration plus a poll,
// and `Result::failure` names the first failing rank on every rank, with its message on rank 0.
// The environment variable TAPESTRY_TEST_MPI_FAIL=R (tests only) makes rank R's first
// application throw.
//
// Built without MPI (CMake did not find it), `mpi_built()` is false and constructing an
// MpiSession is an Error saying so.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/rank_metrics.h"
#include "tapestry/runtime/rank_schedule.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime {

/// True when this build has the MPI executor.
[[nodiscard]] bool mpi_built();

/// A failure somewhere in the job, as every rank learns it.
struct RankFailure {
  std::uint32_t rank = 0;  // the lowest rank that failed
  std::string message;     // its error (on rank 0; elsewhere empty)
};

/// The MPI environment of this process: MPI_Init_thread(MPI_THREAD_FUNNELED) at construction,
/// MPI_Finalize at destruction; one per process, used from the thread that made it.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  [[nodiscard]] std::uint32_t rank() const { return rank_; }
  [[nodiscard]] std::uint32_t size() const { return size_; }

  /// Collective: every rank says whether it failed (`error`); every rank learns the lowest
  /// failing rank, and rank 0 its message. nullopt when none failed.
  [[nodiscard]] std::optional<RankFailure> agree(const std::optional<std::string>& error) const;
  /// Collective: `text` of every rank, in rank order, on rank 0 (empty elsewhere).
  [[nodiscard]] std::vector<std::string> gather(const std::string& text) const;
  /// Collective: rank 0's `text` on every rank.
  [[nodiscard]] std::string broadcast(const std::string& text) const;
  /// Collective: returns on every rank once every rank has called it (MPI_Barrier).
  void barrier() const;

  /// Posts: messages every rank sends every rank, on a communicator of their own, without waiting
  /// (the islands of `optimize --mpi`, search/islands.h). post() sends `text` to every other
  /// rank and returns at once; collect() waits for the oldest text not yet collected from every
  /// rank (its own included) and returns them in rank order — the k-th collect returns each
  /// rank's k-th post. Waiting polls every millisecond, so a rank that waits leaves the core to
  /// the ranks it waits for. Sends still in flight complete at destruction.
  void post(const std::string& text);
  [[nodiscard]] std::vector<std::string> collect();

 private:
  struct Posts;
  std::uint32_t rank_ = 0;
  std::uint32_t size_ = 1;
  std::unique_ptr<Posts> posts_;
};

struct MpiExecutorOptions {
  /// Pool threads per rank (≥ 1).
  int threads = 1;
  /// Kernels to run; nullptr means fast_kernels().
  const ExecutableKernels* kernels = nullptr;
  /// When > 0, construction fails if this rank's estimated peak memory exceeds it.
  std::int64_t memory_limit_bytes = 0;
  /// Fill buffers with NaN before their writers run (block_executor.h).
  bool poison = false;
  /// Which message patterns run as MPI collectives (rank_schedule.h).
  CollectiveUse collectives = CollectiveUse::kExact;
};

/// A graph input as one rank needs it: the bounding box of what its applications read.
struct NeededInput {
  ir::TensorId tensor;
  zspace::Range box;
};

namespace detail {
struct MpiProgram;
}

class MpiExecutor {
 public:
  /// Compiles this rank's part of `graph` under `schedule` (which must have one name per rank of
  /// the session). Error for a schedule that does not fit the graph (rank_program.h's checks),
  /// and everything BlockExecutor's construction rejects. `graph` must outlive the executor.
  MpiExecutor(const MpiSession& session, const ir::Graph& graph, const RankSchedule& schedule,
              MpiExecutorOptions options = {});
  ~MpiExecutor();
  MpiExecutor(const MpiExecutor&) = delete;
  MpiExecutor& operator=(const MpiExecutor&) = delete;

  /// The graph inputs this rank's applications read, each as the box of it they read: `run`
  /// needs exactly these, each a buffer of its box's shape.
  [[nodiscard]] std::vector<NeededInput> inputs_needed() const;
  /// The collectives the run uses instead of messages (the same on every rank).
  [[nodiscard]] std::vector<CollectiveRecord> collectives() const;
  /// This rank's applications, messages sent and received per run.
  [[nodiscard]] std::size_t application_count() const;
  [[nodiscard]] std::size_t messages_sent() const;
  [[nodiscard]] std::size_t messages_received() const;

  struct Result {
    BufferMap outputs;  // rank 0: every graph output; elsewhere empty
    RankMetrics metrics;
    std::optional<RankFailure> failure;
  };
  /// Collective: runs this rank's part; see the file comment.
  [[nodiscard]] Result run(BufferMap inputs) const;

 private:
  const MpiSession& session_;
  const ir::Graph& graph_;
  std::unique_ptr<detail::MpiProgram> program_;
};

}  // namespace tapestry::runtime
