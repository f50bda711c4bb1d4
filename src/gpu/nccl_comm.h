// NcclComm: one NCCL communicator per process (an MPI rank) bound to one GPU — what a placed plan
// run over several GPUs moves its boxes with (docs/gpu.md, "Multi-GPU").
//
// Bootstrap: NCCL needs every rank to hold the same ncclUniqueId. `from_mpi()` makes rank 0
// create it (ncclGetUniqueId) and MPI_Bcast it over MPI_COMM_WORLD; every rank then binds the
// GPU `local rank % devices on its node` (the node's ranks: MPI_Comm_split_type SHARED) and
// calls ncclCommInitRank. NCCL refuses two ranks on one GPU, so a node running more ranks than
// it has GPUs is an Error naming both counts, before NCCL is called. Without MPI (or in one
// process, as the tests do), `unique_id()` and the constructor do the same by hand.
//
// The operations: the collectives the MPI executor recognises in a rank schedule
// (src/runtime/rank_collectives.h) and their NCCL calls —
//
//   MPI executor pattern          MPI call              NcclComm                    NCCL
//   reduce (sum) to the root      MPI_Reduce            reduce                      ncclReduce
//   allreduce (sum)               MPI_Allreduce         all_reduce                  ncclAllReduce
//   reduce-scatter, equal slices  MPI_Reduce_scatter    reduce_scatter ncclReduceScatter
//   reduce-scatter, any slices                          reduce_scatter_v            ncclReduce ×k,
//   grouped allgather, equal boxes        MPI_Allgatherv        all_gather ncclAllGather allgather,
//   any boxes                                all_gather_v                ncclBroadcast ×k, grouped
//   (a tensor every rank needs)   MPI_Bcast             broadcast                   ncclBroadcast
//   point-to-point messages       MPI_Isend / Irecv     exchange                    ncclSend /
//   ncclRecv, grouped
//
// — plus `split` (a communicator of a collective's members: ncclCommSplit, as the MPI executor
// makes one per member set). Every operation takes device pointers and a CUDA stream, enqueues
// there and returns (the stream orders it with the kernels around it; a CUDA graph may capture
// it); counts and displacements are in elements of `dtype`. `exchange` groups any number of
// sends and receives (ncclGroupStart/End), so a rank's messages of one step cannot deadlock on
// their order. A send and a receive between two ranks must agree on count and dtype, as in MPI,
// and NCCL pairs the n-th send from a rank to a peer with the n-th receive the peer posts from
// that rank: messages between one pair of ranks are matched in the order each side lists them
// (the H100 run caught a test that listed them crosswise).
//
//   NcclComm comm = NcclComm::from_mpi();        // after MPI_Init (an MpiSession)
//   comm.all_reduce(partial, sum, n, DType::kFloat32, NcclReduction::kSum, stream);
//   comm.exchange({{NcclTransfer::kSend, 1, box, n, DType::kBFloat16},
//                  {NcclTransfer::kRecv, 1, halo, m, DType::kBFloat16}}, stream);
//
// Errors: tapestry::Error when no device is usable, the rank, size or device is out of range,
// MPI is not initialised (from_mpi), or an NCCL call fails (naming the call, NCCL's reason and
// its last error text, and the rank). Sizes of the *_v spans other than size() are bugs
// (TAPESTRY_ASSERT). Only built with the CUDA backend (TAPESTRY_HAVE_CUDA); `from_mpi` needs MPI
// too (an Error saying so otherwise).
//
// Tested (tests/gpu/nccl_test.cpp) on ONE rank and one GPU: every operation on real device
// buffers. Anything with more than one rank is untested (one GPU here; NCCL refuses two ranks on
// one GPU): docs/gpu.md lists what.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "tapestry/ir/dtype.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*: this header needs no CUDA header

namespace tapestry::gpu {

using CudaStream = CUstream_st*;

enum class NcclReduction : std::uint8_t { kSum, kProd, kMax, kMin };

/// The id every rank of one communicator must hold (ncclUniqueId's 128 bytes).
struct NcclUniqueId {
  std::array<char, 128> bytes{};
};

/// One send or receive of NcclComm::exchange.
struct NcclTransfer {
  enum Kind : std::uint8_t { kSend, kRecv };
  Kind kind = kSend;
  int peer = 0;           // the other rank
  void* data = nullptr;   // device memory: read (send) or written (receive)
  std::size_t count = 0;  // elements
  ir::DType dtype = ir::DType::kFloat32;
};

class NcclComm {
 public:
  /// A new id (ncclGetUniqueId): one rank makes it, every rank of the communicator receives it.
  [[nodiscard]] static NcclUniqueId unique_id();
  /// Rank `rank` of `size` on CUDA device `device` (ncclCommInitRank; collective over the ranks).
  NcclComm(const NcclUniqueId& id, int rank, int size, int device);
  /// Every MPI rank of MPI_COMM_WORLD, bootstrapped through MPI (above). Collective.
  [[nodiscard]] static NcclComm from_mpi();
  ~NcclComm();
  NcclComm(NcclComm&&) noexcept;
  NcclComm& operator=(NcclComm&&) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  [[nodiscard]] int rank() const;
  [[nodiscard]] int size() const;
  [[nodiscard]] int device() const;

  void all_reduce(const void* send, void* recv, std::size_t count, ir::DType dtype,
                  NcclReduction op, CudaStream stream) const;
  /// The reduction lands in `recv` on `root` only.
  void reduce(const void* send, void* recv, std::size_t count, ir::DType dtype, NcclReduction op,
              int root, CudaStream stream) const;
  /// `send` is read on `root` only; every rank's `recv` receives it (in place: send == recv).
  void broadcast(const void* send, void* recv, std::size_t count, ir::DType dtype, int root,
                 CudaStream stream) const;
  /// `send` holds size() × recv_count elements; rank r receives the reduction of slice r.
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, ir::DType dtype,
                      NcclReduction op, CudaStream stream) const;
  /// `recv` holds size() × send_count elements: rank r's `send` at r × send_count.
  void all_gather(const void* send, void* recv, std::size_t send_count, ir::DType dtype,
                  CudaStream stream) const;
  /// Slices of any sizes: rank r receives the reduction of send[displacements[r], + counts[r]).
  void reduce_scatter_v(const void* send, void* recv, std::span<const std::size_t> counts,
                        std::span<const std::size_t> displacements, ir::DType dtype,
                        NcclReduction op, CudaStream stream) const;
  /// Boxes of any sizes: rank r's `send` (counts[r] elements) lands at recv + displacements[r]
  /// on every rank.
  void all_gather_v(const void* send, void* recv, std::span<const std::size_t> counts,
                    std::span<const std::size_t> displacements, ir::DType dtype,
                    CudaStream stream) const;
  /// Sends and receives as one group (ncclGroupStart … ncclGroupEnd); between two ranks, matched
  /// in the order listed (see the file comment).
  void exchange(std::span<const NcclTransfer> transfers, CudaStream stream) const;
  /// The ranks that pass the same `color` form a new communicator, ordered by `key` (collective
  /// over this one; color < 0: this rank joins none and gets an empty NcclComm back).
  [[nodiscard]] NcclComm split(int color, int key) const;
  /// False for an empty NcclComm (moved from, or split with color < 0); rank(), size(),
  /// device() and the operations need a valid one.
  [[nodiscard]] bool valid() const;

  struct State;  // the communicator and where it runs (nccl_comm.cpp)

 private:
  explicit NcclComm(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tapestry::gpu
