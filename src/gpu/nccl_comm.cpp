// NcclComm (nccl_comm.h): NCCL calls behind the project's types; the MPI bootstrap when the
// build has MPI (TAPESTRY_NCCL_MPI).
#include "nccl_comm.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstring>
#include <string>

#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"

#ifdef TAPESTRY_NCCL_MPI
#include <mpi.h>
#endif

static_assert(sizeof(ncclUniqueId) == sizeof(tapestry::gpu::NcclUniqueId::bytes));

namespace tapestry::gpu {

struct NcclComm::State {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int size = 0;
  int device = 0;
};

namespace {

ncclDataType_t nccl_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32:
      return ncclFloat32;
    case ir::DType::kFloat64:
      return ncclFloat64;
    case ir::DType::kFloat16:
      return ncclFloat16;
    case ir::DType::kBFloat16:
      return ncclBfloat16;
    case ir::DType::kInt32:
      return ncclInt32;
    case ir::DType::kInt64:
      return ncclInt64;
    case ir::DType::kInt8:
      return ncclInt8;
    case ir::DType::kUInt8:
    case ir::DType::kBool:
      return ncclUint8;
    case ir::DType::kInt16:
      break;
  }
  throw Error(fmt::format("NCCL has no {} type", ir::dtype_name(dtype)));
}

ncclRedOp_t nccl_op(NcclReduction op) {
  switch (op) {
    case NcclReduction::kSum:
      return ncclSum;
    case NcclReduction::kProd:
      return ncclProd;
    case NcclReduction::kMax:
      return ncclMax;
    case NcclReduction::kMin:
      return ncclMin;
  }
  TAPESTRY_ASSERT(false, "unknown NcclReduction");
  return ncclSum;
}

void check(ncclResult_t result, const char* call, const NcclComm::State* state = nullptr) {
  if (result == ncclSuccess) return;
  std::string detail = state != nullptr && state->comm != nullptr ? ncclGetLastError(state->comm)
                                                                  : ncclGetLastError(nullptr);
  throw Error(fmt::format(
      "NCCL {}: {}{}{}", call, ncclGetErrorString(result), detail.empty() ? "" : ": " + detail,
      state != nullptr
          ? fmt::format(" (rank {} of {}, device {})", state->rank, state->size, state->device)
          : ""));
}

void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw Error(fmt::format("NCCL set-up: {}: {}", call, cudaGetErrorString(e)));
}

int usable_devices() {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    throw Error(fmt::format("NCCL: no CUDA device: cudaGetDeviceCount: {}",
                            e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"));
  }
  return count;
}

// The device is current for the calls of one operation (a process may drive several).
class OnDevice {
 public:
  explicit OnDevice(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~OnDevice() { cudaSetDevice(previous_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int previous_ = 0;
};

// Ends an NCCL group on every path (an Error inside the group must still close it).
class Group {
 public:
  explicit Group(const NcclComm::State& state) : state_(state) {
    check(ncclGroupStart(), "ncclGroupStart", &state_);
  }
  void end() {
    open_ = false;
    check(ncclGroupEnd(), "ncclGroupEnd", &state_);
  }
  ~Group() {
    if (open_) ncclGroupEnd();
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

 private:
  const NcclComm::State& state_;
  bool open_ = true;
};

const char* at(const void* base, std::size_t elements, ir::DType dtype) {
  return static_cast<const char*>(base) + elements * ir::dtype_size_bytes(dtype);
}

}  // namespace

NcclUniqueId NcclComm::unique_id() {
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  NcclUniqueId out;
  std::memcpy(out.bytes.data(), &id, sizeof id);
  return out;
}

NcclComm::NcclComm(const NcclUniqueId& id, int rank, int size, int device) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(fmt::format("NCCL: rank {} of {}: expected 0 ≤ rank < size", rank, size));
  }
  const int devices = usable_devices();
  if (device < 0 || device >= devices) {
    throw Error(fmt::format("NCCL: rank {}: no CUDA device {} (this process sees {})", rank, device,
                            devices));
  }
  auto state = std::make_unique<State>();
  state->rank = rank;
  state->size = size;
  state->device = device;
  ncclUniqueId nccl_id;
  std::memcpy(&nccl_id, id.bytes.data(), sizeof nccl_id);
  const OnDevice on(device);
  check(ncclCommInitRank(&state->comm, size, nccl_id, rank), "ncclCommInitRank", state.get());
  state_ = std::move(state);
}

NcclComm::NcclComm(std::unique_ptr<State> state) : state_(std::move(state)) {}

NcclComm::~NcclComm() {
  if (state_ != nullptr && state_->comm != nullptr) {
    const OnDevice on(state_->device);
    ncclCommDestroy(state_->comm);
  }
}
NcclComm::NcclComm(NcclComm&&) noexcept = default;
NcclComm& NcclComm::operator=(NcclComm&&) noexcept = default;

bool NcclComm::valid() const {
  return state_ != nullptr && state_->comm != nullptr;
}
int NcclComm::rank() const {
  return state_->rank;
}
int NcclComm::size() const {
  return state_->size;
}
int NcclComm::device() const {
  return state_->device;
}

NcclComm NcclComm::from_mpi() {
#ifdef TAPESTRY_NCCL_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) {
    throw Error("NCCL bootstrap: MPI is not initialised (start an MpiSession first)");
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local = 0, local_size = 1;
  MPI_Comm_rank(node, &local);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  const int devices = usable_devices();
  if (local_size > devices) {
    // NCCL refuses two ranks on one GPU ("Duplicate GPU detected").
    throw Error(
        fmt::format("NCCL bootstrap: this node runs {} ranks on {} GPU{}: NCCL needs one "
                    "GPU per rank",
                    local_size, devices, devices == 1 ? "" : "s"));
  }
  NcclUniqueId id;
  if (rank == 0) id = unique_id();
  if (MPI_Bcast(id.bytes.data(), static_cast<int>(id.bytes.size()), MPI_BYTE, 0, MPI_COMM_WORLD) !=
      MPI_SUCCESS) {
    throw Error("NCCL bootstrap: MPI_Bcast of the unique id failed");
  }
  return NcclComm(id, rank, size, local % devices);
#else
  throw Error("NCCL bootstrap: this build has no MPI (cmake/Dependencies.cmake)");
#endif
}

void NcclComm::all_reduce(const void* send, void* recv, std::size_t count, ir::DType dtype,
                          NcclReduction op, CudaStream stream) const {
  const OnDevice on(state_->device);
  check(ncclAllReduce(send, recv, count, nccl_type(dtype), nccl_op(op), state_->comm, stream),
        "ncclAllReduce", state_.get());
}

void NcclComm::reduce(const void* send, void* recv, std::size_t count, ir::DType dtype,
                      NcclReduction op, int root, CudaStream stream) const {
  const OnDevice on(state_->device);
  check(ncclReduce(send, recv, count, nccl_type(dtype), nccl_op(op), root, state_->comm, stream),
        "ncclReduce", state_.get());
}

void NcclComm::broadcast(const void* send, void* recv, std::size_t count, ir::DType dtype, int root,
                         CudaStream stream) const {
  const OnDevice on(state_->device);
  check(ncclBroadcast(send, recv, count, nccl_type(dtype), root, state_->comm, stream),
        "ncclBroadcast", state_.get());
}

void NcclComm::reduce_scatter(const void* send, void* recv, std::size_t recv_count, ir::DType dtype,
                              NcclReduction op, CudaStream stream) const {
  const OnDevice on(state_->device);
  check(ncclReduceScatter(send, recv, recv_count, nccl_type(dtype), nccl_op(op), state_->comm,
                          stream),
        "ncclReduceScatter", state_.get());
}

void NcclComm::all_gather(const void* send, void* recv, std::size_t send_count, ir::DType dtype,
                          CudaStream stream) const {
  const OnDevice on(state_->device);
  check(ncclAllGather(send, recv, send_count, nccl_type(dtype), state_->comm, stream),
        "ncclAllGather", state_.get());
}

void NcclComm::reduce_scatter_v(const void* send, void* recv, std::span<const std::size_t> counts,
                                std::span<const std::size_t> displacements, ir::DType dtype,
                                NcclReduction op, CudaStream stream) const {
  TAPESTRY_ASSERT(
      counts.size() == std::size_t(state_->size) && displacements.size() == counts.size(),
      "reduce_scatter_v: one count and one displacement per rank");
  const OnDevice on(state_->device);
  const ncclDataType_t type = nccl_type(dtype);
  Group group(*state_);
  for (int r = 0; r < state_->size; ++r) {
    // recv is written on the root (r) only.
    check(ncclReduce(at(send, displacements[r], dtype), recv, counts[r], type, nccl_op(op), r,
                     state_->comm, stream),
          "ncclReduce", state_.get());
  }
  group.end();
}

void NcclComm::all_gather_v(const void* send, void* recv, std::span<const std::size_t> counts,
                            std::span<const std::size_t> displacements, ir::DType dtype,
                            CudaStream stream) const {
  TAPESTRY_ASSERT(
      counts.size() == std::size_t(state_->size) && displacements.size() == counts.size(),
      "all_gather_v: one count and one displacement per rank");
  const OnDevice on(state_->device);
  const ncclDataType_t type = nccl_type(dtype);
  Group group(*state_);
  for (int r = 0; r < state_->size; ++r) {
    // send is read on the root (r) only.
    void* slot = const_cast<char*>(at(recv, displacements[r], dtype));
    check(ncclBroadcast(send, slot, counts[r], type, r, state_->comm, stream), "ncclBroadcast",
          state_.get());
  }
  group.end();
}

void NcclComm::exchange(std::span<const NcclTransfer> transfers, CudaStream stream) const {
  const OnDevice on(state_->device);
  Group group(*state_);
  for (const NcclTransfer& t : transfers) {
    if (t.peer < 0 || t.peer >= state_->size) {
      throw Error(
          fmt::format("NCCL exchange: peer {} of a communicator of {}", t.peer, state_->size));
    }
    if (t.kind == NcclTransfer::kSend) {
      check(ncclSend(t.data, t.count, nccl_type(t.dtype), t.peer, state_->comm, stream), "ncclSend",
            state_.get());
    } else {
      check(ncclRecv(t.data, t.count, nccl_type(t.dtype), t.peer, state_->comm, stream), "ncclRecv",
            state_.get());
    }
  }
  group.end();
}

NcclComm NcclComm::split(int color, int key) const {
  const OnDevice on(state_->device);
  auto state = std::make_unique<State>();
  state->device = state_->device;
  check(ncclCommSplit(state_->comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &state->comm,
                      nullptr),
        "ncclCommSplit", state_.get());
  if (state->comm == nullptr) return NcclComm(std::unique_ptr<State>());
  check(ncclCommUserRank(state->comm, &state->rank), "ncclCommUserRank", state_.get());
  check(ncclCommCount(state->comm, &state->size), "ncclCommCount", state_.get());
  return NcclComm(std::move(state));
}

}  // namespace tapestry::gpu
