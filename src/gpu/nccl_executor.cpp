// The NCCL executor (nccl_executor.h): a rank's device program (rank_device_program.h) issued by
// CudaProgram (cuda_program.h), its communication steps as NCCL calls (nccl_comm.h).
#include "tapestry/gpu/nccl_executor.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "cuda_program.h"
#include "nccl_comm.h"
#include "rank_device_program.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/format.h"

namespace tapestry::gpu {

namespace {

void check(cudaError_t status, std::string_view what) {
  if (status != cudaSuccess) {
    throw Error(fmt::format("CUDA: {}: {} ({})", what, cudaGetErrorString(status),
                            cudaGetErrorName(status)));
  }
}

}  // namespace

struct NcclExecutor::State {
  std::shared_ptr<const NcclComm> comm;
  const ir::Graph& graph;
  std::string rank_name;
  runtime::detail::BlockProgram whole;
  RankDeviceProgram plan;
  std::vector<NcclComm> groups;          // one per member set other than every rank (or empty)
  std::vector<const NcclComm*> comm_of;  // per collective: its members' communicator
  std::unique_ptr<CudaProgram> gpu;

  std::byte* at(const CommBuffer& b) const {
    if (b.slot == CommBuffer::kNoSlot) return nullptr;
    std::byte* base = gpu->device_base(b.slot);
    return base == nullptr ? nullptr : base + b.byte_offset;
  }

  // Box ↔ staging slot copies of a call (device to device, on the call's stream).
  void copy(const StagedBox& s, bool pack, CudaStream stream) const {
    std::byte* slot = gpu->device_base(s.slot);
    std::byte* staging = gpu->device_base(s.staging);
    for (const BoxRun& run : s.runs) {
      std::byte* box = slot + run.slot_offset;
      std::byte* dense = staging + run.staging_offset;
      const auto width = static_cast<std::size_t>(run.width);
      const auto pitch = static_cast<std::size_t>(run.pitch);
      const auto height = static_cast<std::size_t>(run.height);
      check(pack ? cudaMemcpy2DAsync(dense, width, box, pitch, width, height,
                                     cudaMemcpyDeviceToDevice, stream)
                 : cudaMemcpy2DAsync(box, pitch, dense, width, width, height,
                                     cudaMemcpyDeviceToDevice, stream),
            pack ? "pack a box to send" : "unpack a received box");
    }
  }

  // Communication task `task`: its NCCL call on `stream`, with its copies around it.
  void communicate(std::uint32_t task, CudaStream stream) const {
    const CommStep& c = plan.comm[task - gpu->program().communication_from];
    for (const StagedBox& s : c.pack) copy(s, true, stream);
    const auto count = static_cast<std::size_t>(c.count);
    switch (c.kind) {
      case CommKind::kSend:
      case CommKind::kRecv: {
        const NcclTransfer t{
            .kind = c.kind == CommKind::kSend ? NcclTransfer::kSend : NcclTransfer::kRecv,
            .peer = c.peer,
            .data = c.kind == CommKind::kSend ? at(c.send) : at(c.recv),
            .count = count,
            .dtype = c.dtype};
        comm->exchange({&t, 1}, stream);
        break;
      }
      case CommKind::kReduce:
        comm_of[c.collective]->reduce(at(c.send), at(c.recv), count, c.dtype, NcclReduction::kSum,
                                      static_cast<int>(c.root), stream);
        break;
      case CommKind::kAllreduce:
        comm_of[c.collective]->all_reduce(at(c.send), at(c.recv), count, c.dtype,
                                          NcclReduction::kSum, stream);
        break;
      case CommKind::kReduceScatter: {
        bool equal = true;
        for (std::size_t i = 0; i < c.counts.size(); ++i) {
          equal = equal && c.counts[i] == c.counts[0] && c.displacements[i] == i * c.counts[0];
        }
        if (equal) {
          comm_of[c.collective]->reduce_scatter(at(c.send), at(c.recv), c.counts[0], c.dtype,
                                                NcclReduction::kSum, stream);
        } else {
          comm_of[c.collective]->reduce_scatter_v(at(c.send), at(c.recv), c.counts, c.displacements,
                                                  c.dtype, NcclReduction::kSum, stream);
        }
        break;
      }
      case CommKind::kAllgather:
        comm_of[c.collective]->all_gather_v(at(c.send), at(c.recv), c.counts, c.displacements,
                                            c.dtype, stream);
        break;
    }
    for (const StagedBox& s : c.unpack) copy(s, false, stream);
  }
};

NcclExecutor::NcclExecutor(std::shared_ptr<const NcclComm> comm, const ir::Graph& graph,
                           const runtime::RankSchedule& schedule, NcclExecutorOptions options)
    : state_(std::make_unique<State>(State{std::move(comm), graph, {}, {}, {}, {}, {}, nullptr})) {
  State& s = *state_;
  if (!s.comm || !s.comm->valid()) throw Error("the NCCL executor needs a communicator");
  const auto rank = static_cast<std::uint32_t>(s.comm->rank());
  if (schedule.ranks() != static_cast<std::uint32_t>(s.comm->size())) {
    throw Error(fmt::format("the schedule spreads the graph over {} ranks ({}), but the job has {}",
                            schedule.ranks(), fmt::join(schedule.rank_names, ", "),
                            s.comm->size()));
  }
  s.rank_name = schedule.rank_names[rank];
  const runtime::ExecutableKernels& host =
      options.host_kernels != nullptr ? *options.host_kernels : runtime::fast_kernels();
  s.whole = runtime::detail::compile_block_program(graph, host);
  s.plan = plan_rank_device_program(graph, s.whole, schedule, rank, cuda_kernels(),
                                    {.streams = options.streams}, options.collectives);
  // A communicator per set of members: the whole one for every rank, else one ncclCommSplit per
  // set, made by every rank in the same order (it is collective over the whole communicator; a
  // rank outside the set gets an empty one).
  std::vector<std::vector<std::uint32_t>> sets;
  s.groups.reserve(s.plan.rank.collectives.size());  // comm_of points into it
  for (const runtime::detail::RankCollective& c : s.plan.rank.collectives) {
    if (c.members.size() == schedule.ranks()) {
      s.comm_of.push_back(s.comm.get());
      continue;
    }
    auto known = std::find(sets.begin(), sets.end(), c.members);
    if (known == sets.end()) {
      const bool member = std::find(c.members.begin(), c.members.end(), rank) != c.members.end();
      s.groups.push_back(s.comm->split(member ? 0 : -1, static_cast<int>(rank)));
      sets.push_back(c.members);
      known = sets.end() - 1;
    }
    s.comm_of.push_back(&s.groups[static_cast<std::size_t>(known - sets.begin())]);
  }
  const State* self = &s;
  s.gpu = std::make_unique<CudaProgram>(
      graph, s.plan.device,
      CudaExecutorOptions{.device = s.comm->device(),
                          .streams = options.streams,
                          .graph = options.graph,
                          .allow_tf32 = options.allow_tf32,
                          .host_kernels = &host,
                          .memory_limit_bytes = options.memory_limit_bytes,
                          .poison = options.poison},
      [self](std::uint32_t task, CudaStream stream) { self->communicate(task, stream); });
}

NcclExecutor::~NcclExecutor() = default;

std::vector<runtime::NeededInput> NcclExecutor::inputs_needed() const {
  std::vector<runtime::NeededInput> out;
  const runtime::detail::RankProgram& rp = state_->plan.rank;
  for (std::size_t s = 0; s < rp.needed_inputs.size(); ++s) {
    if (rp.needed_inputs[s] != 0)
      out.push_back({rp.local.slots[s].tensor, rp.local.slots[s].range});
  }
  return out;
}

std::size_t NcclExecutor::application_count() const {
  return state_->plan.device.communication_from;
}

int NcclExecutor::device() const {
  return state_->comm->device();
}

std::size_t NcclExecutor::calls() const {
  return state_->plan.comm.size();
}

NcclExecutor::Result NcclExecutor::run(runtime::BufferMap inputs) const {
  const State& s = *state_;
  const DeviceProgram& p = s.gpu->program();
  // Exactly the boxes this rank reads: a buffer over each input slot's rows.
  runtime::BufferMap bound;
  for (const runtime::detail::BufferSlot& slot : p.block.slots) {
    if (!slot.input || slot.bytes == 0) continue;
    auto given = inputs.find(slot.tensor);
    if (given == inputs.end()) {
      throw Error(fmt::format("input tensor '{}' has no buffer for rows {}",
                              runtime::tensor_name(s.graph, slot.tensor), slot.range));
    }
    if (given->second.range() != slot.range || given->second.dtype() != slot.dtype) {
      throw Error(fmt::format("input tensor '{}': expected {} {}, got {} {}",
                              runtime::tensor_name(s.graph, slot.tensor),
                              ir::dtype_name(slot.dtype), slot.range,
                              ir::dtype_name(given->second.dtype()), given->second.range()));
    }
    bound.emplace(slot.tensor, std::move(given->second));
  }
  CudaProgram::Run run = s.gpu->run(std::move(bound));
  Result result;  // the output slots (rank 0's: whole), an input among them too
  for (const runtime::detail::BufferSlot& slot : p.block.slots) {
    auto found = run.buffers.find(slot.tensor);
    if (slot.output && found != run.buffers.end()) {
      result.outputs.emplace(slot.tensor, std::move(found->second));
    }
  }
  result.stats = std::move(run.stats);
  const runtime::detail::RankProgram& rp = s.plan.rank;
  runtime::RankMetrics& m = result.metrics;
  m.rank = rp.rank;
  m.name = s.rank_name;
  m.run.wall_s = result.stats.compute_s;
  m.run.flops = p.block.flops;
  m.run.gflops = m.run.wall_s > 0 ? static_cast<double>(p.block.flops) / m.run.wall_s / 1e9 : 0;
  m.run.peak_memory_bytes = p.arena_bytes;
  m.run.estimated_peak_memory_bytes = p.arena_bytes;
  m.run.threads = p.streams;
  m.bytes_sent = rp.bytes_sent;
  m.bytes_received = rp.bytes_received;
  for (const CommStep& c : s.plan.comm) {
    m.messages_sent += c.kind == CommKind::kSend ? 1 : 0;
    m.messages_received += c.kind == CommKind::kRecv ? 1 : 0;
  }
  for (const runtime::detail::RankCollective& c : rp.collectives) {
    m.collectives.push_back({.kind = std::string(runtime::detail::collective_kind_name(c.kind)),
                             .what = c.what,
                             .ranks = c.members,
                             .bytes = c.bytes,
                             .bitwise = c.bitwise});
  }
  return result;
}

std::shared_ptr<const NcclComm> nccl_comm_from_mpi() {
  return std::make_shared<const NcclComm>(NcclComm::from_mpi());
}

}  // namespace tapestry::gpu
